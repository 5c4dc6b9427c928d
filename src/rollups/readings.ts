/** A target's raw counter readings, read one by one (the hours and split hours that need them). */
import type { InfluxqlSeries } from "../influx/influx-query.js";
import {
  keyOf,
  type Reading,
  type RollupTarget,
  readingsOf,
  type SeriesKey,
  type SeriesTags,
  selectionOf,
} from "./series.js";

/** A series' readings, in time order. */
export interface SeriesReadings {
  readonly tags: SeriesTags;
  readonly readings: Reading[];
}

/** The statement that reads the target's readings in [fromS, toS) one by one. */
export function rawStatement(target: RollupTarget, run: { fromS: number; toS: number }): string {
  const { from, where, tags } = selectionOf(target);
  return `SELECT "value" FROM ${from} WHERE ${where} AND time >= ${run.fromS}s AND time < ${run.toS}s GROUP BY ${tags}`;
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
