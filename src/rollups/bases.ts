/** Each series' base before an instant: the last stored hour's `base`, or a raw reading after it. */
import type { InfluxqlSeries } from "../influx/influx-query.js";
import { HOUR_S } from "./buckets.js";
import { HOUR_MEASUREMENT } from "./rollup-lines.js";
import * as Series from "./series.js";

export interface SeriesBase {
  readonly tags: Series.SeriesTags;
  readonly base: number;
}

/** The two statements whose results basesFrom reads: the stored bases, the last raw readings. */
export function baseStatements(
  target: Series.RollupTarget,
  beforeS: number,
  home: Series.RollupHome,
): string[] {
  const { from, where, tags } = Series.selectionOf(target);
  return [
    `SELECT last("base") FROM ${Series.rollupSource(home, HOUR_MEASUREMENT)} WHERE ${Series.targetWhere(target)} AND time < ${beforeS}s GROUP BY ${Series.ROLLUP_SERIES_TAGS}`,
    `SELECT last("value") FROM ${from} WHERE ${where} AND time < ${beforeS}s GROUP BY ${tags}`,
  ];
}

/** Each series' base from the results of baseStatements (in their order). */
export function basesFrom(
  target: Series.RollupTarget,
  [stored = [], raw = []]: readonly (readonly InfluxqlSeries[])[],
): Map<Series.SeriesKey, SeriesBase> {
  const hours = rowByKey(stored, Series.rollupSeriesOf);
  const readings = rowByKey(raw, Series.selectionOf(target).seriesOf);
  const out = new Map<Series.SeriesKey, SeriesBase>();
  for (const key of new Set([...hours.keys(), ...readings.keys()])) {
    const h = hours.get(key);
    const r = readings.get(key);
    // a stored base holds from its hour's end
    const at = h !== undefined && (r === undefined || r.s < h.s + HOUR_S) ? h : r;
    if (at !== undefined) out.set(key, { tags: at.tags, base: at.value });
  }
  return out;
}

/** Per series: the one (time, value) row of a `last()` or `first()` result. */
export function rowByKey(
  found: readonly InfluxqlSeries[],
  tagsOf: (s: InfluxqlSeries) => Series.SeriesTags | undefined,
): Map<Series.SeriesKey, Series.Reading & { readonly tags: Series.SeriesTags }> {
  const out = new Map<Series.SeriesKey, Series.Reading & { tags: Series.SeriesTags }>();
  for (const series of found) {
    const tags = tagsOf(series);
    const [row] = series.values;
    const [s, value] = [row?.[0], row?.[1]];
    if (tags !== undefined && typeof s === "number" && typeof value === "number")
      out.set(Series.keyOf(tags), { tags, s, value });
  }
  return out;
}
