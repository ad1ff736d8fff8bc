// Child process for the crash test: appends trajectories forever, printing each uid after its append returns.
import { ReplayBuffer } from "./replay-buffer.ts";
import { trajectoryContentId } from "./trajectory-schema.ts";
import { makeTrajectory } from "./test-helpers.ts";

const buffer = ReplayBuffer.open(process.argv[2]);
for (let i = buffer.countTrajectories(); ; i++) {
  const batch = [makeTrajectory(i * 2, { steps: 40 }), makeTrajectory(i * 2 + 1, { steps: 25 })];
  await buffer.appendTrajectories(batch);
  process.stdout.write(batch.map((t) => `${trajectoryContentId(t)} ${t.steps.length}\n`).join(""));
}
