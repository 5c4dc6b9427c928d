/**
 * Recomputing device resources' rollups over the hours whose readings changed, from what InfluxDB
 * stores, never from a running sum: per target, its changed ranges hour by hour
 * (hour-increases.ts), each series carrying its base from hour to hour; then the hours after a
 * range as long as the base they start from changed (until an hour recomputed equals the one
 * stored); then every day of each zone holding those hours (day-increases.ts). The same range
 * recomputed writes the same points. Many targets' statements share InfluxQL requests and their
 * points share writes.
 */
import type { InfluxQuery, InfluxqlSeries } from "../influx/influx-query.js";
import type { PointSink } from "../influx/point-sink.js";
import { escapeMeasurement, escapeTag, lineBatch } from "../transform/line-protocol.js";
import { isoSeconds } from "../util/utc-time.js";
import { type Bucket, dayOf, localDate } from "./buckets.js";
import { DAY_MEASUREMENT, type DayPlan, dayPlan } from "./day-increases.js";
import {
  fallingRuns,
  foldSpan,
  HOUR_MEASUREMENT,
  type HourPoint,
  type HourSpan,
  rawStatement,
  readingsBySeries,
  readSpan,
  type SeriesState,
  type SpanFacts,
  spanStatements,
} from "./hour-increases.js";
import {
  keyOf,
  type RollupHome,
  type RollupTarget,
  type SeriesKey,
  type SeriesTags,
  targetWhere,
} from "./series.js";

/** What recomputing needs. */
export interface RecomputeParts {
  readonly query: Pick<InfluxQuery, "query">;
  /** Where rollup points go (ROLLUP_BUCKET's writer, or the raw points' own). */
  readonly sink: Pick<PointSink, "write">;
  /** ROLLUP_TIME_ZONES. */
  readonly zones: readonly string[];
  /** Where InfluxQL reads the rollup points. */
  readonly home: RollupHome;
}

/** A device resource's readings in [fromS, toS] changed: its rollups are recomputed. */
export interface RecomputeJob {
  readonly target: RollupTarget;
  readonly fromS: number;
  readonly toS: number;
  /** energy-etl wrote readings in it: InfluxDB answering none is an error, not an empty range. */
  readonly written?: boolean;
}

const HOUR_S = 3600;
/** Hours of a target asked about in one span. */
const SPAN_HOURS = 168;
/**
 * The URL-encoded characters of statements sent in one InfluxQL request: spans of several device
 * resources share requests, and the query (in the URL) stays under the 8 KB that proxies commonly
 * allow. A span's statements are never split, so one with very many counters may go alone over it.
 */
const QUERY_CHARS_PER_REQUEST = 6_000;

const hourStart = (s: number) => Math.floor(s / HOUR_S) * HOUR_S;

/**
 * Writes the rollups of `target` that readings in [fromS, toS] change. Returns the points written.
 */
export function recomputeRollups(
  parts: RecomputeParts,
  target: RollupTarget,
  fromS: number,
  toS: number,
): Promise<number> {
  return recomputeAll(parts, [{ target, fromS, toS }]);
}

/**
 * recomputeRollups for several device resources at once: their hours first, span by span (the
 * statements of many in one request, their points in one write), then their days, which sum
 * those hours.
 */
export async function recomputeAll(
  parts: RecomputeParts,
  jobs: readonly RecomputeJob[],
): Promise<number> {
  const lanes = lanesOf(jobs);
  let points = 0;
  for (;;) {
    const spans = lanes.flatMap((lane) => {
      const span = lane.nextSpan();
      return span === undefined
        ? []
        : [{ lane, span, statements: spanStatements(span, parts.home) }];
    });
    if (spans.length === 0) break;
    points += await recomputeSpans(parts, spans);
  }
  await checkWritten(parts, lanes);
  const days = lanes.flatMap((lane) => dayPlans(lane, parts.zones, parts.home));
  points += await queryThenWrite(parts, days, (plan, results) =>
    plan
      .points(results)
      .map((x) =>
        rollupLine(DAY_MEASUREMENT, plan.target, x.series, plan.zone, x.increase, x.startS),
      ),
  );
  return points;
}

