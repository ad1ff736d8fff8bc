import { writeFileSync } from "node:fs";
import { Rng } from "../core/index.ts";

/**
 * Writes a tiny llama-architecture model in the real GGUF v3 format, with random weights and a
 * byte-fallback SentencePiece vocabulary (259 tokens: <unk>, <s>, </s> and one token per byte), so
 * any text tokenizes. It is meaningless as a model; it lets the llama.cpp engine run for real in
 * tests and smoke checks without downloading weights.
 */
export function writeTinyGguf(path: string, opts: { seed?: number; embedding?: number; layers?: number } = {}): void {
  const nEmbd = opts.embedding ?? 64;
  const nLayer = opts.layers ?? 1;
  const nHead = 2;
  const nFf = nEmbd * 2;
  const parts: Buffer[] = [];
  const u32 = (v: number) => parts.push(Buffer.from(new Uint32Array([v]).buffer));
  const i32 = (v: number) => parts.push(Buffer.from(new Int32Array([v]).buffer));
  const f32 = (v: number) => parts.push(Buffer.from(new Float32Array([v]).buffer));
  const u64 = (v: number) => parts.push(Buffer.from(new BigUint64Array([BigInt(v)]).buffer));
  const str = (s: string) => {
    const b = Buffer.from(s, "utf8");
    u64(b.length);
    parts.push(b);
  };
  const TYPE = { u32: 4, i32: 5, f32: 6, str: 8, arr: 9 } as const;
  const tokens = ["<unk>", "<s>", "</s>", ...Array.from({ length: 256 }, (_, i) => `<0x${i.toString(16).toUpperCase().padStart(2, "0")}>`)];
  const tokenTypes = tokens.map((_, i) => (i === 0 ? 2 : i < 3 ? 3 : 6)); // unknown, control, byte
  type Value = ["u32", number] | ["f32", number] | ["str", string] | ["arr-str", string[]] | ["arr-f32", number[]] | ["arr-i32", number[]];
  const meta: [string, Value][] = [
    ["general.architecture", ["str", "llama"]],
    ["general.name", ["str", "dreamgym-tiny-random"]],
    ["llama.context_length", ["u32", 1024]],
    ["llama.embedding_length", ["u32", nEmbd]],
    ["llama.block_count", ["u32", nLayer]],
    ["llama.feed_forward_length", ["u32", nFf]],
    ["llama.attention.head_count", ["u32", nHead]],
    ["llama.attention.head_count_kv", ["u32", nHead]],
    ["llama.attention.layer_norm_rms_epsilon", ["f32", 1e-5]],
    ["llama.rope.dimension_count", ["u32", nEmbd / nHead]],
    ["tokenizer.ggml.model", ["str", "llama"]],
    ["tokenizer.ggml.tokens", ["arr-str", tokens]],
    ["tokenizer.ggml.scores", ["arr-f32", tokens.map(() => 0)]],
    ["tokenizer.ggml.token_type", ["arr-i32", tokenTypes]],
    ["tokenizer.ggml.bos_token_id", ["u32", 1]],
    ["tokenizer.ggml.eos_token_id", ["u32", 2]],
    ["tokenizer.ggml.unknown_token_id", ["u32", 0]],
  ];
  const tensors: [string, number[]][] = [
    ["token_embd.weight", [nEmbd, tokens.length]],
    ["output_norm.weight", [nEmbd]],
    ["output.weight", [nEmbd, tokens.length]],
  ];
  for (let l = 0; l < nLayer; l++) {
    tensors.push(
      [`blk.${l}.attn_norm.weight`, [nEmbd]],
      [`blk.${l}.attn_q.weight`, [nEmbd, nEmbd]],
      [`blk.${l}.attn_k.weight`, [nEmbd, nEmbd]],
      [`blk.${l}.attn_v.weight`, [nEmbd, nEmbd]],
      [`blk.${l}.attn_output.weight`, [nEmbd, nEmbd]],
      [`blk.${l}.ffn_norm.weight`, [nEmbd]],
      [`blk.${l}.ffn_gate.weight`, [nEmbd, nFf]],
      [`blk.${l}.ffn_up.weight`, [nEmbd, nFf]],
      [`blk.${l}.ffn_down.weight`, [nFf, nEmbd]],
    );
  }
  // Header: magic, version 3, tensor count, metadata count; then the metadata.
  parts.push(Buffer.from("GGUF", "ascii"));
  u32(3);
  u64(tensors.length);
  u64(meta.length);
  for (const [key, [kind, value]] of meta) {
    str(key);
    if (kind === "u32") u32(TYPE.u32), u32(value as number);
    else if (kind === "f32") u32(TYPE.f32), f32(value as number);
    else if (kind === "str") u32(TYPE.str), str(value as string);
    else {
      const items = value as (string | number)[];
      u32(TYPE.arr);
      u32(kind === "arr-str" ? TYPE.str : kind === "arr-f32" ? TYPE.f32 : TYPE.i32);
      u64(items.length);
      for (const x of items) kind === "arr-str" ? str(x as string) : kind === "arr-f32" ? f32(x as number) : i32(x as number);
    }
  }
  // Tensor infos (F32, offsets aligned to 32 bytes), then the data after padding.
  const align = 32;
  const rng = new Rng(opts.seed ?? 1);
  const data: Buffer[] = [];
  let offset = 0;
  for (const [name, dims] of tensors) {
    const n = dims.reduce((a, b) => a * b, 1);
    str(name);
    u32(dims.length);
    for (const d of dims) u64(d);
    u32(0); // F32
    u64(offset);
    const values = Float32Array.from({ length: n }, () => (name.endsWith("norm.weight") ? 1 : (rng.random() - 0.5) * 0.2));
    const padded = Math.ceil((n * 4) / align) * align;
    const buf = Buffer.alloc(padded);
    Buffer.from(values.buffer).copy(buf);
    data.push(buf);
    offset += padded;
  }
  const header = Buffer.concat(parts);
  const pad = Buffer.alloc(Math.ceil(header.length / align) * align - header.length);
  writeFileSync(path, Buffer.concat([header, pad, ...data]));
}
