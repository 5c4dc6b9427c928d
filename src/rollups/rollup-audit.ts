/** Stored rollups of sampled days checked against the counter rule over the raw readings. */
import type { InfluxqlSeries } from "../influx/influx-query.js";
import { quoteLiteral } from "../influx/influxql.js";
import { DAY_S } from "../util/utc-time.js";
import { baseStatements, basesFrom, type SeriesBase } from "./bases.js";
import { outOfBound, withinBound } from "./bounds.js";
import { type Bucket, dayOf, HOUR_S, hourStart } from "./buckets.js";
import { rawStatement, readingSteps } from "./readings.js";
import type { RecomputeParts } from "./recompute.js";
import { DAY_MEASUREMENT, HOUR_MEASUREMENT } from "./rollup-lines.js";
import * as Series from "./series.js";

/** Relative difference that still counts as equal (float sums in another order). */
const TOLERANCE = 1e-9;

export interface RollupMismatch {
  readonly deviceId: string;
  readonly resourceId: string;
  /** The day's zone; "" for an hour point (a UTC hour). */
  readonly zone: string;
  /** The bucket's start (a day's local midnight, an hour's start) and end, epoch s. */
  readonly dayS: number;
  readonly endS: number;
  readonly series: Series.SeriesTags;
  /** From the raw readings; undefined: no readings, so there should be no rollup. */
  readonly expected: number | undefined;
  /** Undefined: missing. */
  readonly stored: number | undefined;
}

export interface RollupAuditResult {
  /** Rollup points compared (series × day × zone, and series × hour). */
  readonly checked: number;
  readonly mismatches: RollupMismatch[];
}

/** `count` days spread evenly over [fromS, toS] (each a moment inside the day: its UTC noon). */
export function sampleDays(fromS: number, toS: number, count: number): number[] {
  const first = Math.floor(fromS / DAY_S);
  const last = Math.floor(toS / DAY_S);
  const total = last - first + 1;
  const picked = new Set<number>();
  const n = Math.min(count, total);
  for (let i = 0; i < n; i += 1) {
    picked.add(first + (n === 1 ? 0 : Math.round((i * (total - 1)) / (n - 1))));
  }
  return [...picked].map((d) => d * DAY_S + DAY_S / 2);
}

const equal = (a: number, b: number): boolean =>
  Math.abs(a - b) <= TOLERANCE * Math.max(1, Math.abs(a), Math.abs(b));

/** A rollup's figures: its increase, and for an hour the base after it. */
interface Figures {
  readonly increase: number;
  readonly base?: number;
}

/** Per series, what its readings make of a day and of each hour holding them. */
type Expected = Map<
  Series.SeriesKey,
  { series: Series.SeriesTags; day?: Figures; hours: Map<number, Figures> }
>;

type PointsBySeries = Map<
  Series.SeriesKey,
  { series: Series.SeriesTags; points: Map<number, Figures> }
>;

/** The rollups of `target` over the days holding `moments` in each zone, each hour once. */
export async function auditRollups(
  parts: Pick<RecomputeParts, "query" | "zones" | "home">,
  target: Series.RollupTarget,
  moments: readonly number[],
): Promise<RollupAuditResult> {
  const mismatches: RollupMismatch[] = [];
  const hoursSeen = new Set<string>();
  let checked = 0;
  const compare = (
    bucket: { zone: string; startS: number; endS: number },
    series: Series.SeriesTags,
    expected: Figures | undefined,
    stored: Figures | undefined,
  ) => {
    checked += 1;
    const same =
      expected !== undefined &&
      stored !== undefined &&
      equal(expected.increase, stored.increase) &&
      expected.base === stored.base;
    if (same) return;
    mismatches.push({
      deviceId: target.deviceId,
      resourceId: target.resourceId,
      zone: bucket.zone,
      dayS: bucket.startS,
      endS: bucket.endS,
      series,
      expected: expected?.increase,
      stored: stored?.increase,
    });
  };
  for (const zone of parts.zones) {
    const days = new Map(moments.map((s) => [dayOf(zone, s).startS, dayOf(zone, s)]));
    for (const day of days.values()) {
      const results = await parts.query.query(auditStatements(target, zone, day, parts.home));
      const [raw = [], storedDays = [], storedHours = []] = results.slice(2);
      const want = fromReadings(target, day, basesFrom(target, results.slice(0, 2)), raw);
      const dayPoints = storedPoints(storedDays);
      for (const key of new Set([...want.keys(), ...dayPoints.keys()])) {
        const series = want.get(key)?.series ?? dayPoints.get(key)?.series;
        if (series === undefined) continue;
        compare(
          { zone, startS: day.startS, endS: day.endS },
          series,
          want.get(key)?.day,
          dayPoints.get(key)?.points.get(day.startS),
        );
      }
      const hourPoints = storedPoints(storedHours);
      for (const key of new Set([...want.keys(), ...hourPoints.keys()])) {
        const series = want.get(key)?.series ?? hourPoints.get(key)?.series;
        if (series === undefined) continue;
        const expected = want.get(key)?.hours ?? new Map<number, Figures>();
        const stored = hourPoints.get(key)?.points ?? new Map<number, Figures>();
        for (const startS of new Set([...expected.keys(), ...stored.keys()])) {
          if (hoursSeen.has(`${key} ${startS}`)) continue;
          hoursSeen.add(`${key} ${startS}`);
          const hour = { zone: "", startS, endS: startS + HOUR_S };
          compare(hour, series, expected.get(startS), stored.get(startS));
        }
      }
    }
  }
  return { checked, mismatches };
}