/**
 * A range where energy-etl wrote readings but InfluxDB answered none of its counters may be one
 * whose counters were all null (the other points are there), or InfluxDB answering a query with
 * nothing although it holds the points (a wrong database/retention-policy mapping, a front that
 * answers empty): the second throws, so that the marks stay (its days were not written).
 */
async function checkWritten(parts: RecomputeParts, lanes: readonly Lane[]): Promise<void> {
  const checks = lanes.flatMap((lane) =>
    lane.unread.map((range) => ({
      lane,
      range,
      statements: [
        `SELECT count(*) FROM /.*/ WHERE ${targetWhere(lane.target)} AND time >= ${range.fromS}s AND time < ${range.toS}s`,
      ],
    })),
  );
  await eachRequest(parts, checks, ({ lane, range }, [found = []]) => {
    if (found.length > 0) return;
    const { deviceId, resourceId } = lane.target;
    throw new Error(
      `InfluxDB answered no point of ${deviceId}/${resourceId} from ${isoSeconds(range.fromS)} ` +
        `to ${isoSeconds(range.toS)}, where energy-etl has just written some: the rollups stay due ` +
        "(is INFLUX_BUCKET the bucket InfluxQL reads, by its database/retention-policy mapping?)",
    );
  });
}

/** One span of one lane, with its statements. */
interface LaneSpan {
  readonly lane: Lane;
  readonly span: HourSpan;
  readonly statements: readonly string[];
}

/**
 * The hours of one span per lane: their facts (one request for many), the readings of the hours
 * with a fall inside (another), folded; the hour points written in one write. Returns them.
 */
async function recomputeSpans(parts: RecomputeParts, spans: readonly LaneSpan[]): Promise<number> {
  const facts = new Map<LaneSpan, SpanFacts>();
  await eachRequest(parts, spans, (s, results) => {
    facts.set(s, readSpan(s.span, results));
  });
  const raw = spans.map((s) => ({
    s,
    statements: fallingRuns(facts.get(s) ?? emptyFacts()).map((run) =>
      rawStatement(s.span.target, run),
    ),
  }));
  const readings = new Map<LaneSpan, readonly (readonly InfluxqlSeries[])[]>();
  await eachRequest(parts, raw, (r, results) => {
    readings.set(r.s, results);
  });
  const lines: string[] = [];
  for (const s of spans) {
    const f = facts.get(s) ?? emptyFacts();
    const points = foldSpan(
      s.lane.states,
      f,
      readingsBySeries(s.span.target, readings.get(s) ?? []),
    );
    for (const p of s.lane.afterSpan(s.span, f, points)) {
      lines.push(hourLine(s.span.target, p));
    }
  }
  return writeLines(parts, lines);
}

const emptyFacts = (): SpanFacts => ({
  before: new Map(),
  hours: new Map(),
  stored: new Map(),
  next: new Map(),
});

/** Two increases that are the same but for the order of float additions. */
const sameIncrease = (a: number, b: number) =>
  Math.abs(a - b) <= 1e-12 * Math.max(1, Math.abs(a), Math.abs(b));

/**
 * One target's way through its hours: its changed ranges (whole hours, merged) one after the
 * other, each from the bases stored before it; after a range whose series read on, the hours
 * after it for those series until an hour recomputed equals the one stored (its base, and so
 * every later hour, is then as before) or the next range takes over.
 */
