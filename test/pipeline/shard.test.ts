import fc from "fast-check";
import { fnv1a32, inShard, shardOf } from "../../src/pipeline/shard.js";

describe("fnv1a32", () => {
  it.each([
    // Published FNV-1a 32-bit test vectors, plus UTF-8 multi-byte input.
    ["", 0x811c9dc5],
    ["a", 0xe40c292c],
    ["foobar", 0xbf9cf968],
    ["Zähler-7", 0x1ea03781],
  ])("hashes %j to %i", (text, hash) => {
    expect(fnv1a32(text)).toBe(hash);
  });
});

describe("shardOf", () => {
  it.each([
    ["a", 4, 0],
    ["", 4, 1],
    ["dev-1", 4, 2],
    ["dev-1", 7, 3],
    ["device-42", 7, 4],
    ["Zähler-7", 4, 1],
    ["Zähler-7", 7, 6],
  ])("pins %j mod %i to %i", (id, count, shard) => {
    expect(shardOf(id, count)).toBe(shard);
  });

  it("property: always an integer in range, and stable", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), fc.integer({ min: 1, max: 1000 }), (id, n) => {
        const shard = shardOf(id, n);
        expect(Number.isInteger(shard)).toBe(true);
        expect(shard).toBeGreaterThanOrEqual(0);
        expect(shard).toBeLessThan(n);
        expect(shardOf(id, n)).toBe(shard);
      }),
    );
  });

  it("count 1 -> always 0", () => {
    fc.assert(fc.property(fc.string(), (id) => expect(shardOf(id, 1)).toBe(0)));
  });

  it("spreads 1000 ids roughly evenly over 4 shards", () => {
    for (const prefix of ["device-", "dev", "meter/"]) {
      const counts = [0, 0, 0, 0];
      for (let i = 0; i < 1000; i++) {
        const s = shardOf(`${prefix}${i}`, 4);
        counts[s] = (counts[s] ?? 0) + 1;
      }
      for (const c of counts) {
        expect(c).toBeGreaterThanOrEqual(150);
        expect(c).toBeLessThanOrEqual(350);
      }
    }
  });

  it.each([0, -1, 1.5, Number.NaN])("rejects shard count %p", (n) => {
    expect(() => shardOf("a", n)).toThrow(RangeError);
  });
});

describe("inShard", () => {
  it("puts every device in exactly one shard", () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 1, max: 64 }), (id, n) => {
        const owners = Array.from({ length: n }, (_, i) => i).filter((i) => inShard(id, n, i));
        expect(owners).toEqual([shardOf(id, n)]);
      }),
    );
  });

  it.each([-1, 4, 0.5])("rejects shard index %p of 4", (index) => {
    expect(() => inShard("a", 4, index)).toThrow(RangeError);
  });
});
