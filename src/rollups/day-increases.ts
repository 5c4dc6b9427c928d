/**
 * Daily increases of a zone: the sum of the stored UTC hours inside the day, plus what the readings
 * of an hour split by its start or end (Asia/Kolkata) add on its side.
 */
import type { InfluxqlSeries } from "../influx/influx-query.js";
import { baseStatements, basesFrom } from "./bases.js";
import { type Bucket, HOUR_S, hourStart } from "./buckets.js";
import { type ReadingStep, rawStatement, readingSteps } from "./readings.js";
import { HOUR_MEASUREMENT } from "./rollup-lines.js";
import * as Series from "./series.js";

export interface DayPoint {
  readonly series: Series.SeriesTags;
  readonly startS: number;
  readonly increase: number;
}

/** A day of a target in a zone: the statements that read it, and how to sum their results. */
export interface DayPlan {
  readonly target: Series.RollupTarget;
  readonly zone: string;
  readonly statements: readonly string[];
  /** The day's points from the statements' results (in their order). */
  points(results: readonly (readonly InfluxqlSeries[])[]): DayPoint[];
}

/** What each reading of a split hour adds, per series. */
type SplitSteps = ReadonlyMap<
  Series.SeriesKey,
  { readonly tags: Series.SeriesTags; readonly steps: ReadingStep[] }
>;

export function dayPlan(
  target: Series.RollupTarget,
  zone: string,
  day: Bucket,
  home: Series.RollupHome,
): DayPlan {
  const statements: string[] = [];
  const from = Math.ceil(day.startS / HOUR_S) * HOUR_S;
  const to = hourStart(day.endS);
  if (from < to) {
    statements.push(
      `SELECT sum("increase") FROM ${Series.rollupSource(home, HOUR_MEASUREMENT)} WHERE ${Series.targetWhere(target)} AND time >= ${from}s AND time < ${to}s GROUP BY ${Series.ROLLUP_SERIES_TAGS}`,
    );
  }
  // the index of each split hour's first statement (bases, then readings)
  const splits = new Map<number, number>();
  for (const hourS of splitHours(day)) {
    splits.set(hourS, statements.length);
    statements.push(
      ...baseStatements(target, hourS, home),
      rawStatement(target, { fromS: hourS, toS: hourS + HOUR_S }),
    );
  }
  return {
    target,
    zone,
    statements,
    points: (results) => {
      const split = new Map<number, SplitSteps>();
      for (const [hourS, i] of splits) {
        const before = basesFrom(target, results.slice(i, i + 2));
        split.set(hourS, readingSteps(target, before, results[i + 2] ?? []));
      }
      return dayPoints(day, from < to ? results[0] : undefined, split);
    },
  };
}

/** The hours a day's start or end splits (a zone whose days do not start on a UTC hour). */
function splitHours(day: Bucket): number[] {
  return [day.startS, day.endS].filter((edge) => edge % HOUR_S !== 0).map(hourStart);
}

/** A day's points: the sum of its whole hours, plus what its split hours add on its side. */
function dayPoints(
  day: Bucket,
  sums: readonly InfluxqlSeries[] | undefined,
  split: ReadonlyMap<number, SplitSteps>,
): DayPoint[] {
  const total = new Map<Series.SeriesKey, { series: Series.SeriesTags; increase: number }>();
  const add = (tags: Series.SeriesTags, increase: number) => {
    const key = Series.keyOf(tags);
    const known = total.get(key);
    if (known === undefined) total.set(key, { series: tags, increase });
    else known.increase += increase;
  };
  for (const s of sums ?? []) {
    const sum = s.values[0]?.[1];
    if (typeof sum === "number") add(Series.rollupSeriesOf(s), sum);
  }
  for (const edge of [day.startS, day.endS]) {
    for (const { tags, steps } of split.get(hourStart(edge))?.values() ?? []) {
      const inDay = steps.filter((a) => (edge === day.startS ? a.s >= edge : a.s < edge));
      const added = inDay.reduce((n, a) => n + a.add, 0);
      if (inDay.length > 0) add(tags, added);
    }
  }
  return [...total.values()].map((t) => ({ ...t, startS: day.startS }));
}
