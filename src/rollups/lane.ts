/** One target's way through its hours in a recompute (recompute.ts asks it span by span). */
import { HOUR_S, hourStart } from "./buckets.js";
import type { HourPoint, HourSpan, SpanFacts } from "./hour-increases.js";
import { keyOf, type RollupTarget, type SeriesKey } from "./series.js";

/** A device resource's readings in [fromS, toS] changed: its rollups are recomputed. */
export interface RecomputeJob {
  readonly target: RollupTarget;
  readonly fromS: number;
  readonly toS: number;
  /** energy-etl wrote readings in it: InfluxDB answering none is an error, not an empty range. */
  readonly written?: boolean;
}

/** Hours of a target asked about in one span. */
const SPAN_HOURS = 168;

/** Two increases that are the same but for the order of float additions. */
const sameIncrease = (a: number, b: number) =>
  Math.abs(a - b) <= 1e-12 * Math.max(1, Math.abs(a), Math.abs(b));

/**
 * One target's changed ranges one after the other, each from the bases stored before it; after a
 * range, the hours after it until an hour recomputed equals the one stored (every later hour is
 * then as before), has none stored, or the next range takes over.
 */
export class Lane {
  readonly bases = new Map<SeriesKey, number | undefined>();
  /** The hours recomputed, [fromS, toS), in order. */
  readonly hours: { fromS: number; toS: number }[] = [];
  /** Ranges where energy-etl wrote readings and InfluxDB answered none of a counter. */
  readonly unread: { fromS: number; toS: number }[] = [];
  private range: (LaneRange & { at: number; seen: boolean }) | undefined;
  /** After a range: the series whose later hours may have changed, and where they stand. */
  private extension: { pending: Set<SeriesKey>; fromS: number; toS: number } | undefined;

  constructor(
    readonly target: RollupTarget,
    private readonly ranges: LaneRange[],
  ) {}

  /** Undefined when the lane is through. */
  nextSpan(): HourSpan | undefined {
    const { target } = this;
    if (this.extension !== undefined) {
      const { fromS, toS } = this.extension;
      return { target, fromS, toS, lookup: false, next: true, stored: true };
    }
    if (this.range === undefined) {
      const range = this.ranges.shift();
      if (range === undefined) return undefined;
      this.range = { ...range, at: range.fromS, seen: false };
    }
    const { fromS, toS, at } = this.range;
    const end = Math.min(toS, at + SPAN_HOURS * HOUR_S);
    return { target, fromS: at, toS: end, lookup: at === fromS, next: end === toS, stored: false };
  }

  /** Moves on after `span`; returns the points of it to write. */
  afterSpan(span: HourSpan, facts: SpanFacts, points: readonly HourPoint[]): HourPoint[] {
    this.hours.push({ fromS: span.fromS, toS: span.toS });
    const extension = this.extension;
    if (extension === undefined) {
      const range = this.range;
      if (range !== undefined) {
        range.at = span.toS;
        range.seen ||= facts.hours.size > 0;
      }
      if (!span.next) return [...points];
      if (range?.written && !range.seen) this.unread.push({ fromS: range.fromS, toS: range.toS });
      this.range = undefined;
      // the hour after first: most often it is as stored, and the lane is through
      this.extendFor(new Set(facts.next.keys()), facts, 1);
      return [...points];
    }
    // an extension: only its pending series are written (another's base may be stale here)
    const pendingPoints = points.filter((p) => extension.pending.has(keyOf(p.series)));
    for (const p of pendingPoints) {
      const key = keyOf(p.series);
      const stored = facts.stored.get(key)?.get(p.startS);
      // none stored: not rolled up yet (its own mark recomputes it, from the base written here)
      const same =
        stored === undefined ||
        (stored.base === p.base && sameIncrease(stored.increase, p.increase));
      if (same) extension.pending.delete(key);
    }
    this.extension = undefined;
    const hours = (span.toS - span.fromS) / HOUR_S;
    this.extendFor(extension.pending, facts, Math.min(SPAN_HOURS, hours * 8));
    return pendingPoints;
  }

  /** The next extension span for `pending` series, `hours` long, unless the next range takes over. */
  private extendFor(pending: Set<SeriesKey>, facts: SpanFacts, hours: number): void {
    let nextS: number | undefined;
    for (const key of [...pending]) {
      const s = facts.next.get(key);
      if (s === undefined) pending.delete(key);
      else nextS = Math.min(nextS ?? s, s);
    }
    if (nextS === undefined) return;
    const fromS = hourStart(nextS);
    const following = this.ranges[0];
    if (following !== undefined && following.fromS <= fromS) return;
    const toS = Math.min(fromS + hours * HOUR_S, following?.fromS ?? Number.POSITIVE_INFINITY);
    this.extension = { pending, fromS, toS };
  }
}

/** Whole hours of a target recomputed; `written`: energy-etl wrote readings in them. */
interface LaneRange {
  fromS: number;
  toS: number;
  written: boolean;
}

/** A lane per target: its jobs' hours, whole, merged where they touch. */
export function lanesOf(jobs: readonly RecomputeJob[]): Lane[] {
  const byTarget = new Map<string, { target: RollupTarget; ranges: LaneRange[] }>();
  for (const job of jobs) {
    if (job.target.counters.length === 0) continue;
    const key = JSON.stringify([job.target.deviceId, job.target.resourceId]);
    const entry = byTarget.get(key) ?? { target: job.target, ranges: [] };
    byTarget.set(key, entry);
    entry.ranges.push({
      fromS: hourStart(job.fromS),
      toS: hourStart(job.toS) + HOUR_S,
      written: job.written ?? false,
    });
  }
  // an hour without a reading between two ranges costs nothing: they are read as one
  return [...byTarget.values()].map(
    ({ target, ranges }) => new Lane(target, merged(ranges, HOUR_S)),
  );
}

/** Ranges sorted and merged where they overlap, touch, or lie at most `gapS` apart. */
export function merged<T extends { fromS: number; toS: number; written?: boolean }>(
  ranges: readonly T[],
  gapS = 0,
): T[] {
  const out: T[] = [];
  for (const r of [...ranges].sort((a, b) => a.fromS - b.fromS)) {
    const last = out.at(-1);
    if (last !== undefined && r.fromS <= last.toS + gapS) {
      last.toS = Math.max(last.toS, r.toS);
      if (r.written) last.written = true;
    } else out.push({ ...r });
  }
  return out;
}
