/** Math as module bindings: the global `Math` is slow inside vm contexts (Jest runs the model in one). */
export const { abs, ceil, cos, exp, floor, imul, max, min, round, sin, sqrt, PI } = Math;

export function clamp(x: number, lo: number, hi: number): number {
  return min(hi, max(lo, x));
}

/** Rounds to `decimals` places, never returning -0. */
export function roundTo(x: number, decimals: number): number {
  const f = 10 ** decimals;
  return round(x * f) / f + 0;
}
