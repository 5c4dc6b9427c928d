/**
 * Recomputing a device resource's rollups over a range of hours from what InfluxDB stores, never
 * from a running sum: the increase of every counter series per UTC hour (hour-increases.ts),
 * then per day of each configured time zone (the sum of the day's hourly increases, stored a
 * moment before; from the raw readings for a zone whose days do not start on a UTC hour). The
 * same range recomputed writes the same points.
 */
import { type InfluxQuery, type InfluxqlSeries, quoteIdentifier } from "../influx/influx-query.js";
import type { PointSink } from "../influx/point-sink.js";
import { escapeMeasurement, escapeTag, lineBatch } from "../transform/line-protocol.js";
import { type Bucket, bucketsTouched, dayOf, hourOf, localDate } from "./buckets.js";
import { hourIncreasesFrom, hourStatements } from "./hour-increases.js";
import { type BucketIncrease, increasesOf } from "./raw-increases.js";
import { type RollupTarget, rollupSeriesOf, type SeriesTags, targetWhere } from "./series.js";

/** The measurement of hourly increases. */
export const HOUR_MEASUREMENT = "rollup_hour";
/** The measurement of daily increases (tag `tz`: the time zone of the day). */
export const DAY_MEASUREMENT = "rollup_day";

/** What recomputing needs. */
export interface RecomputeParts {
  readonly query: Pick<InfluxQuery, "query">;
  readonly sink: Pick<PointSink, "write">;
  /** ROLLUP_TIME_ZONES. */
  readonly zones: readonly string[];
}

/** Hours read from InfluxDB at a time. */
const SPAN_HOURS = 24;
/** Days read raw at a time (a zone whose days do not start on a UTC hour). */
const SPAN_DAYS = 31;
/**
 * The URL-encoded characters of statements sent in one InfluxQL request: spans of several device
 * resources share requests, and the query (in the URL) stays under the 8 KB that proxies commonly
 * allow. A span (one device resource's hours or day) is never split, so one with very many
 * counters may go alone over it.
 */
const QUERY_CHARS_PER_REQUEST = 6_000;

/** A device resource's readings in [fromS, toS] whose rollups are recomputed. */
export interface RecomputeJob {
  readonly target: RollupTarget;
  readonly fromS: number;
  readonly toS: number;
}

/**
 * Writes the rollups of `target` that readings in [fromS, toS] change: every UTC hour holding
 * them (and the one after), then every day of each zone holding those hours. Returns the points
 * written.
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
 * recomputeRollups for several device resources at once: their hours first (the statements of
 * many in one request, their points in one write), then their days, which sum those hours.
 */
export async function recomputeAll(
  parts: RecomputeParts,
  jobs: readonly RecomputeJob[],
): Promise<number> {
  const withHours = jobs
    .filter((j) => j.target.counters.length > 0)
    .map((j) => ({ target: j.target, hours: bucketsTouched(hourOf, j.fromS, j.toS) }));
  const hourSpans = withHours.flatMap(({ target, hours }) =>
    slices(hours, SPAN_HOURS).map((span) => ({
      target,
      span,
      statements: hourStatements(target, span),
    })),
  );
  let points = await queryThenWrite(parts, hourSpans, async ({ target, span }, results) =>
    (await hourIncreasesFrom(parts.query, target, span, results)).map((x) =>
      rollupLine(HOUR_MEASUREMENT, target, x.series, "", x.increase, x.startS),
    ),
  );
  const daySpans = withHours.flatMap(({ target, hours }) => daySpansOf(parts.zones, target, hours));
  for (const span of daySpans.filter((d) => !d.onHours)) {
    const increases = await increasesOf(parts.query, span.target, span.days);
    points += await writeIncreases(parts, span.target, increases, DAY_MEASUREMENT, span.zone);
  }
  points += await queryThenWrite(
    parts,
    daySpans.filter((d) => d.onHours),
    daySumLines,
  );
  return points;
}

/** A zone's days (at most SPAN_DAYS) holding some of a target's hours. */
interface DaySpan {
  readonly target: RollupTarget;
  readonly zone: string;
  readonly days: readonly Bucket[];
  /** The days start and end on UTC hours: each is the sum of its hours (`statements`). */
  readonly onHours: boolean;
  readonly statements: readonly string[];
}

