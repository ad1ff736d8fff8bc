import { InvalidConfigError } from "../core/index.ts";

/*
 * The file format of trained parameters (policy checkpoints, learned experience models): a magic
 * line, a JSON header line with the arrays' `lengths`, spaces to a 4-byte boundary, then the float32
 * arrays one after another, so a reader maps them without parsing.
 */

/** Packs `arrays` after the magic line and the header (which gains their `lengths`). */
export function packParams(magic: string, header: Record<string, unknown>, arrays: readonly Float32Array[]): Uint8Array {
  const head = Buffer.from(magic + JSON.stringify({ ...header, lengths: arrays.map((a) => a.length) }) + "\n");
  const pad = (4 - (head.length % 4)) % 4;
  const out = new Uint8Array(head.length + pad + arrays.reduce((s, a) => s + a.byteLength, 0));
  out.set(head, 0);
  out.fill(0x20, head.length, head.length + pad);
  let offset = head.length + pad;
  for (const a of arrays) {
    out.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), offset);
    offset += a.byteLength;
  }
  return out;
}

/**
 * Reads a file written by `packParams`: its header (for the caller to check) and its arrays (copies).
 * A file of another kind, a bad header or a wrong size is an `InvalidConfigError` naming `source`;
 * `notMine` says what the file should have been.
 */
export function unpackParams<H>(
  bytes: Uint8Array,
  magic: string,
  source: string,
  notMine: string,
): { header: H & { lengths: number[] }; arrays: Float32Array[] } {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 65536)).toString("utf8");
  const end = text.indexOf("\n", magic.length);
  if (!text.startsWith(magic) || end < 0) throw new InvalidConfigError(`${source} is not ${notMine}`);
  let header: H & { lengths: number[] };
  try {
    header = JSON.parse(text.slice(magic.length, end));
  } catch {
    throw new InvalidConfigError(`${source}: the header is not valid JSON`);
  }
  if (!Array.isArray(header?.lengths) || !header.lengths.every((n) => Number.isSafeInteger(n) && n >= 0)) {
    throw new InvalidConfigError(`${source}: the header lists no parameter lengths`);
  }
  let offset = Buffer.byteLength(text.slice(0, end + 1), "utf8");
  offset += (4 - (offset % 4)) % 4;
  const expected = offset + header.lengths.reduce((s, n) => s + n * 4, 0);
  if (bytes.length !== expected) throw new InvalidConfigError(`${source} is truncated or padded: ${bytes.length} bytes, expected ${expected}`);
  const copy = new Uint8Array(bytes.length - offset);
  copy.set(bytes.subarray(offset));
  const arrays: Float32Array[] = [];
  let at = 0;
  for (const n of header.lengths) {
    arrays.push(new Float32Array(copy.buffer, at, n));
    at += n * 4;
  }
  // NaN or ∞ in a parameter (a damaged file, or training that diverged) would train on to nonsense.
  for (const a of arrays)
    for (let i = 0; i < a.length; i++)
      if (!Number.isFinite(a[i]))
        throw new InvalidConfigError(`${source} holds parameters that are not finite numbers (NaN or ∞): it is damaged, or its training diverged`);
  return { header, arrays };
}
