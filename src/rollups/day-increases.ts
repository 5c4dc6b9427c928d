/**
 * Daily increases of a zone from the hourly ones stored a moment before: a day is the sum of the
 * UTC hours inside it, plus, for a zone whose days do not start on a UTC hour (Asia/Kolkata), what
 * the readings of the hour split by its start or end add on its side of the split (read reading
 * by reading, from the base stored before that hour).
 */
import type { InfluxqlSeries } from "../influx/influx-query.js";
import type { Bucket } from "./buckets.js";
import { addReading, counterKindOf } from "./counter-rule.js";
import { HOUR_MEASUREMENT, rawStatement, readingsBySeries } from "./hour-increases.js";
import {
  keyOf,
  ROLLUP_SERIES_TAGS,
  type RollupHome,
  type RollupTarget,
  rollupSeriesOf,
  rollupSource,
  type SeriesKey,
  type SeriesTags,
  targetWhere,
} from "./series.js";

/** The measurement of daily increases (tag `tz`: the time zone of the day). */
export const DAY_MEASUREMENT = "rollup_day";

const HOUR_S = 3600;

/** One day's rollup of a series. */
export interface DayPoint {
  readonly series: SeriesTags;
  readonly startS: number;
  readonly increase: number;
}

/** Some days of a target in a zone: the statements that read them, and how to sum their results. */
export interface DayPlan {
  readonly target: RollupTarget;
  readonly zone: string;
  readonly statements: readonly string[];
  /** The days' points from the statements' results (in their order). */
  points(results: readonly (readonly InfluxqlSeries[])[]): DayPoint[];
}

/** What a split hour's readings add before and after the split, per series. */
type SplitAdds = Map<SeriesKey, { tags: SeriesTags; adds: { s: number; add: number }[] }>;

/** The plan of `days` (consecutive) of `target` in `zone`. */
export function dayPlan(
  target: RollupTarget,
  zone: string,
  days: readonly Bucket[],
  home: RollupHome,
): DayPlan {
  const hours = rollupSource(home, HOUR_MEASUREMENT);
  const mine = targetWhere(target);
  const statements: string[] = [];
  const sums = new Map<number, number>();
  const splits = new Map<number, number>();
  const push = (statement: string) => statements.push(statement) - 1;
  for (const day of days) {
    const from = Math.ceil(day.startS / HOUR_S) * HOUR_S;
    const to = Math.floor(day.endS / HOUR_S) * HOUR_S;
    if (from < to) {
      sums.set(
        day.startS,
        push(
          `SELECT sum("increase") FROM ${hours} WHERE ${mine} AND time >= ${from}s AND time < ${to}s GROUP BY ${ROLLUP_SERIES_TAGS}`,
        ),
      );
    }
    for (const edge of [day.startS, day.endS]) {
      const hourS = Math.floor(edge / HOUR_S) * HOUR_S;
      if (edge === hourS || splits.has(hourS)) continue;
      splits.set(
        hourS,
        push(
          `SELECT last("base") FROM ${hours} WHERE ${mine} AND time < ${hourS}s GROUP BY ${ROLLUP_SERIES_TAGS}`,
        ),
      );
      push(rawStatement(target, { fromS: hourS, toS: hourS + HOUR_S }));
    }
  }
  return {
    target,
    zone,
    statements,
    points: (results) => {
      const split = new Map<number, SplitAdds>();
      for (const [hourS, i] of splits) {
        split.set(hourS, splitAdds(target, results[i] ?? [], results[i + 1] ?? []));
      }
      return days.flatMap((day) => {
        const total = new Map<SeriesKey, { series: SeriesTags; increase: number }>();
        const add = (tags: SeriesTags, increase: number) => {
          const key = keyOf(tags);
          const known = total.get(key);
          if (known === undefined) total.set(key, { series: tags, increase });
          else known.increase += increase;
        };
        const at = sums.get(day.startS);
        for (const s of at === undefined ? [] : (results[at] ?? [])) {
          const sum = s.values[0]?.[1];
          if (typeof sum === "number") add(rollupSeriesOf(s), sum);
        }
        for (const edge of [day.startS, day.endS]) {
          const adds = split.get(Math.floor(edge / HOUR_S) * HOUR_S);
          for (const { tags, adds: each } of adds?.values() ?? []) {
            const mine = each.filter((a) => (edge === day.startS ? a.s >= edge : a.s < edge));
            if (mine.length > 0)
              add(
                tags,
                mine.reduce((n, a) => n + a.add, 0),
              );
          }
        }
        return [...total.values()].map((t) => ({ ...t, startS: day.startS }));
      });
    },
  };
}

/** What each reading of a split hour adds, per series, from the base stored before the hour. */
function splitAdds(
  target: RollupTarget,
  bases: readonly InfluxqlSeries[],
  raw: readonly InfluxqlSeries[],
): SplitAdds {
  const before = new Map<SeriesKey, number>();
  for (const s of bases) {
    const base = s.values[0]?.[1];
    if (typeof base === "number") before.set(keyOf(rollupSeriesOf(s)), base);
  }
  const out: SplitAdds = new Map();
  for (const [key, { tags, readings }] of readingsBySeries(target, [raw])) {
    const kind = counterKindOf(tags.type);
    if (kind === undefined) continue;
    let base = before.get(key);
    const adds = readings.map((r) => {
      const step = addReading(kind, base, r.value);
      base = step.base;
      return { s: r.s, add: step.add };
    });
    out.set(key, { tags, adds });
  }
  return out;
}
