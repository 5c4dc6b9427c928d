/**
 * How much a counter's readings add: the one definition of an increase (docs/schema.md,
 * "Rollups"). A series carries its `base` from reading to reading: the reading the next one is
 * measured from (the last for type 05, the highest since the last reset for type 04).
 */

/** Below this share of the highest reading, a cumulative counter's fall is a reset, not a dip. */
const DIP_SHARE = 0.9;

export type CounterKind = "cumulative" | "cumulative_daily_reset";

/** The counter kind of a value type name (as stored in the `type` tag); undefined: no counter. */
export function counterKindOf(type: string): CounterKind | undefined {
  return type === "cumulative" || type === "cumulative_daily_reset" ? type : undefined;
}

/** What a reading adds, and the base after it; `base` undefined: the series' first reading. */
export function addReading(
  kind: CounterKind,
  base: number | undefined,
  value: number,
): { readonly add: number; readonly base: number } {
  if (base === undefined) return { add: 0, base: value };
  if (value >= base) return { add: value - base, base: value };
  if (kind === "cumulative_daily_reset" || value < DIP_SHARE * base)
    return { add: value, base: value };
  return { add: 0, base };
}

/** A series' readings folded: what they add (in order), and the base after them. */
export interface Folded {
  readonly increase: number;
  readonly base: number | undefined;
}

export function foldReadings(
  kind: CounterKind,
  base: number | undefined,
  values: readonly number[],
): Folded {
  let increase = 0;
  let at = base;
  for (const value of values) {
    const step = addReading(kind, at, value);
    increase += step.add;
    at = step.base;
  }
  return { increase, base: at };
}

/** What readings that never fall after their first add from `base`, from their first and last. */
export function foldRising(
  kind: CounterKind,
  base: number | undefined,
  first: number,
  last: number,
): Folded {
  const entry = addReading(kind, base, first);
  const from = entry.base;
  // from here every reading is at or above the one before: each adds its rise above `from`
  return { increase: entry.add + Math.max(0, last - from), base: Math.max(from, last) };
}
