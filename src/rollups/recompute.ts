/** Rollups recomputed from what InfluxDB stores (never a running sum): hours, then days. Idempotent. */
import type { InfluxQuery, InfluxqlSeries } from "../influx/influx-query.js";
import type { PointSink } from "../influx/point-sink.js";
import { lineBatch } from "../transform/line-protocol.js";
import { DAY_S, isoSeconds } from "../util/utc-time.js";
import { outOfBound } from "./bounds.js";
import { type Bucket, dayOf, HOUR_S } from "./buckets.js";
import { type DayPlan, dayPlan } from "./day-increases.js";
import {
  fallingRuns,
  foldSpan,
  type HourSpan,
  noFacts,
  readSpan,
  type SpanFacts,
  spanStatements,
} from "./hour-increases.js";
import { type Lane, lanesOf, merged, type RecomputeJob } from "./lane.js";
import { rawStatement, readingsBySeries } from "./readings.js";
import { dayLine, hourLine } from "./rollup-lines.js";
import { type RollupHome, type RollupTarget, targetWhere } from "./series.js";

export type { RecomputeJob } from "./lane.js";

export interface RecomputeParts {
  readonly query: Pick<InfluxQuery, "query">;
  /** Where rollup points go (ROLLUP_BUCKET's writer, or the raw points' own). */
  readonly sink: Pick<PointSink, "write">;
  readonly zones: readonly string[];
  /** Where InfluxQL reads the rollup points. */
  readonly home: RollupHome;
  /** A device's configured peak power in kWp (`sites`): its solar day points carry the yield. */
  readonly kwpOf: (deviceId: string) => number | undefined;
  /**
   * Marks of the hours recomputed after a range, until their days are written too: else a pass
   * stopped in between would leave days that the next one, finding the hours as stored, misses.
   */
  readonly extensions?: {
    mark(target: RollupTarget, fromS: number, toS: number): number;
    forget(ids: readonly number[]): void;
  };
  /**
   * Takes a rollup point beyond the bound (bounds.ts) instead of writing it, with its reason and
   * the span it covers (a dead letter); without it such a point is only left out.
   */
  readonly setAside?: (target: RollupTarget, line: string, reason: string, span: Span) => void;
}

/** [fromS, toS) */
interface Span {
  readonly fromS: number;
  readonly toS: number;
}

/** URL-encoded statement characters per InfluxQL request: under the 8 KB proxies commonly allow. */
const QUERY_CHARS_PER_REQUEST = 6_000;

/** Writes the rollups of `target` that readings in [fromS, toS] change; the points written. */
export function recomputeRollups(
  parts: RecomputeParts,
  target: RollupTarget,
  fromS: number,
  toS: number,
): Promise<number> {
  return recomputeAll(parts, [{ target, fromS, toS }]);
}

/** recomputeRollups for several device resources: their hours span by span, then their days. */
export async function recomputeAll(
  parts: RecomputeParts,
  jobs: readonly RecomputeJob[],
): Promise<number> {
  const lanes = lanesOf(jobs);
  const noted: number[] = [];
  let points = 0;
  for (;;) {
    const spans = lanes.flatMap((lane) => {
      const span = lane.nextSpan();
      return span === undefined
        ? []
        : [{ lane, span, statements: spanStatements(span, parts.home) }];
    });
    if (spans.length === 0) break;
    points += await recomputeSpans(parts, spans, noted);
  }
  await checkWritten(parts, lanes);
  const days = lanes.flatMap((lane) => dayPlans(lane, parts.zones, parts.home));
  points += await queryThenWrite(parts, days, (plan, results) => {
    const lines: string[] = [];
    for (const p of plan.points(results)) {
      const line = dayLine(plan.target, plan.zone, p, parts.kwpOf(plan.target.deviceId));
      const span = { fromS: p.startS, toS: p.startS + DAY_S };
      keep(parts, plan.target, line, outOfBound(p.increase), span, lines);
    }
    return lines;
  });
  parts.extensions?.forget(noted);
  return points;
}

/**
 * Where energy-etl wrote readings but InfluxDB answered none of a counter: fine when the counters
 * were null (other points are there); throws (the marks stay) when InfluxDB answers nothing at all
 * (a wrong database/retention-policy mapping).
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

interface LaneSpan {
  readonly lane: Lane;
  readonly span: HourSpan;
  readonly statements: readonly string[];
}

/** The hours of one span per lane: facts and readings read, folded and written; the points. */
async function recomputeSpans(
  parts: RecomputeParts,
  spans: readonly LaneSpan[],
  noted: number[],
): Promise<number> {
  const facts = new Map<LaneSpan, SpanFacts>();
  await eachRequest(parts, spans, (s, results) => {
    facts.set(s, readSpan(s.span, results));
  });
  const raw = spans.map((s) => ({
    s,
    statements: fallingRuns(facts.get(s) ?? noFacts()).map((run) =>
      rawStatement(s.span.target, run),
    ),
  }));
  const readings = new Map<LaneSpan, readonly (readonly InfluxqlSeries[])[]>();
  await eachRequest(parts, raw, (r, results) => {
    readings.set(r.s, results);
  });
  const lines: string[] = [];
  for (const s of spans) {
    const f = facts.get(s) ?? noFacts();
    const points = foldSpan(
      s.lane.bases,
      f,
      readingsBySeries(s.span.target, readings.get(s) ?? []),
    );
    const written = s.lane.afterSpan(s.span, f, points);
    // hours after a range go out ahead of their days: marked first (see `extensions`)
    if (s.span.stored && written.length > 0 && parts.extensions) {
      noted.push(parts.extensions.mark(s.span.target, s.span.fromS, s.span.toS - 1));
    }
    for (const p of written) {
      const span = { fromS: p.startS, toS: p.startS + HOUR_S };
      keep(
        parts,
        s.span.target,
        hourLine(s.span.target, p),
        outOfBound(p.increase, p.base, p.beyond),
        span,
        lines,
      );
    }
  }
  return writeLines(parts, lines);
}

/** `line` added to `lines`, or, with a reason (beyond the bound), set aside. */
function keep(
  parts: RecomputeParts,
  target: RollupTarget,
  line: string,
  reason: string | undefined,
  span: Span,
  lines: string[],
): void {
  if (reason === undefined) lines.push(line);
  else parts.setAside?.(target, line, reason, span);
}

/** A plan per day of each zone holding a lane's recomputed hours, in order. */
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
    return sorted.map((day) => dayPlan(lane.target, zone, day, home));
  });
}

/** The items' statements sent in as few requests as fit; each item's results handed to `take`. */
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

/** {@link eachRequest}, each request's items made into lines and written together; the points. */
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

/** Lines written now, not coalesced (the next step may read them back); their count. */
async function writeLines(parts: RecomputeParts, lines: readonly string[]): Promise<number> {
  if (lines.length === 0) return 0;
  const outcome = await parts.sink.write(lineBatch(lines), { now: true });
  const [first] = outcome.rejected;
  // a refused rollup is a rollup missing: the pass fails and its marks stay
  if (first !== undefined) {
    throw new Error(
      `InfluxDB refused ${outcome.rejected.length} of ${lines.length} rollup points ` +
        `(HTTP ${first.status}: ${first.error})`,
    );
  }
  return outcome.written;
}
