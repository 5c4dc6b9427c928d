/**
 * How much a counter's readings add, by the counter's type, pure. The one definition of an
 * increase (docs/schema.md, "Rollups"):
 *
 * - `cumulative_daily_reset` (type 05): a reading below the one before is a reset and counts from
 *   zero (adds itself); any other reading adds its rise over the one before.
 * - `cumulative` (type 04): `high` is the highest reading since the last reset. A reading at or
 *   above it adds its rise over it; one below it but at least {@link DIP_SHARE} of it is a dip
 *   (meters report a little less now and then): it adds nothing and `high` stays, so the climb
 *   back adds nothing either; one below that share is a reset: it adds itself and is the new
 *   `high`.
 * - A series' first reading adds nothing.
 *
 * The state a series carries from reading to reading is one number, its `base`: the reading the
 * next one is measured from (the last reading for type 05, `high` for type 04).
 */

/** Below this share of the highest reading, a cumulative counter's fall is a reset, not a dip. */
export const DIP_SHARE = 0.9;

/** How a counter's falls are read. */
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

/** What `values` (in time order) add from `base`. */
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

/**
 * What readings that never fall between their first and last add from `base`, from those two
 * alone (every reading after the first is at or above the one before it): the first reading's
 * step, then the rise from it to the last (above `high`, for a cumulative counter in a dip).
 */
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
