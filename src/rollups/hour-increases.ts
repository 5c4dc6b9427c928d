/**
 * Hourly increases with InfluxDB doing the reading: per UTC hour and counter series a few numbers
 * (the hour's first and last reading, how many it holds, how many of the steps between
 * consecutive readings fall) instead of every reading. An hour whose readings never fall after
 * its first one is folded from its first and last reading (counter-rule.ts `foldRising`); only
 * an hour with a fall inside is read reading by reading. Each series carries its base from hour
 * to hour; a span that starts a range reads it from the hour stored before (the `base` field).
 *
 * No statement ORs time ranges (InfluxQL answers such a WHERE with nothing): each is one range.
 */
import type { InfluxqlSeries } from "../influx/influx-query.js";
import {
  type CounterKind,
  counterKindOf,
  type Folded,
  foldReadings,
  foldRising,
} from "./counter-rule.js";
import {
  keyOf,
  type Reading,
  ROLLUP_SERIES_TAGS,
  type RollupHome,
  type RollupTarget,
  readingsOf,
  rollupSeriesOf,
  rollupSource,
  type SeriesKey,
  type SeriesTags,
  selectionOf,
  targetWhere,
} from "./series.js";

/** The measurement of hourly increases (field `increase`, and `base`: the series' base at its end). */
export const HOUR_MEASUREMENT = "rollup_hour";

const HOUR_S = 3600;

/** Consecutive UTC hours of a target recomputed together: [fromS, toS), whole hours. */
export interface HourSpan {
  readonly target: RollupTarget;
  readonly fromS: number;
  readonly toS: number;
  /** The span starts a range: each series' base before it is read from InfluxDB. */
  readonly lookup: boolean;
  /** Each series' next reading at or after toS is read (the span ends a range). */
  readonly next: boolean;
  /** The hour points stored over the span are read (before they are written again). */
  readonly stored: boolean;
}

/** A series as a recompute carries it from hour to hour. */
export interface SeriesState {
  readonly tags: SeriesTags;
  readonly kind: CounterKind;
  base: number | undefined;
}

/** One hour's rollup of a series. */
export interface HourPoint {
  readonly series: SeriesTags;
  readonly startS: number;
  readonly increase: number;
  /** The base after the hour: the next hour's increase counts from it. */
  readonly base: number;
}

/** What InfluxDB says of an hour of a series. */
interface HourFacts {
  first: number;
  last: number;
  readings: number;
  /** Steps between consecutive readings of the span landing in this hour (at its readings). */
  steps: number;
  rising: number;
  firstStep: number | undefined;
}

/** What InfluxDB says of a span, before any single reading is read. */
export interface SpanFacts {
  /** lookup: the base before the span, per series (stored, or the last raw reading). */
  readonly before: Map<SeriesKey, { readonly tags: SeriesTags; readonly base: number }>;
  /** Per series, per hour start: the hour's figures. */
  readonly hours: Map<
    SeriesKey,
    { readonly tags: SeriesTags; readonly hours: Map<number, HourFacts> }
  >;
  /** `stored`: per series, per hour start, the point stored before this recompute wrote. */
  readonly stored: Map<
    SeriesKey,
    Map<number, { readonly increase: number; readonly base: number }>
  >;
  /** `next`: per series, its first reading at or after the span's end (epoch s). */
  readonly next: Map<SeriesKey, number>;
}

const num = (v: unknown): number | undefined => (typeof v === "number" ? v : undefined);

/** The statements that ask InfluxDB about `span` (readSpan reads their results, in order). */
export function spanStatements(span: HourSpan, home: RollupHome): string[] {
  const { target, fromS, toS } = span;
  if (target.counters.length === 0) return [];
  const { from, where, tags } = selectionOf(target);
  const hours = rollupSource(home, HOUR_MEASUREMENT);
  const mine = targetWhere(target);
  const range = `time >= ${fromS}s AND time < ${toS}s`;
  const byHour = `GROUP BY time(1h), ${tags} fill(none)`;
  const statements: string[] = [];
  if (span.lookup) {
    statements.push(
      `SELECT last("base") FROM ${hours} WHERE ${mine} AND time < ${fromS}s GROUP BY ${ROLLUP_SERIES_TAGS}`,
      `SELECT last("value") FROM ${from} WHERE ${where} AND time < ${fromS}s GROUP BY ${tags}`,
    );
  }
  statements.push(
    `SELECT first("value"), last("value"), count("value") FROM ${from} WHERE ${where} AND ${range} ${byHour}`,
    `SELECT count("d"), count("u"), first("d") FROM (SELECT difference("value") AS "d", non_negative_difference("value") AS "u" FROM ${from} WHERE ${where} AND ${range} GROUP BY ${tags}) WHERE ${range} ${byHour}`,
  );
  if (span.stored) {
    statements.push(
      `SELECT "increase", "base" FROM ${hours} WHERE ${mine} AND ${range} GROUP BY ${ROLLUP_SERIES_TAGS}`,
    );
  }
  if (span.next) {
    statements.push(
      `SELECT first("value") FROM ${from} WHERE ${where} AND time >= ${toS}s GROUP BY ${tags}`,
    );
  }
  return statements;
}

