/**
 * A whole answer held until it is read: whatever its size and however its pieces fall (across the
 * raw part's end, across block ends, one byte at a time), iterating yields its bytes in order, as
 * often as it is iterated; its first and last bytes that are not JSON white space are known.
 */
import { HeldBody } from "../../src/api/held-body.js";

/** Deterministic bytes that deflate like an answer does (repeated keys, varying numbers). */
function answerLike(bytes: number, seed: number): Buffer {
  const parts: string[] = [" \n["];
  let size = 3;
  for (let i = 0; size < bytes - 3; i++) {
    const record = `{"timestamp":"2026-11-20T00:${String(i % 60).padStart(2, "0")}:00","e_00_01_00_001_power":${((i * 7919 + seed) % 100_003) / 10},"e_00_00_04_002_energy":${i * 3 + seed}},`;
    parts.push(record);
    size += record.length;
  }
  parts.push("{}]\t\r\n");
  return Buffer.from(parts.join("")).subarray(0, bytes);
}

/** `whole` cut into pieces of the sizes `sizes` gives in turn. */
function cut(whole: Buffer, sizes: (i: number) => number): Buffer[] {
  const pieces: Buffer[] = [];
  for (let at = 0, i = 0; at < whole.length; i++) {
    const size = Math.max(1, sizes(i));
    pieces.push(Buffer.from(whole.subarray(at, at + size)));
    at += size;
  }
  return pieces;
}

const KIB = 1024;
const MIB = 1024 * KIB;
/** Held as it came; beyond it, deflated in blocks of this size (src/api/held-body.ts). */
const BLOCK = 120 * KIB;

describe("HeldBody", () => {
  it.each([
    ["a small answer in one piece", 2_000, () => 10_000],
    ["just over the raw part, pieces of 64 KiB", BLOCK + 1, () => 65_536],
    [
      "many blocks, pieces of uneven sizes",
      3 * MIB + 12_345,
      (i: number) => 1 + ((i * 40_503) % 300_000),
    ],
    [
      "a block's worth in pieces of 3 bytes",
      3 * BLOCK + 7,
      (i: number) => (i < 100_000 ? 3 : 99_999),
    ],
    ["pieces larger than a block", 2 * MIB, () => 2 * BLOCK + 17],
  ])("%s: reads back byte for byte, twice", (_name, bytes, sizes) => {
    const whole = answerLike(bytes, bytes % 97);
    const held = new HeldBody();
    for (const piece of cut(whole, sizes)) held.push(piece);
    expect(held.bytes).toBe(whole.length);
    for (let pass = 0; pass < 2; pass++) {
      const read = Buffer.concat([...held]);
      expect(read.length).toBe(whole.length);
      expect(read.equals(whole)).toBe(true);
    }
  });

  it("holds a large answer in much less than its size", () => {
    const whole = answerLike(20 * MIB, 3);
    const held = new HeldBody();
    for (const piece of cut(whole, () => 65_536)) held.push(piece);
    // what it keeps: the raw part, a block being gathered, the deflated blocks
    const members: unknown[] = Object.values(held);
    const kept = members.flatMap((m) => (Array.isArray(m) ? (m as unknown[]) : [m]));
    const keptBytes = kept.reduce<number>((sum, b) => sum + (Buffer.isBuffer(b) ? b.length : 0), 0);
    expect(keptBytes).toBeGreaterThan(2 * BLOCK);
    expect(keptBytes).toBeLessThan(whole.length / 5);
    expect(Buffer.concat([...held]).equals(whole)).toBe(true);
  });

  it("keeps no more memory than the bytes it holds, and says how many (heldBytes)", () => {
    const whole = answerLike(20 * MIB, 5);
    const held = new HeldBody();
    for (const piece of cut(whole, () => 65_536)) held.push(piece);
    const members: unknown[] = Object.values(held);
    const kept = members
      .flatMap((m) => (Array.isArray(m) ? (m as unknown[]) : [m]))
      .filter((b): b is Buffer => Buffer.isBuffer(b));
    const keptBytes = kept.reduce((sum, b) => sum + b.length, 0);
    expect(held.heldBytes).toBe(keptBytes);
    // the memory behind them: a deflated block that views a larger buffer keeps all of it
    // (zlib answers with a view of its 16 KiB output buffer); small copies share 8 KiB pools
    const memory = new Set(kept.map((b) => b.buffer));
    const memoryBytes = [...memory].reduce((sum, b) => sum + b.byteLength, 0);
    expect(memoryBytes).toBeLessThanOrEqual(keptBytes * 1.05 + 8 * KIB);
  });

  it.each([
    ["", -1, -1],
    [" \r\n\t ", -1, -1],
    ["[]", 0x5b, 0x5d],
    ["\n [1,2] \n", 0x5b, 0x5d],
    [' {"a":1', 0x7b, 0x31],
    ["<html>", 0x3c, 0x3e],
  ])("edges of %j", (text, first, last) => {
    for (const size of [1, 2, 100]) {
      const held = new HeldBody();
      for (const piece of cut(Buffer.from(text), () => size)) held.push(piece);
      expect([held.firstByte, held.lastByte]).toEqual([first, last]);
    }
  });

  it("edges of a body that ends in white space pieces past the raw part", () => {
    const held = new HeldBody();
    held.push(Buffer.from("  ["));
    held.push(Buffer.alloc(3 * BLOCK, 0x31));
    held.push(Buffer.from("]"));
    held.push(Buffer.alloc(2 * BLOCK, 0x20));
    expect([held.firstByte, held.lastByte]).toEqual([0x5b, 0x5d]);
    expect(Buffer.concat([...held]).length).toBe(5 * BLOCK + 4);
  });
});