class Lane {
  /** Each series' base where the lane stands. */
  readonly states = new Map<SeriesKey, SeriesState>();
  /** The hours recomputed, [fromS, toS), in order. */
  readonly hours: { fromS: number; toS: number }[] = [];
  /** Ranges where energy-etl wrote readings and InfluxDB answered none of a counter. */
  readonly unread: { fromS: number; toS: number }[] = [];
  private readonly ranges: LaneRange[];
  private range: (LaneRange & { at: number; seen: boolean }) | undefined;
  /** After a range: the series whose later hours may have changed, and where they stand. */
  private extension: { pending: Set<SeriesKey>; fromS: number; toS: number } | undefined;

  constructor(
    readonly target: RollupTarget,
    ranges: LaneRange[],
  ) {
    this.ranges = ranges;
  }

  /** The next span to recompute; undefined when the lane is through. */
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
    const mine = points.filter((p) => extension.pending.has(keyOf(p.series)));
    for (const p of mine) {
      const key = keyOf(p.series);
      const stored = facts.stored.get(key)?.get(p.startS);
      if (
        stored !== undefined &&
        stored.base === p.base &&
        sameIncrease(stored.increase, p.increase)
      )
        extension.pending.delete(key);
    }
    this.extension = undefined;
    const hours = (span.toS - span.fromS) / HOUR_S;
    this.extendFor(extension.pending, facts, Math.min(SPAN_HOURS, hours * 8));
    return mine;
  }

  /**
   * The next extension span for `pending` series, from the first of their next readings, `hours`
   * long; none when none of them reads on, or when the next range starts there first (it reads
   * the bases this lane wrote).
   */
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
function lanesOf(jobs: readonly RecomputeJob[]): Lane[] {
  const byTarget = new Map<string, { target: RollupTarget; ranges: LaneRange[] }>();
  for (const job of jobs) {
    if (job.target.counters.length === 0) continue;
    const key = JSON.stringify([job.target.deviceId, job.target.resourceId]);
    let entry = byTarget.get(key);
    if (entry === undefined) {
      entry = { target: job.target, ranges: [] };
      byTarget.set(key, entry);
    }
    entry.ranges.push({
      fromS: hourStart(job.fromS),
      toS: hourStart(job.toS) + HOUR_S,
      written: job.written ?? false,
    });
  }
  return [...byTarget.values()].map(({ target, ranges }) => new Lane(target, merged(ranges)));
}

/** Ranges sorted and merged where they overlap or touch. */
function merged<T extends { fromS: number; toS: number; written?: boolean }>(
  ranges: readonly T[],
): T[] {
  const out: T[] = [];
  for (const r of [...ranges].sort((a, b) => a.fromS - b.fromS)) {
    const last = out.at(-1);
    if (last !== undefined && r.fromS <= last.toS) {
      last.toS = Math.max(last.toS, r.toS);
      if (r.written) last.written = true;
    } else out.push({ ...r });
  }
  return out;
}

/** The days of each zone holding a lane's recomputed hours, as plans of consecutive days. */
function dayPlans(lane: Lane, zones: readonly string[], home: RollupHome): DayPlan[] {
  const spans = merged(lane.hours);
  return zones.flatMap((zone) => {
    const days = new Map<number, Bucket>();
    for (const { fromS, toS } of spans) {
      for (let day = dayOf(zone, fromS); day.startS < toS; day = dayOf(zone, day.endS)) {
        days.set(day.startS, day);
      }
    }
    const sorted = [...days.values()].sort((a, b) => a.startS - b.startS);
    // a plan per day keeps each request's statements small enough to pack
    return sorted.map((day) => dayPlan(lane.target, zone, [day], home));
  });
}

/**
 * The items' statements sent in as few requests as fit QUERY_CHARS_PER_REQUEST (an item's are
 * never split); each item's own results (in order) handed to `take`.
 */
async function eachRequest<T extends { readonly statements: readonly string[] }>(
  parts: RecomputeParts,
  items: readonly T[],
  take: (item: T, results: readonly (readonly InfluxqlSeries[])[]) => void,
): Promise<void> {
  for (const group of requests(items)) {
    const results = await parts.query.query(group.flatMap((g) => g.statements));
    let at = 0;
    for (const item of group) {
      take(item, results.slice(at, at + item.statements.length));
      at += item.statements.length;
    }
  }
}

