/**
 * Hourly increases with InfluxDB doing the reading: per UTC hour and counter series, the sum and
 * the lowest of the steps between consecutive readings (`difference()`: a step lands in the hour
 * of its later reading) and the hour's first and last reading, a few numbers per hour instead of
 * every reading. Only hours holding a step down (a reset) are read reading by reading
 * (raw-increases.ts). The result is increase.ts's: an hour's steps up, plus the step from the
 * last reading before it.
 */
import type { InfluxQuery, InfluxqlSeries } from "../influx/influx-query.js";
import type { Bucket } from "./buckets.js";
import { increaseOver } from "./increase.js";
import { type BucketIncrease, readingsOf } from "./raw-increases.js";
import {
  keyOf,
  type RollupTarget,
  type SeriesKey,
  type SeriesTags,
  selectionOf,
} from "./series.js";

/** What InfluxDB says of one counter series over the hours. */
interface SeriesHours {
  readonly tags: SeriesTags;
  /** The last reading before the first hour. */
  before: number | undefined;
  /** Per hour start: the sum and the lowest of its steps. */
  readonly steps: Map<number, { rise: number; fall: number }>;
  /** Per hour start (hours with readings): its first and last reading. */
  readonly edges: Map<number, { first: number; last: number }>;
}

/** An hour with a reset, to be read reading by reading. */
interface ResetHour {
  readonly series: SeriesTags;
  readonly hour: Bucket;
  /** The last reading before the hour. */
  readonly before: number | undefined;
}

const num = (v: unknown): number | undefined => (typeof v === "number" ? v : undefined);

/**
 * The statements that ask InfluxDB for `target`'s hourly figures over `hours` (consecutive UTC
 * hours): the last reading before them, the steps per hour, the first and last reading per hour.
 * Many targets' statements may go in one request; hourIncreasesFrom reads their results.
 */
export function hourStatements(target: RollupTarget, hours: readonly Bucket[]): string[] {
  const first = hours[0];
  const last = hours.at(-1);
  if (first === undefined || last === undefined || target.counters.length === 0) return [];
  const { from, where, tags } = selectionOf(target);
  const range = `time >= ${first.startS}s AND time < ${last.endS}s`;
  const byHour = `GROUP BY time(1h), ${tags} fill(none)`;
  return [
    `SELECT last("value") FROM ${from} WHERE ${where} AND time < ${first.startS}s GROUP BY ${tags}`,
    `SELECT sum("d"), min("d") FROM (SELECT difference("value") AS "d" FROM ${from} WHERE ${where} AND ${range} GROUP BY ${tags}) WHERE ${range} ${byHour}`,
    `SELECT first("value"), last("value") FROM ${from} WHERE ${where} AND ${range} ${byHour}`,
  ];
}

/**
 * The increase of every counter series of `target` over each of `hours`, from the results of
 * hourStatements (in its order); hours with a reset are read again, reading by reading.
 */
export async function hourIncreasesFrom(
  query: Pick<InfluxQuery, "query">,
  target: RollupTarget,
  hours: readonly Bucket[],
  results: readonly (readonly InfluxqlSeries[])[],
): Promise<BucketIncrease[]> {
  const { seriesOf } = selectionOf(target);
  const [before = [], steps = [], edges = []] = results;
  const all = new Map<SeriesKey, SeriesHours>();
  const each = (
    found: readonly InfluxqlSeries[],
    take: (h: SeriesHours, row: unknown[]) => void,
  ) => {
    for (const s of found) {
      const t = seriesOf(s);
      if (t === undefined) continue;
      const key = keyOf(t);
      let h = all.get(key);
      if (h === undefined) {
        h = { tags: t, before: undefined, steps: new Map(), edges: new Map() };
        all.set(key, h);
      }
      for (const row of s.values) take(h, row);
    }
  };
  each(before, (h, [, value]) => {
    h.before = num(value);
  });
  each(steps, (h, [s, rise, fall]) => {
    const [at, up, down] = [num(s), num(rise), num(fall)];
    if (at !== undefined && up !== undefined && down !== undefined)
      h.steps.set(at, { rise: up, fall: down });
  });
  each(edges, (h, [s, firstValue, lastValue]) => {
    const [at, a, b] = [num(s), num(firstValue), num(lastValue)];
    if (at !== undefined && a !== undefined && b !== undefined)
      h.edges.set(at, { first: a, last: b });
  });
  const out: BucketIncrease[] = [];
  const resets: ResetHour[] = [];
  for (const h of all.values()) {
    let previous = h.before;
    let inRange = false;
    for (const hour of hours) {
      const edge = h.edges.get(hour.startS);
      if (edge === undefined) {
        if (previous !== undefined) out.push({ series: h.tags, startS: hour.startS, increase: 0 });
        continue;
      }
      const step = h.steps.get(hour.startS);
      if (step !== undefined && step.fall < 0) {
        resets.push({ series: h.tags, hour, before: previous });
      } else {
        // the step from the reading before the range is not among the range's differences
        const entry =
          inRange || previous === undefined
            ? 0
            : edge.first >= previous
              ? edge.first - previous
              : edge.first;
        out.push({ series: h.tags, startS: hour.startS, increase: entry + (step?.rise ?? 0) });
      }
      inRange = true;
      previous = edge.last;
    }
  }
  out.push(...(await resetIncreases(query, target, resets)));
  return out;
}

/** The increases of hours with a reset, from their readings. */
async function resetIncreases(
  query: Pick<InfluxQuery, "query">,
  target: RollupTarget,
  resets: readonly ResetHour[],
): Promise<BucketIncrease[]> {
  if (resets.length === 0) return [];
  const { from, where, tags, seriesOf } = selectionOf(target);
  const hours = [...new Set(resets.map((r) => r.hour.startS))];
  const times = hours.map((s) => `(time >= ${s}s AND time < ${s + 3600}s)`).join(" OR ");
  const [found = []] = await query.query([
    `SELECT "value" FROM ${from} WHERE ${where} AND (${times}) GROUP BY ${tags}`,
  ]);
  const readings = new Map<SeriesKey, ReturnType<typeof readingsOf>>();
  for (const s of found) {
    const t = seriesOf(s);
    if (t !== undefined) readings.set(keyOf(t), readingsOf(s));
  }
  return resets.flatMap((r) => {
    const inHour = (readings.get(keyOf(r.series)) ?? []).filter(
      (x) => x.s >= r.hour.startS && x.s < r.hour.endS,
    );
    const before = r.before === undefined ? undefined : { s: r.hour.startS - 1, value: r.before };
    const increase = increaseOver(before, inHour);
    return increase === undefined ? [] : [{ series: r.series, startS: r.hour.startS, increase }];
  });
}
