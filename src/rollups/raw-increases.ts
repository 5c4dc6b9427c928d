/**
 * Increases over buckets computed from a counter's raw readings, every one read back: for days
 * that do not start on a UTC hour, for hours holding a reset, and for `audit --rollups` (a check
 * that does not share the hourly path's shortcuts).
 */
import type { InfluxQuery, InfluxqlSeries } from "../influx/influx-query.js";
import type { Bucket } from "./buckets.js";
import { increaseOver, type Reading } from "./increase.js";
import {
  keyOf,
  type RollupTarget,
  type SeriesKey,
  type SeriesTags,
  selectionOf,
} from "./series.js";

/** A counter series' increase over one bucket. */
export interface BucketIncrease {
  readonly series: SeriesTags;
  readonly startS: number;
  readonly increase: number;
}

/** The numeric readings of a result series, in time order. */
export function readingsOf(series: InfluxqlSeries): Reading[] {
  const out: Reading[] = [];
  for (const row of series.values) {
    const [s, value] = row;
    if (typeof s === "number" && typeof value === "number") out.push({ s, value });
  }
  return out.sort((a, b) => a.s - b.s);
}

/** Raw readings over consecutive `buckets`, and each series' last reading before them. */
async function readRaw(
  query: Pick<InfluxQuery, "query">,
  target: RollupTarget,
  buckets: readonly Bucket[],
): Promise<{
  readings: Map<SeriesKey, Reading[]>;
  before: Map<SeriesKey, Reading>;
  tags: Map<SeriesKey, SeriesTags>;
}> {
  const first = buckets[0];
  const last = buckets.at(-1);
  const tags = new Map<SeriesKey, SeriesTags>();
  const readings = new Map<SeriesKey, Reading[]>();
  const before = new Map<SeriesKey, Reading>();
  if (first === undefined || last === undefined) return { readings, before, tags };
  const { from, where, tags: group, seriesOf } = selectionOf(target);
  const [inside = [], earlier = []] = await query.query([
    `SELECT "value" FROM ${from} WHERE ${where} AND time >= ${first.startS}s AND time < ${last.endS}s GROUP BY ${group}`,
    `SELECT last("value") FROM ${from} WHERE ${where} AND time < ${first.startS}s GROUP BY ${group}`,
  ]);
  for (const s of inside) {
    const t = seriesOf(s);
    if (t === undefined) continue;
    const key = keyOf(t);
    tags.set(key, t);
    readings.set(key, readingsOf(s));
  }
  for (const s of earlier) {
    const t = seriesOf(s);
    const [reading] = t === undefined ? [] : readingsOf(s);
    if (t === undefined || reading === undefined) continue;
    const key = keyOf(t);
    tags.set(key, t);
    before.set(key, reading);
  }
  return { readings, before, tags };
}

/** The increase of every series of `target` over each of `buckets` (consecutive), from raw readings. */
export async function increasesOf(
  query: Pick<InfluxQuery, "query">,
  target: RollupTarget,
  buckets: readonly Bucket[],
): Promise<BucketIncrease[]> {
  const { readings, before, tags } = await readRaw(query, target, buckets);
  const out: BucketIncrease[] = [];
  for (const [key, series] of tags) {
    const all = readings.get(key) ?? [];
    let previous = before.get(key);
    let at = 0;
    for (const bucket of buckets) {
      const inBucket: Reading[] = [];
      while (at < all.length && (all[at]?.s ?? 0) < bucket.endS) {
        const reading = all[at++];
        if (reading && reading.s >= bucket.startS) inBucket.push(reading);
      }
      const increase = increaseOver(previous, inBucket);
      if (increase !== undefined) out.push({ series, startS: bucket.startS, increase });
      previous = inBucket.at(-1) ?? previous;
    }
  }
  return out;
}
