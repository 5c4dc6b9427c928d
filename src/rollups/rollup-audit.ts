/**
 * Checking stored daily rollups against the raw readings: for sampled days, each counter's
 * increase computed from the raw points (straight from the readings, not from the hourly
 * rollups) against the `rollup_day` point stored for it. A missing, extra or different point is
 * a mismatch.
 */
import { type InfluxQuery, quoteIdentifier, quoteLiteral } from "../influx/influx-query.js";
import { type Bucket, dayOf } from "./buckets.js";
import { increasesOf } from "./raw-increases.js";
import { DAY_MEASUREMENT } from "./recompute.js";
import {
  keyOf,
  type RollupTarget,
  rollupSeriesOf,
  type SeriesTags,
  targetWhere,
} from "./series.js";

/** Relative difference that still counts as equal (float sums in another order). */
const TOLERANCE = 1e-9;

/** A stored daily rollup that differs from the raw readings (or is missing, or extra). */
export interface RollupMismatch {
  readonly deviceId: string;
  readonly resourceId: string;
  readonly zone: string;
  /** The day's start (local midnight) and end, epoch s. */
  readonly dayS: number;
  readonly endS: number;
  readonly series: SeriesTags;
  /** From the raw readings; undefined: no readings, so there should be no rollup. */
  readonly expected: number | undefined;
  /** As stored; undefined: missing. */
  readonly stored: number | undefined;
}

/** What the check looked at. */
export interface RollupAuditResult {
  /** Day rollups compared (series × day × zone). */
  readonly checked: number;
  readonly mismatches: RollupMismatch[];
}

/** `count` days spread evenly over [fromS, toS] (each a moment inside the day: its UTC noon). */
export function sampleDays(fromS: number, toS: number, count: number): number[] {
  const DAY_S = 86_400;
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

/**
 * The daily rollups of `target` over the days holding `moments` in each of `zones`, compared
 * with the raw readings.
 */
export async function auditRollups(
  parts: { readonly query: Pick<InfluxQuery, "query">; readonly zones: readonly string[] },
  target: RollupTarget,
  moments: readonly number[],
): Promise<RollupAuditResult> {
  let checked = 0;
  const mismatches: RollupMismatch[] = [];
  for (const zone of parts.zones) {
    for (const day of new Map(
      moments.map((s) => [dayOf(zone, s).startS, dayOf(zone, s)]),
    ).values()) {
      const expected = new Map(
        (await increasesOf(parts.query, target, [day])).map((x) => [keyOf(x.series), x] as const),
      );
      const stored = await storedDay(parts.query, target, zone, day);
      for (const key of new Set([...expected.keys(), ...stored.keys()])) {
        const want = expected.get(key);
        const have = stored.get(key);
        const series = want?.series ?? have?.series;
        if (series === undefined) continue;
        checked += 1;
        if (want && have && equal(want.increase, have.increase)) continue;
        mismatches.push({
          deviceId: target.deviceId,
          resourceId: target.resourceId,
          zone,
          dayS: day.startS,
          endS: day.endS,
          series,
          expected: want?.increase,
          stored: have?.increase,
        });
      }
    }
  }
  return { checked, mismatches };
}

/** The `rollup_day` points of a device resource's day in `zone`, by series. */
async function storedDay(
  query: Pick<InfluxQuery, "query">,
  target: RollupTarget,
  zone: string,
  day: Bucket,
): Promise<Map<string, { series: SeriesTags; increase: number }>> {
  const where =
    targetWhere(target) +
    ` AND "tz" = ${quoteLiteral(zone)} AND time >= ${day.startS}s AND time < ${day.endS}s`;
  const [found = []] = await query.query([
    `SELECT "increase" FROM ${quoteIdentifier(DAY_MEASUREMENT)} WHERE ${where} GROUP BY "measurement", "values_id", "unit", "type"`,
  ]);
  const out = new Map<string, { series: SeriesTags; increase: number }>();
  for (const s of found) {
    const increase = s.values[0]?.[1];
    if (typeof increase !== "number") continue;
    const series = rollupSeriesOf(s);
    out.set(keyOf(series), { series, increase });
  }
  return out;
}
