/** Seeded, stateless noise: murmur3-style integer hashing and smooth value noise. */
import { floor, imul } from "./num.js";

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;
const TWO_POW_32 = 4_294_967_296;

function mixIn(h: number, k: number): number {
  let x = imul(k | 0, C1);
  x = (x << 15) | (x >>> 17);
  x = imul(x, C2);
  let y = h ^ x;
  y = (y << 13) | (y >>> 19);
  return (imul(y, 5) + 0xe6546b64) | 0;
}

/** murmur3 finalizer, returned unsigned. */
function fmix32(h: number): number {
  let x = h ^ (h >>> 16);
  x = imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

export function hash2(a: number, b: number): number {
  return fmix32(mixIn(mixIn(0x2f0b3c1d, a), b) ^ 8);
}

export function hash3(a: number, b: number, c: number): number {
  return fmix32(mixIn(mixIn(mixIn(0x2f0b3c1d, a), b), c) ^ 12);
}

/** Unsigned 32-bit hash of a string (UTF-16 code units). */
export function hashString(text: string): number {
  let h = 0x5bd1e995;
  for (let i = 0; i < text.length; i++) h = mixIn(h, text.charCodeAt(i));
  return fmix32(h ^ text.length);
}

/** A uniform number in [0, 1) from a key and one integer. */
export function unit2(key: number, a: number): number {
  return hash2(key, a) / TWO_POW_32;
}

export function unit3(key: number, a: number, b: number): number {
  return hash3(key, a, b) / TWO_POW_32;
}

/** The first choice whose running total of shares passes the uniform draw `u`; none past all. */
export function pickByShare<T>(
  u: number,
  shares: readonly (readonly [T, number | undefined])[],
): T | undefined {
  let edge = 0;
  for (const [choice, share] of shares) {
    edge += share ?? 0;
    if (u < edge) return choice;
  }
  return undefined;
}

/** A key for a named channel under a parent key (device, value). */
export function subKey(parent: number, name: string): number {
  return hash2(parent, hashString(name));
}

/** Smooth value noise in [0, 1]: uniform knots every `periodS` seconds joined by a smoothstep. */
export function smoothNoise(key: number, t: number, periodS: number): number {
  const x = t / periodS;
  const knot = floor(x);
  const f = x - knot;
  const a = unit2(key, knot);
  const b = unit2(key, knot + 1);
  return a + (b - a) * f * f * (3 - 2 * f);
}

/** Smooth noise in [-1, 1] with a fast octave on top of a slow one. */
export function wobble(key: number, t: number, periodS: number): number {
  const slow = smoothNoise(key, t, periodS);
  const fast = smoothNoise(key ^ 0x68e31da4, t, periodS / 4);
  return (slow * 0.75 + fast * 0.25) * 2 - 1;
}