/** Items grouped so that each group's statements fit one request (an item is never split). */
function requests<T extends { readonly statements: readonly string[] }>(
  items: readonly T[],
): T[][] {
  const groups: T[][] = [];
  let current: T[] = [];
  let chars = 0;
  for (const item of items) {
    if (item.statements.length === 0) continue;
    // as the URL carries them (quotes, spaces and commas are encoded)
    const size = item.statements.reduce(
      (n, statement) => n + encodeURIComponent(statement).length + 3,
      0,
    );
    if (current.length > 0 && chars + size > QUERY_CHARS_PER_REQUEST) {
      groups.push(current);
      current = [];
      chars = 0;
    }
    current.push(item);
    chars += size;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

/**
 * The items' statements in as few requests as fit; each request's items made into lines by
 * `linesOf`, and written together. Returns the points written.
 */
async function queryThenWrite<T extends { readonly statements: readonly string[] }>(
  parts: RecomputeParts,
  items: readonly T[],
  linesOf: (item: T, results: readonly (readonly InfluxqlSeries[])[]) => string[],
): Promise<number> {
  let points = 0;
  for (const group of requests(items)) {
    const lines: string[] = [];
    await eachRequest(parts, group, (item, results) => {
      for (const line of linesOf(item, results)) lines.push(line);
    });
    points += await writeLines(parts, lines);
  }
  return points;
}

/**
 * Lines written in one request, sent at once (the next step may read them back, and a coalescing
 * sink would hold them for its linger time); their count.
 */
async function writeLines(parts: RecomputeParts, lines: readonly string[]): Promise<number> {
  if (lines.length > 0) await parts.sink.write(lineBatch(lines), { now: true });
  return lines.length;
}

/**
 * The head of a series' hour lines (measurement and tags), made once per series and span: a
 * backfill of hourly data writes about as many hour points as counter readings.
 */
const hourHeads = new WeakMap<SeriesTags, string>();

/** An hour point's line: its increase and the base after it. */
function hourLine(target: RollupTarget, p: HourPoint): string {
  let head = hourHeads.get(p.series);
  if (head === undefined) {
    head = headOf(HOUR_MEASUREMENT, target, p.series, "", p.startS);
    hourHeads.set(p.series, head);
  }
  return `${head} increase=${p.increase},base=${p.base} ${p.startS}`;
}

/** One rollup point: the increase of a series over the bucket starting at `startS`. */
function rollupLine(
  measurement: string,
  target: RollupTarget,
  t: SeriesTags,
  zone: string,
  increase: number,
  startS: number,
): string {
  return `${headOf(measurement, target, t, zone, startS)} increase=${increase} ${startS}`;
}

/** A rollup line's measurement and tags (a day's: its zone, local month and year). */
function headOf(
  measurement: string,
  target: RollupTarget,
  t: SeriesTags,
  zone: string,
  startS: number,
): string {
  // a day carries its local month and year: month and year panels sum the days of their own
  const date = zone === "" ? "" : localDate(zone, startS);
  const tags =
    `,device_id=${escapeTag(target.deviceId)},measurement=${escapeTag(t.measurement)}` +
    (zone === "" ? "" : `,month=${date.slice(0, 7)}`) +
    `,resource_id=${escapeTag(target.resourceId)},type=${escapeTag(t.type)}` +
    (zone === "" ? "" : `,tz=${escapeTag(zone)}`) +
    `,unit=${escapeTag(t.unit)},values_id=${escapeTag(t.valuesId)}` +
    (zone === "" ? "" : `,year=${date.slice(0, 4)}`);
  return `${escapeMeasurement(measurement)}${tags}`;
}