/** The facts of `span` from the results of its spanStatements (in their order). */
export function readSpan(
  span: HourSpan,
  results: readonly (readonly InfluxqlSeries[])[],
): SpanFacts {
  const { seriesOf } = selectionOf(span.target);
  const at = { i: 0 };
  const take = () => results[at.i++] ?? [];
  const facts: SpanFacts = {
    before: new Map(),
    hours: new Map(),
    stored: new Map(),
    next: new Map(),
  };
  if (span.lookup) {
    const stored = lastByKey(take(), rollupSeriesOf);
    const raw = lastByKey(take(), seriesOf);
    for (const key of new Set([...stored.keys(), ...raw.keys()])) {
      const s = stored.get(key);
      const r = raw.get(key);
      // a stored base holds from its hour's end; a raw reading after that hour was never rolled
      // up (rollups off when it was written): the series goes on from that reading
      const base = s !== undefined && (r === undefined || r.s < s.s + HOUR_S) ? s : r;
      if (base !== undefined) facts.before.set(key, { tags: base.tags, base: base.value });
    }
  }
  const hoursOf = (tags: SeriesTags) => {
    const key = keyOf(tags);
    let entry = facts.hours.get(key);
    if (entry === undefined) {
      entry = { tags, hours: new Map() };
      facts.hours.set(key, entry);
    }
    return entry.hours;
  };
  for (const s of take()) {
    const tags = seriesOf(s);
    if (tags === undefined) continue;
    const hours = hoursOf(tags);
    for (const [t, first, last, count] of s.values) {
      const [hourS, a, b, n] = [num(t), num(first), num(last), num(count)];
      if (hourS === undefined || a === undefined || b === undefined || n === undefined) continue;
      hours.set(hourS, {
        first: a,
        last: b,
        readings: n,
        steps: 0,
        rising: 0,
        firstStep: undefined,
      });
    }
  }
  for (const s of take()) {
    const tags = seriesOf(s);
    if (tags === undefined) continue;
    const hours = hoursOf(tags);
    for (const [t, steps, rising, firstStep] of s.values) {
      const hour = hours.get(num(t) ?? Number.NaN);
      if (hour === undefined) continue;
      hour.steps = num(steps) ?? 0;
      hour.rising = num(rising) ?? 0;
      hour.firstStep = num(firstStep);
    }
  }
  if (span.stored) {
    for (const s of take()) {
      const points = new Map<number, { increase: number; base: number }>();
      for (const [t, increase, base] of s.values) {
        const [hourS, x, b] = [num(t), num(increase), num(base)];
        if (hourS !== undefined && x !== undefined && b !== undefined)
          points.set(hourS, { increase: x, base: b });
      }
      facts.stored.set(keyOf(rollupSeriesOf(s)), points);
    }
  }
  if (span.next) for (const [key, r] of lastByKey(take(), seriesOf)) facts.next.set(key, r.s);
  return facts;
}

/** Per series: the one (time, value) row of a `last()`/`first()` result. */
function lastByKey(
  found: readonly InfluxqlSeries[],
  tagsOf: (s: InfluxqlSeries) => SeriesTags | undefined,
): Map<SeriesKey, { readonly tags: SeriesTags; readonly s: number; readonly value: number }> {
  const out = new Map<SeriesKey, { tags: SeriesTags; s: number; value: number }>();
  for (const series of found) {
    const tags = tagsOf(series);
    const [row] = series.values;
    const s = num(row?.[0]);
    const value = num(row?.[1]);
    if (tags !== undefined && s !== undefined && value !== undefined)
      out.set(keyOf(tags), { tags, s, value });
  }
  return out;
}

