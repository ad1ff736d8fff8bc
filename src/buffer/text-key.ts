import { hash } from "node:crypto";

// Apart from buffer-db.ts, so that the import thread computes keys without loading SQLite.

/** A 63-bit key for a text, from SHA-1 (a collision is detected and probed past by the caller). */
export function textKey(text: string): bigint {
  return hash("sha1", text, "buffer").readBigInt64LE(0) & 0x7fffffffffffffffn;
}
