import { test } from "node:test";
import assert from "node:assert/strict";
import { InvalidConfigError } from "../core/index.ts";
import { isLocalExperience, parseExperienceSpec } from "./index.ts";

test("an experience spec parses once into its kind: embedded, learned (its file), chat (its model spec)", () => {
  assert.deepEqual(parseExperienceSpec("default"), { kind: "embedded" });
  assert.deepEqual(parseExperienceSpec("learned:m.bin"), { kind: "learned", file: "m.bin" });
  // An empty file name is loadLearnedModel's to refuse, as a missing file is.
  assert.deepEqual(parseExperienceSpec("learned:"), { kind: "learned", file: "" });
  assert.deepEqual(parseExperienceSpec("http://127.0.0.1:8000/v1#qwen"), {
    kind: "chat",
    spec: { kind: "http", baseURL: "http://127.0.0.1:8000/v1", model: "qwen" },
  });
  assert.deepEqual(parseExperienceSpec("openai:gpt-4o-mini"), { kind: "chat", spec: { kind: "openai", model: "gpt-4o-mini" } });
  assert.throws(
    () => parseExperienceSpec("http://127.0.0.1:8000/v1"),
    (e) => e instanceof InvalidConfigError && /add #<model>/.test(e.message),
  );
  assert.throws(() => parseExperienceSpec("defualt"), /unknown model "defualt"/);
  for (const s of ["default", "learned:m.bin"]) assert.equal(isLocalExperience(parseExperienceSpec(s)), isLocalExperience(s));
  assert.equal(isLocalExperience(parseExperienceSpec("openai:m")), false);
});
