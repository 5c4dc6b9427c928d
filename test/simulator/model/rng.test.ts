import {
  hash2,
  hash3,
  hashString,
  smoothNoise,
  unit2,
  wobble,
} from "../../../src/simulator/model/rng.js";

describe("rng", () => {
  it("hashes deterministically to unsigned 32-bit integers", () => {
    expect(hash2(1, 2)).toBe(hash2(1, 2));
    expect(hash2(1, 2)).not.toBe(hash2(2, 1));
    expect(hash3(1, 2, 3)).not.toBe(hash3(1, 2, 4));
    expect(hashString("site A+1")).toBe(hashString("site A+1"));
    expect(hashString("a")).not.toBe(hashString("b"));
    for (const h of [hash2(-5, 1.7e9), hash3(0, 0, 0), hashString("")]) {
      expect(Number.isInteger(h)).toBe(true);
      expect(h).toBeGreaterThanOrEqual(0);
      expect(h).toBeLessThan(2 ** 32);
    }
  });

  it("spreads unit numbers evenly over [0, 1)", () => {
    const xs = Array.from({ length: 20_000 }, (_, k) => unit2(42, k));
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
    expect(mean).toBeCloseTo(0.5, 1);
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...xs)).toBeLessThan(1);
    const buckets = new Array<number>(10).fill(0);
    for (const x of xs) buckets[Math.floor(x * 10)] = (buckets[Math.floor(x * 10)] ?? 0) + 1;
    for (const b of buckets) expect(Math.abs(b - 2000)).toBeLessThan(200);
  });

  it("makes smooth noise: bounded, and close between neighbouring seconds", () => {
    for (let t = 1.7e9; t < 1.7e9 + 7200; t += 7) {
      const a = smoothNoise(7, t, 600);
      expect(a).toBeGreaterThanOrEqual(0);
      expect(a).toBeLessThanOrEqual(1);
      expect(Math.abs(smoothNoise(7, t + 1, 600) - a)).toBeLessThan(0.01);
      expect(Math.abs(wobble(7, t, 600))).toBeLessThanOrEqual(1);
    }
  });
});