/** The statements of one day: bases before it, raw readings, stored day and hour points. */
function auditStatements(
  target: Series.RollupTarget,
  zone: string,
  day: Bucket,
  home: Series.RollupHome,
): string[] {
  const fromS = hourStart(day.startS);
  const toS = hourStart(day.endS - 1) + HOUR_S;
  const mine = Series.targetWhere(target);
  const hours = Series.rollupSource(home, HOUR_MEASUREMENT);
  return [
    ...baseStatements(target, fromS, home),
    rawStatement(target, { fromS, toS }),
    `SELECT "increase" FROM ${Series.rollupSource(home, DAY_MEASUREMENT)} WHERE ${mine} AND "tz" = ${quoteLiteral(zone)} AND time >= ${day.startS}s AND time < ${day.endS}s GROUP BY ${Series.ROLLUP_SERIES_TAGS}`,
    `SELECT "increase", "base" FROM ${hours} WHERE ${mine} AND time >= ${fromS}s AND time < ${toS}s GROUP BY ${Series.ROLLUP_SERIES_TAGS}`,
  ];
}

/**
 * Per series: what its readings make of the day and each hour, as recompute does: an hour beyond
 * the bound has no point, and a day sums the whole hours that have one plus its split hours' part.
 */
function fromReadings(
  target: Series.RollupTarget,
  day: Bucket,
  before: ReadonlyMap<Series.SeriesKey, SeriesBase>,
  raw: readonly InfluxqlSeries[],
): Expected {
  const out: Expected = new Map();
  for (const [key, { tags, steps }] of readingSteps(target, before, raw)) {
    if (steps.length === 0) continue;
    const hours = new Map<number, { increase: number; base: number; beyond?: number }>();
    for (const step of steps) {
      const hour = hours.get(hourStart(step.s)) ?? { increase: 0, base: step.base };
      hour.increase += step.add;
      hour.base = step.base;
      if (hour.beyond === undefined && !withinBound(step.value)) hour.beyond = step.value;
      hours.set(hourStart(step.s), hour);
    }
    const kept = new Map<number, Figures>();
    for (const [startS, h] of hours) {
      if (outOfBound(h.increase, h.base, h.beyond) === undefined)
        kept.set(startS, { increase: h.increase, base: h.base });
    }
    let dayIncrease: number | undefined;
    for (const step of steps) {
      if (step.s < day.startS || step.s >= day.endS) continue;
      const hourS = hourStart(step.s);
      const split = hourS < day.startS || hourS + HOUR_S > day.endS;
      if (split || kept.has(hourS)) dayIncrease = (dayIncrease ?? 0) + step.add;
    }
    const dayKept = dayIncrease !== undefined && outOfBound(dayIncrease) === undefined;
    out.set(key, {
      series: tags,
      ...(dayKept && dayIncrease !== undefined ? { day: { increase: dayIncrease } } : {}),
      hours: kept,
    });
  }
  return out;
}

/** Stored rollup points per series, per bucket start: the increase (and an hour's base). */
function storedPoints(found: readonly InfluxqlSeries[]): PointsBySeries {
  const out: PointsBySeries = new Map();
  for (const s of found) {
    const series = Series.rollupSeriesOf(s);
    const points = new Map<number, Figures>();
    for (const [t, increase, base] of s.values) {
      if (typeof t !== "number" || typeof increase !== "number") continue;
      points.set(t, typeof base === "number" ? { increase, base } : { increase });
    }
    out.set(Series.keyOf(series), { series, points });
  }
  return out;
}
