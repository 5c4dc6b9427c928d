/**
 * Counter integration: per-day totals and running sums in a store that outlives the device; every
 * sum is the same sequence of additions from day 0 whatever the path (the same bytes).
 */
import { floor, min } from "./num.js";
import type { DayFrame } from "./site-physics.js";
import type { CounterValueDef } from "./values.js";

/** Spacing in days of the kept states and counter sums of a device's history. */
export const ANCHOR_DAYS = 32;

/** The running sums of one counter: exact prefix sums (day 0 added first) at some days. */
export interface CounterSums {
  /** anchors[k]: sum of the increments of the days before day k * ANCHOR_DAYS (anchors[0] = 0). */
  readonly anchors: number[];
  /** The furthest day whose prefix sum is known, and that sum (sum of the days before it). */
  day: number;
  sum: number;
  /** The day before that one and its prefix sum (a day's records need the sum before it). */
  prevDay: number;
  prevSum: number;
}

/** Moves the furthest known prefix sum to (day, sum), keeping the previous one. */
function advance(sums: CounterSums, day: number, sum: number): void {
  sums.prevDay = sums.day;
  sums.prevSum = sums.sum;
  sums.day = day;
  sums.sum = sum;
}

export type CounterSumStore = Map<string, CounterSums>;

/** Stores `sum` as the sum before `day` when `day` is the next anchor day. */
function anchorAt(sums: CounterSums, day: number, sum: number): void {
  if (day % ANCHOR_DAYS === 0 && sums.anchors.length === day / ANCHOR_DAYS) sums.anchors.push(sum);
}

/** Per-day counter totals (a missing day from the frame `frameOf` gives) and running sums. */
export class CounterLedger {
  /** Per counter id, totals by day; NaN: not computed. */
  private readonly totals = new Map<string, number[]>();

  constructor(
    private readonly frameOf: (day: number) => DayFrame,
    private readonly sums: CounterSumStore,
  ) {}

  /** Stores the totals of `frame`'s day for the counters that lack it; advances their sums. */
  record(frame: DayFrame, defs: Iterable<CounterValueDef>): void {
    const day = frame.day;
    for (const def of defs) {
      const total = this.totalOn(def, frame);
      const sums = this.sumsOf(def.id);
      if (sums.day === day) {
        advance(sums, day + 1, sums.sum + total);
        anchorAt(sums, sums.day, sums.sum);
      }
    }
  }

  /** Sum of the counter's increments over the samples of `day` (0 before commissioning). */
  dayTotal(def: CounterValueDef, day: number): number {
    if (day < 0) return 0;
    const known = this.totalsOf(def.id, day)[day] ?? Number.NaN;
    // frameOf may simulate the day, and so record the total of a tracked counter
    return Number.isNaN(known) ? this.totalOn(def, this.frameOf(day)) : known;
  }

  sumBefore(def: CounterValueDef, day: number): number {
    if (day <= 0) return 0;
    const sums = this.sumsOf(def.id);
    if (sums.day === day) return sums.sum;
    if (sums.prevDay === day) return sums.prevSum;
    const k = min(floor(day / ANCHOR_DAYS), sums.anchors.length - 1);
    let d = k * ANCHOR_DAYS;
    let sum = sums.anchors[k] ?? 0;
    if (sums.day <= day && sums.day > d) {
      d = sums.day;
      sum = sums.sum;
    }
    while (d < day) {
      sum += this.dayTotal(def, d);
      d++;
      anchorAt(sums, d, sum);
    }
    if (day > sums.day) advance(sums, day, sum);
    return sum;
  }

  private sumsOf(id: string): CounterSums {
    let sums = this.sums.get(id);
    if (sums === undefined) {
      sums = { anchors: [0], day: 0, sum: 0, prevDay: 0, prevSum: 0 };
      this.sums.set(id, sums);
    }
    return sums;
  }

  /** The counter's total over `frame`'s day: stored, else summed in sample order and stored. */
  private totalOn(def: CounterValueDef, frame: DayFrame): number {
    const days = this.totalsOf(def.id, frame.day);
    const known = days[frame.day] ?? Number.NaN;
    if (!Number.isNaN(known)) return known;
    let total = 0;
    for (let i = 0; i < frame.count; i++) total += def.increment(frame, i);
    days[frame.day] = total;
    return total;
  }

  /** The totals array of a counter, long enough to hold `day` (NaN where unknown). */
  private totalsOf(id: string, day: number): number[] {
    let days = this.totals.get(id);
    if (days === undefined) {
      days = [];
      this.totals.set(id, days);
    }
    while (days.length <= day) days.push(Number.NaN);
    return days;
  }
}
