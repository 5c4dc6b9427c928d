/** Energy integration of counter values with per-day totals cached, so old days are summed once. */
import type { DayFrame } from "./site-physics.js";
import type { CounterValueDef } from "./values.js";

/** Sum of a counter's increments over samples 0..upTo-1 of a day, in sample order. */
export function sumIncrements(
  def: CounterValueDef,
  frame: DayFrame,
  upTo: number = frame.count,
): number {
  let sum = 0;
  for (let i = 0; i < upTo; i++) sum += def.increment(frame, i);
  return sum;
}

/**
 * Per-day totals and running sums of counters since commissioning (day 0), keyed by value id
 * (one id has one generator per device). Days are filled in order; a missing day is computed
 * from the frame that `frameOf` supplies.
 */
export class CounterLedger {
  private readonly totals = new Map<string, number[]>();
  private readonly before = new Map<string, number[]>();

  constructor(private readonly frameOf: (day: number) => DayFrame) {}

  /** Stores the totals of `frame`'s day for the counters whose next missing day it is. */
  record(frame: DayFrame, defs: readonly CounterValueDef[]): void {
    for (const def of defs) {
      const days = this.totalsOf(def);
      if (days.length === frame.day) days.push(sumIncrements(def, frame));
    }
  }

  /** Sum of the counter's increments over the samples of `day` (0 before commissioning). */
  dayTotal(def: CounterValueDef, day: number): number {
    if (day < 0) return 0;
    const days = this.totalsOf(def);
    while (days.length <= day) {
      const d = days.length;
      const frame = this.frameOf(d);
      if (days.length === d) days.push(sumIncrements(def, frame));
    }
    return days[day] ?? 0;
  }

  /** Sum of the counter's increments over all days before `day`. */
  sumBefore(def: CounterValueDef, day: number): number {
    if (day <= 0) return 0;
    let sums = this.before.get(def.id);
    if (sums === undefined) {
      sums = [0];
      this.before.set(def.id, sums);
    }
    while (sums.length <= day) {
      const d = sums.length - 1;
      sums.push((sums[d] ?? 0) + this.dayTotal(def, d));
    }
    return sums[day] ?? 0;
  }

  private totalsOf(def: CounterValueDef): number[] {
    let days = this.totals.get(def.id);
    if (days === undefined) {
      days = [];
      this.totals.set(def.id, days);
    }
    return days;
  }
}
