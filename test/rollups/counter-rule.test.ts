/** The counter rule by type (src/rollups/counter-rule.ts), table-driven; expected values by hand. */
import {
  addReading,
  type CounterKind,
  counterKindOf,
  foldReadings,
  foldRising,
} from "../../src/rollups/counter-rule.js";

const C: CounterKind = "cumulative";
const D: CounterKind = "cumulative_daily_reset";

describe("counterKindOf: only types cumulative (04) and cumulative_daily_reset (05) are counters", () => {
  it.each<[string, CounterKind | undefined]>([
    ["cumulative", C],
    ["cumulative_daily_reset", D],
    ["continuous", undefined],
    ["pulse", undefined],
    ["status", undefined],
    ["unknown_04", undefined],
    ["", undefined],
  ])("%s -> %s", (type, kind) => {
    expect(counterKindOf(type)).toBe(kind);
  });
});

describe("addReading", () => {
  it.each<[string, CounterKind, number | undefined, number, number, number]>([
    ["a series' first reading adds nothing", C, undefined, 42, 0, 42],
    ["a rise adds the rise", C, 100, 103, 3, 103],
    ["a flat reading adds nothing", C, 100, 100, 0, 100],
    ["a dip under 10 % adds nothing and keeps the high", C, 100, 95, 0, 100],
    ["a dip of exactly 10 % is still a dip", C, 100, 90, 0, 100],
    ["a fall past 10 % is a reset: it adds itself", C, 100, 89, 89, 89],
    ["a register read as 0 is a reset", C, 100, 0, 0, 0],
    ["daily reset: any fall is a reset", D, 100, 99, 99, 99],
    ["daily reset: a flat reading is no fall: it adds nothing", D, 100, 100, 0, 100],
    ["daily reset: the day's first reading above 0 counts from zero", D, 250, 1.5, 1.5, 1.5],
    ["daily reset: a rise adds the rise", D, 1.5, 2, 0.5, 2],
  ])("%s", (_what, kind, base, value, add, after) => {
    expect(addReading(kind, base, value)).toEqual({ add, base: after });
  });
});

describe("foldReadings", () => {
  it.each<[string, CounterKind, number | undefined, number[], number, number | undefined]>([
    ["nothing: nothing added, the base stays", C, 7, [], 0, 7],
    ["a dip and the climb back add only what passes the high", C, 100, [97, 99, 102], 2, 102],
    ["a jitter of 0.1 Wh adds nothing", C, 100, [99.9999, 100.0001], 0.0001, 100.0001],
    ["a recalibration of 5 % then the climb", C, 100, [95, 96, 101], 1, 101],
    ["a new meter: the reset counts from zero", C, 100, [101, 2, 5], 6, 5],
    ["several falls in one hour", C, 50, [51, 20, 25, 24, 30, 0, 1], 1 + 20 + 5 + 0 + 5 + 0 + 1, 1],
    ["daily counter across midnight", D, 30, [31, 0.5, 2], 1 + 0.5 + 1.5, 2],
    ["first readings of a series", D, undefined, [3, 4], 1, 4],
  ])("%s", (_what, kind, base, values, increase, after) => {
    const folded = foldReadings(kind, base, values);
    expect(folded.increase).toBeCloseTo(increase, 12);
    expect(folded.base).toBe(after);
  });
});

describe("foldRising: readings that never fall after the first, from the first and the last", () => {
  it.each<[string, CounterKind, number | undefined, number, number, number, number]>([
    ["the first reading of a series", C, undefined, 10, 14, 4, 14],
    ["from the base", C, 10, 11, 14, 4, 14],
    ["entering in a dip: only what passes the high", C, 100, 95, 103, 3, 103],
    ["entering in a dip that stays under the high", C, 100, 95, 99, 0, 100],
    ["entering with a reset", C, 100, 5, 9, 9, 9],
    ["daily counter entering after its reset", D, 40, 1, 3, 3, 3],
  ])("%s", (_what, kind, base, first, last, increase, after) => {
    expect(foldRising(kind, base, first, last)).toEqual({ increase, base: after });
  });
});