/** The days of each zone that hold `hours`, in spans, with the statements that sum them. */
function daySpansOf(
  zones: readonly string[],
  target: RollupTarget,
  hours: readonly Bucket[],
): DaySpan[] {
  const first = hours[0];
  const last = hours.at(-1);
  if (first === undefined || last === undefined) return [];
  return zones.flatMap((zone) => {
    const days = bucketsTouched((s) => dayOf(zone, s), first.startS, last.endS - 1).filter(
      (day) => day.startS < last.endS,
    );
    const onHours = days.every((d) => d.startS % 3600 === 0 && d.endS % 3600 === 0);
    // a day of hours is one statement (requests() packs them); other days are read raw, in spans
    return slices(days, onHours ? 1 : SPAN_DAYS).map((span) => ({
      target,
      zone,
      days: span,
      onHours,
      statements: onHours ? daySumStatements(target, span) : [],
    }));
  });
}

/** `items` in consecutive slices of at most `size`. */
function slices<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Spans grouped so that each group's statements fit one request (a span is never split). */
function requests<T extends { readonly statements: readonly string[] }>(
  spans: readonly T[],
): T[][] {
  const groups: T[][] = [];
  let current: T[] = [];
  let chars = 0;
  for (const span of spans) {
    if (span.statements.length === 0) continue;
    // as the URL carries them (quotes, spaces and commas are encoded)
    const size = span.statements.reduce(
      (n, statement) => n + encodeURIComponent(statement).length + 3,
      0,
    );
    if (current.length > 0 && chars + size > QUERY_CHARS_PER_REQUEST) {
      groups.push(current);
      current = [];
      chars = 0;
    }
    current.push(span);
    chars += size;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

/**
 * The spans' statements sent in as few requests as {@link requests} allows; each span's own
 * results (in order) made into lines by `linesOf`, and a request's lines written together. Returns
 * the points written.
 */
async function queryThenWrite<T extends { readonly statements: readonly string[] }>(
  parts: RecomputeParts,
  spans: readonly T[],
  linesOf: (
    span: T,
    results: readonly (readonly InfluxqlSeries[])[],
  ) => Promise<string[]> | string[],
): Promise<number> {
  let points = 0;
  for (const group of requests(spans)) {
    const results = await parts.query.query(group.flatMap((g) => g.statements));
    const lines: string[] = [];
    let at = 0;
    for (const span of group) {
      const mine = results.slice(at, at + span.statements.length);
      at += span.statements.length;
      for (const line of await linesOf(span, mine)) lines.push(line);
    }
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

/** Increases over buckets written as `measurement` (a day: of `zone`). */
async function writeIncreases(
  parts: RecomputeParts,
  target: RollupTarget,
  increases: readonly BucketIncrease[],
  measurement: string,
  zone: string,
): Promise<number> {
  return writeLines(
    parts,
    increases.map((x) => rollupLine(measurement, target, x.series, zone, x.increase, x.startS)),
  );
}

/** One statement per day: the sum of its hourly increases (stored before) per series. */
function daySumStatements(target: RollupTarget, days: readonly Bucket[]): string[] {
  const where = targetWhere(target);
  return days.map(
    (day) =>
      `SELECT sum("increase") FROM ${quoteIdentifier(HOUR_MEASUREMENT)} WHERE ${where} AND time >= ${day.startS}s AND time < ${day.endS}s GROUP BY "measurement", "values_id", "unit", "type"`,
  );
}

/** The day points of a span, from its statements' results (in their order). */
function daySumLines(span: DaySpan, results: readonly (readonly InfluxqlSeries[])[]): string[] {
  const lines: string[] = [];
  results.forEach((series, i) => {
    const day = span.days[i];
    if (day === undefined) return;
    for (const s of series) {
      const [row] = s.values;
      const sum = row?.[1];
      if (typeof sum !== "number") continue;
      lines.push(
        rollupLine(DAY_MEASUREMENT, span.target, rollupSeriesOf(s), span.zone, sum, day.startS),
      );
    }
  });
  return lines;
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
  // a day carries its local month and year: month and year panels sum the days of their own
  const date = zone === "" ? "" : localDate(zone, startS);
  const tags =
    `,device_id=${escapeTag(target.deviceId)},measurement=${escapeTag(t.measurement)}` +
    (zone === "" ? "" : `,month=${date.slice(0, 7)}`) +
    `,resource_id=${escapeTag(target.resourceId)},type=${escapeTag(t.type)}` +
    (zone === "" ? "" : `,tz=${escapeTag(zone)}`) +
    `,unit=${escapeTag(t.unit)},values_id=${escapeTag(t.valuesId)}` +
    (zone === "" ? "" : `,year=${date.slice(0, 4)}`);
  return `${escapeMeasurement(measurement)}${tags} increase=${increase} ${startS}`;
}
