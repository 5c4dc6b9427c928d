/**
 * Hourly increases with InfluxDB doing the reading: per UTC hour and counter series its first and
 * last reading and how many steps fall; only an hour with a fall inside is read reading by
 * reading. No statement ORs time ranges (InfluxQL answers such a WHERE with nothing).
 */
import type { InfluxqlSeries } from "../influx/influx-query.js";
import { baseStatements, basesFrom, rowByKey, type SeriesBase } from "./bases.js";
import { withinBound } from "./bounds.js";
import { HOUR_S } from "./buckets.js";
import { counterKindOf, type Folded, foldReadings, foldRising } from "./counter-rule.js";
import type { SeriesReadings } from "./readings.js";
import { HOUR_MEASUREMENT } from "./rollup-lines.js";
import * as Series from "./series.js";

/** Consecutive UTC hours of a target recomputed together: [fromS, toS), whole hours. */
export interface HourSpan {
  readonly target: Series.RollupTarget;
  readonly fromS: number;
  readonly toS: number;
  /** The span starts a range: each series' base before it is read. */
  readonly lookup: boolean;
  /** The span ends a range: each series' next reading at or after toS is read. */
  readonly next: boolean;
  /** The hour points stored over the span are read (before they are written again). */
  readonly stored: boolean;
}

export interface HourPoint {
  readonly series: Series.SeriesTags;
  readonly startS: number;
  readonly increase: number;
  /** The base after the hour. */
  readonly base: number;
  /** The hour's first reading beyond the bound (bounds.ts), if one is. */
  readonly beyond?: number;
}

interface HourFacts {
  readonly first: number;
  readonly last: number;
  /** Steps down between consecutive readings of the span that land in this hour. */
  falls: number;
  /** A reading after the hour's first falls below the one before it. */
  fallsInside: boolean;
}

/** What InfluxDB says of a span, before any single reading is read. */
export interface SpanFacts {
  /** `lookup`: the base before the span, per series. */
  readonly before: Map<Series.SeriesKey, SeriesBase>;
  /** Per series, per hour start: the hour's facts. */
  readonly hours: Map<
    Series.SeriesKey,
    { readonly tags: Series.SeriesTags; readonly hours: Map<number, HourFacts> }
  >;
  /** `stored`: per series, per hour start, the point stored before this recompute. */
  readonly stored: Map<
    Series.SeriesKey,
    Map<number, { readonly increase: number; readonly base: number }>
  >;
  /** `next`: per series, the time of its first reading at or after the span's end. */
  readonly next: Map<Series.SeriesKey, number>;
}

const num = (v: unknown): number | undefined => (typeof v === "number" ? v : undefined);

/** The statements that ask InfluxDB about `span` (readSpan reads their results, in order). */
export function spanStatements(span: HourSpan, home: Series.RollupHome): string[] {
  const { target, fromS, toS } = span;
  if (target.counters.length === 0) return [];
  const { from, where, tags } = Series.selectionOf(target);
  const range = `time >= ${fromS}s AND time < ${toS}s`;
  const byHour = `GROUP BY time(1h), ${tags} fill(none)`;
  const statements = span.lookup ? baseStatements(target, fromS, home) : [];
  statements.push(
    `SELECT first("value"), last("value") FROM ${from} WHERE ${where} AND ${range} ${byHour}`,
    // only hours with a step down answer: most hours of most counters have none
    `SELECT count("d") FROM (SELECT difference("value") AS "d" FROM ${from} WHERE ${where} AND ${range} GROUP BY ${tags}) WHERE "d" < 0 AND ${range} ${byHour}`,
  );
  if (span.stored) {
    statements.push(
      `SELECT "increase", "base" FROM ${Series.rollupSource(home, HOUR_MEASUREMENT)} WHERE ${Series.targetWhere(target)} AND ${range} GROUP BY ${Series.ROLLUP_SERIES_TAGS}`,
    );
  }
  if (span.next) {
    statements.push(
      `SELECT first("value") FROM ${from} WHERE ${where} AND time >= ${toS}s GROUP BY ${tags}`,
    );
  }
  return statements;
}

export const noFacts = (): SpanFacts => ({
  before: new Map(),
  hours: new Map(),
  stored: new Map(),
  next: new Map(),
});

/** The facts of `span` from the results of its spanStatements (in their order). */
export function readSpan(
  span: HourSpan,
  results: readonly (readonly InfluxqlSeries[])[],
): SpanFacts {
  const { seriesOf } = Series.selectionOf(span.target);
  let at = 0;
  const take = (n: number) => {
    at += n;
    return results.slice(at - n, at);
  };
  const facts = noFacts();
  if (span.lookup) {
    for (const [key, b] of basesFrom(span.target, take(2))) facts.before.set(key, b);
  }
  const [edges = [], falls = []] = take(2);
  readHours(facts, edges, falls, seriesOf);
  if (span.stored) readStored(facts, take(1)[0] ?? []);
  if (span.next) {
    for (const [key, r] of rowByKey(take(1)[0] ?? [], seriesOf)) facts.next.set(key, r.s);
  }
  return facts;
}

