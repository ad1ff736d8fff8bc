// Types only: the core loads no package at run time (zod is the caller's, with its schema).
import type { z } from "zod";
import { InvalidConfigError } from "./errors.ts";

/**
 * Parses `input` with `schema`; on failure throws one InvalidConfigError that names every bad key
 * with what is allowed there (the allowed keys, values or range).
 */
export function parseConfig<S extends z.ZodType>(schema: S, input: unknown, what = "config"): z.infer<S> {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  const lines = r.error.issues.map((issue) => {
    const at = issue.path.length > 0 ? issue.path.join(".") : "(top level)";
    switch (issue.code) {
      case "unrecognized_keys": {
        const allowed = allowedKeys(schema, issue.path);
        return issue.keys.map((k) => `${[...issue.path, k].join(".")}: unknown key${allowed ? ` (allowed: ${allowed.join(", ")})` : ""}`).join("\n  ");
      }
      case "invalid_value":
        return `${at}: ${JSON.stringify(valueAt(input, issue.path))} is not allowed (allowed: ${issue.values.map((v) => JSON.stringify(v)).join(", ")})`;
      case "too_small":
      case "too_big":
        return `${at}: ${JSON.stringify(valueAt(input, issue.path))} is out of range (${issue.message.replace(/^Too (small|big): expected \w+ to (have |be )?/, "must be ")})`;
      default:
        return `${at}: ${issue.message}`;
    }
  });
  throw new InvalidConfigError(`invalid ${what}:\n  ${lines.join("\n  ")}`);
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v = input;
  for (const k of path) v = v && typeof v === "object" ? (v as Record<PropertyKey, unknown>)[k] : undefined;
  return v;
}

function allowedKeys(schema: z.ZodType, path: readonly PropertyKey[]): string[] | undefined {
  let s: z.ZodType | undefined = schema;
  for (const k of path) s = s ? objectShape(s)?.[k as string] : undefined;
  const shape = s ? objectShape(s) : undefined;
  return shape ? Object.keys(shape) : undefined;
}

function objectShape(s: z.ZodType): Record<string, z.ZodType> | undefined {
  let t: z.ZodType = s;
  // Unwrap defaults and optionals to the object inside.
  for (let i = 0; i < 5 && !isObject(t); i++) {
    const inner = t as unknown as { unwrap?: () => z.ZodType; def?: { innerType?: z.ZodType } };
    const next = inner.def?.innerType ?? inner.unwrap?.();
    if (!next) return undefined;
    t = next;
  }
  return isObject(t) ? (t as z.ZodObject).shape : undefined;
}

/** A zod object schema, told by its definition (`instanceof` would need zod itself here). */
function isObject(s: z.ZodType): boolean {
  return (s as unknown as { def?: { type?: string } }).def?.type === "object";
}