/** True when a reading of the hour falls below the one before it, inside the hour. */
function fallsInside(hour: HourFacts): boolean {
  // the step into the hour's first reading is among its steps when the span holds a reading before
  const entry = hour.steps === hour.readings;
  const entryFalls = entry && hour.firstStep !== undefined && hour.firstStep < 0;
  return hour.steps - hour.rising - (entryFalls ? 1 : 0) > 0;
}

/**
 * The hours of the span, as runs [fromS, toS) of consecutive hours, in which some series falls
 * inside an hour: those are read reading by reading (rawStatement).
 */
export function fallingRuns(facts: SpanFacts): { fromS: number; toS: number }[] {
  const starts = new Set<number>();
  for (const { hours } of facts.hours.values()) {
    for (const [hourS, hour] of hours) if (fallsInside(hour)) starts.add(hourS);
  }
  const runs: { fromS: number; toS: number }[] = [];
  for (const s of [...starts].sort((a, b) => a - b)) {
    const last = runs.at(-1);
    if (last !== undefined && last.toS === s) last.toS = s + HOUR_S;
    else runs.push({ fromS: s, toS: s + HOUR_S });
  }
  return runs;
}

/** The statement that reads the target's readings over `run` one by one. */
export function rawStatement(target: RollupTarget, run: { fromS: number; toS: number }): string {
  const { from, where, tags } = selectionOf(target);
  return `SELECT "value" FROM ${from} WHERE ${where} AND time >= ${run.fromS}s AND time < ${run.toS}s GROUP BY ${tags}`;
}

/** A series' readings, in time order. */
export interface SeriesReadings {
  readonly tags: SeriesTags;
  readonly readings: Reading[];
}

/** Per series, the readings of rawStatement results. */
export function readingsBySeries(
  target: RollupTarget,
  results: readonly (readonly InfluxqlSeries[])[],
): Map<SeriesKey, SeriesReadings> {
  const { seriesOf } = selectionOf(target);
  const out = new Map<SeriesKey, SeriesReadings>();
  for (const found of results) {
    for (const s of found) {
      const tags = seriesOf(s);
      if (tags === undefined) continue;
      const key = keyOf(tags);
      let entry = out.get(key);
      if (entry === undefined) {
        entry = { tags, readings: [] };
        out.set(key, entry);
      }
      entry.readings.push(...readingsOf(s));
    }
  }
  for (const { readings } of out.values()) readings.sort((a, b) => a.s - b.s);
  return out;
}

/**
 * The span's hours folded, series by series, hour by hour, from each series' base in `states`
 * (set from facts.before first when the span looked it up), which is left at the span's end.
 * `readings`: the readings of the hours with a fall inside (rawStatement).
 */
export function foldSpan(
  states: Map<SeriesKey, SeriesState>,
  facts: SpanFacts,
  readings: ReadonlyMap<SeriesKey, SeriesReadings>,
): HourPoint[] {
  for (const [key, b] of facts.before) {
    const kind = counterKindOf(b.tags.type);
    if (kind !== undefined) states.set(key, { tags: b.tags, kind, base: b.base });
  }
  const points: HourPoint[] = [];
  for (const [key, { tags, hours }] of facts.hours) {
    const kind = counterKindOf(tags.type);
    if (kind === undefined) continue;
    let state = states.get(key);
    if (state === undefined) {
      state = { tags, kind, base: undefined };
      states.set(key, state);
    }
    const series = readings.get(key)?.readings ?? [];
    let at = 0;
    for (const startS of [...hours.keys()].sort((a, b) => a - b)) {
      const hour = hours.get(startS);
      if (hour === undefined) continue;
      let folded: Folded;
      if (fallsInside(hour)) {
        const values: number[] = [];
        while (at < series.length && (series[at]?.s ?? 0) < startS + HOUR_S) {
          const r = series[at++];
          if (r !== undefined && r.s >= startS) values.push(r.value);
        }
        folded = foldReadings(kind, state.base, values);
      } else {
        folded = foldRising(kind, state.base, hour.first, hour.last);
      }
      state.base = folded.base;
      if (folded.base !== undefined)
        points.push({ series: tags, startS, increase: folded.increase, base: folded.base });
    }
  }
  return points;
}
