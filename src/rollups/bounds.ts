/** The bound beyond which a rollup point is a dead letter, not written (docs/schema.md, "Rollups"). */

/** |reading| and |increase| above this are not a meter's: 1e15 Wh is a petawatt-hour. */
export const ROLLUP_BOUND = 1e15;

export const withinBound = (value: number): boolean =>
  Number.isFinite(value) && Math.abs(value) <= ROLLUP_BOUND;

/** Why a rollup point cannot be written: its increase, base or a reading not finite or beyond the bound. */
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