/**
 * Each series' hours from their edges and falls: the step into an hour's first reading, from the
 * hour before, is among its falls but no fall inside.
 */
function readHours(
  facts: SpanFacts,
  edges: readonly InfluxqlSeries[],
  falls: readonly InfluxqlSeries[],
  seriesOf: (s: InfluxqlSeries) => Series.SeriesTags | undefined,
): void {
  const hoursOf = (s: InfluxqlSeries) => {
    const tags = seriesOf(s);
    if (tags === undefined) return undefined;
    const key = Series.keyOf(tags);
    const entry = facts.hours.get(key) ?? { tags, hours: new Map() };
    facts.hours.set(key, entry);
    return entry.hours;
  };
  for (const s of edges) {
    const hours = hoursOf(s);
    if (hours === undefined) continue;
    for (const [t, first, last] of s.values) {
      const [hourS, a, b] = [num(t), num(first), num(last)];
      if (hourS === undefined || a === undefined || b === undefined) continue;
      hours.set(hourS, { first: a, last: b, falls: 0, fallsInside: false });
    }
  }
  for (const s of falls) {
    const hours = hoursOf(s);
    if (hours === undefined) continue;
    for (const [t, count] of s.values) {
      const hour = hours.get(num(t) ?? Number.NaN);
      if (hour !== undefined) hour.falls = num(count) ?? 0;
    }
  }
  for (const { hours } of facts.hours.values()) {
    let before: number | undefined;
    for (const [, hour] of [...hours].sort(([a], [b]) => a - b)) {
      const entryFalls = before !== undefined && hour.first < before;
      hour.fallsInside = hour.falls - (entryFalls ? 1 : 0) > 0;
      before = hour.last;
    }
  }
}

function readStored(facts: SpanFacts, found: readonly InfluxqlSeries[]): void {
  for (const s of found) {
    const points = new Map<number, { increase: number; base: number }>();
    for (const [t, increase, base] of s.values) {
      const [hourS, x, b] = [num(t), num(increase), num(base)];
      if (hourS !== undefined && x !== undefined && b !== undefined)
        points.set(hourS, { increase: x, base: b });
    }
    facts.stored.set(Series.keyOf(Series.rollupSeriesOf(s)), points);
  }
}

/** The hours in which some series falls inside, as runs [fromS, toS): read reading by reading. */
export function fallingRuns(facts: SpanFacts): { fromS: number; toS: number }[] {
  const starts = new Set<number>();
  for (const { hours } of facts.hours.values()) {
    for (const [hourS, hour] of hours) if (hour.fallsInside) starts.add(hourS);
  }
  const runs: { fromS: number; toS: number }[] = [];
  for (const s of [...starts].sort((a, b) => a - b)) {
    const last = runs.at(-1);
    if (last !== undefined && last.toS === s) last.toS = s + HOUR_S;
    else runs.push({ fromS: s, toS: s + HOUR_S });
  }
  return runs;
}

/** Folds the span's hours from each series' base; `readings`: those of the hours with a fall inside. */
export function foldSpan(
  bases: Map<Series.SeriesKey, number | undefined>,
  facts: SpanFacts,
  readings: ReadonlyMap<Series.SeriesKey, SeriesReadings>,
): HourPoint[] {
  for (const [key, b] of facts.before) {
    if (counterKindOf(b.tags.type) !== undefined) bases.set(key, b.base);
  }
  const points: HourPoint[] = [];
  for (const [key, { tags, hours }] of facts.hours) {
    const kind = counterKindOf(tags.type);
    if (kind === undefined) continue;
    let base = bases.get(key);
    const series = readings.get(key)?.readings ?? [];
    let at = 0;
    for (const [startS, hour] of [...hours].sort(([a], [b]) => a - b)) {
      let folded: Folded;
      // an hour that never falls has every reading between its first and its last
      let values = [hour.first, hour.last];
      if (hour.fallsInside) {
        values = [];
        while (at < series.length && (series[at]?.s ?? 0) < startS + HOUR_S) {
          const r = series[at++];
          if (r !== undefined && r.s >= startS) values.push(r.value);
        }
        folded = foldReadings(kind, base, values);
      } else {
        folded = foldRising(kind, base, hour.first, hour.last);
      }
      base = folded.base;
      const beyond = values.find((v) => !withinBound(v));
      if (folded.base !== undefined) {
        const { increase } = folded;
        const point = { series: tags, startS, increase, base: folded.base };
        points.push(beyond === undefined ? point : { ...point, beyond });
      }
    }
    bases.set(key, base);
  }
  return points;
}
