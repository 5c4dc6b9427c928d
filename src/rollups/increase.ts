/**
 * How much a counter rose over a bucket, pure: the reading at its end minus the reading at its
 * start, where the reading at a boundary is the last one before it; a reading lower than the one
 * before is a reset (counted from zero, as Prometheus' `increase()` does), whether the counter is
 * cumulative or resets every day at the device's own midnight.
 */

/** A counter reading. */
export interface Reading {
  readonly s: number;
  readonly value: number;
}

/**
 * The increase over [startS, endS) from `before` (the last reading before startS, if any) and
 * `readings` (those in the bucket, in time order): 0 over a bucket without readings (its end
 * reading is its start reading); counted from the bucket's first reading when none came before.
 * Undefined when there is no reading at all.
 */
export function increaseOver(
  before: Reading | undefined,
  readings: readonly Reading[],
): number | undefined {
  if (readings.length === 0) return before === undefined ? undefined : 0;
  let sum = 0;
  let previous = before?.value;
  for (const { value } of readings) {
    if (previous !== undefined) sum += value >= previous ? value - previous : value;
    previous = value;
  }
  return sum;
}
