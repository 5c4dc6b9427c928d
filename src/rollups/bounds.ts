/**
 * The bound of counter readings and increases (docs/schema.md, "Rollups"): beyond it a rollup
 * point is set aside as a dead letter instead of written, so that one absurd reading (a register
 * read as -1.7e308) never stops the series' other rollups.
 */

/** |reading| and |increase| above this are not a meter's: 1e15 Wh is a petawatt-hour. */
export const ROLLUP_BOUND = 1e15;

/** Why a rollup point's `increase` (and `base`, the reading it ends on) cannot be written, if so. */
export function outOfBound(increase: number, base?: number): string | undefined {
  for (const [name, value] of [
    ["increase", increase],
    ["base (reading)", base],
  ] as const) {
    if (value === undefined) continue;
    if (!Number.isFinite(value)) return `${name} is not finite (${value})`;
    if (Math.abs(value) > ROLLUP_BOUND) return `${name} ${value} is beyond ±${ROLLUP_BOUND}`;
  }
  return undefined;
}
