/**
 * The bound of counter readings and increases (docs/schema.md, "Rollups"): beyond it a rollup
 * point is set aside as a dead letter instead of written, so that one absurd reading (a register
 * read as -1.7e308) never stops the series' other rollups.
 */

/** |reading| and |increase| above this are not a meter's: 1e15 Wh is a petawatt-hour. */
export const ROLLUP_BOUND = 1e15;

/** True for a finite number within ±{@link ROLLUP_BOUND}. */
export const withinBound = (value: number): boolean =>
  Number.isFinite(value) && Math.abs(value) <= ROLLUP_BOUND;

/**
 * Why a rollup point cannot be written, if so: its `increase`, its `base` (the reading it ends
 * on) or one of its readings (`reading`) is not finite or beyond the bound.
 */
export function outOfBound(increase: number, base?: number, reading?: number): string | undefined {
  for (const [name, value] of [
    ["increase", increase],
    ["base (reading)", base],
    ["a reading", reading],
  ] as const) {
    if (value === undefined) continue;
    if (!Number.isFinite(value)) return `${name} is not finite (${value})`;
    if (Math.abs(value) > ROLLUP_BOUND)
      return `${name} ${value.toExponential()} is beyond ±${ROLLUP_BOUND.toExponential()}`;
  }
  return undefined;
}
