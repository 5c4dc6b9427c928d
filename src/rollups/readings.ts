/** A target's raw counter readings, read one by one (the hours and split hours that need them). */
import type { InfluxqlSeries } from "../influx/influx-query.js";
import { addReading, counterKindOf } from "./counter-rule.js";
import {
  keyOf,
  type Reading,
  type RollupTarget,
  type SeriesKey,
  type SeriesTags,
  selectionOf,
} from "./series.js";

export interface SeriesReadings {
  readonly tags: SeriesTags;
  readonly readings: Reading[];
}

/** A reading, what it adds by the counter rule, and the base after it. */
export interface ReadingStep {
  readonly s: number;
  readonly value: number;
  readonly add: number;
  readonly base: number;
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
    for (const series of found) {
      const tags = seriesOf(series);
      if (tags === undefined) continue;
      const key = keyOf(tags);
      const entry = out.get(key) ?? { tags, readings: [] };
      out.set(key, entry);
      for (const [s, value] of series.values) {
        if (typeof s === "number" && typeof value === "number") entry.readings.push({ s, value });
      }
    }
  }
  for (const { readings } of out.values()) readings.sort((a, b) => a.s - b.s);
  return out;
}

/** Per counter series, the steps of the readings of a rawStatement result, from its base before. */
export function readingSteps(
  target: RollupTarget,
  before: ReadonlyMap<SeriesKey, { readonly base: number }>,
  raw: readonly InfluxqlSeries[],
): Map<SeriesKey, { readonly tags: SeriesTags; readonly steps: ReadingStep[] }> {
  const out = new Map<SeriesKey, { tags: SeriesTags; steps: ReadingStep[] }>();
  for (const [key, { tags, readings }] of readingsBySeries(target, [raw])) {
    const kind = counterKindOf(tags.type);
    if (kind === undefined) continue;
    let base = before.get(key)?.base;
    const steps = readings.map((r) => {
      const step = addReading(kind, base, r.value);
      base = step.base;
      return { s: r.s, value: r.value, add: step.add, base: step.base };
    });
    out.set(key, { tags, steps });
  }
  return out;
}
