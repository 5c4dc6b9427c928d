/**
 * Recomputing a device resource's rollups over a range of hours from what InfluxDB stores, never
 * from a running sum: the increase of every counter series per UTC hour (hour-increases.ts),
 * then per day of each configured time zone (the sum of the day's hourly increases, stored a
 * moment before; from the raw readings for a zone whose days do not start on a UTC hour). The
 * same range recomputed writes the same points.
 */
import { type InfluxQuery, quoteIdentifier, quoteLiteral } from "../influx/influx-query.js";
import type { PointSink } from "../influx/point-sink.js";
import { escapeMeasurement, escapeTag, lineBatch } from "../transform/line-protocol.js";
import { type Bucket, bucketsTouched, dayOf, hourOf, localDate } from "./buckets.js";
import { hourIncreases } from "./hour-increases.js";
import { type BucketIncrease, increasesOf } from "./raw-increases.js";
import type { RollupTarget, SeriesTags } from "./series.js";

/** The measurement of hourly increases. */
export const HOUR_MEASUREMENT = "rollup_hour";
/** The measurement of daily increases (tag `tz`: the time zone of the day). */
export const DAY_MEASUREMENT = "rollup_day";

/** What recomputing needs. */
export interface RecomputeParts {
  readonly query: Pick<InfluxQuery, "query">;
  readonly sink: Pick<PointSink, "write">;
  /** ROLLUP_TIME_ZONES. */
  readonly zones: readonly string[];
}

/** Hours read from InfluxDB at a time. */
const SPAN_HOURS = 24;
/** Days summed (or read) at a time: one request's statements. */
const SPAN_DAYS = 31;

/**
 * Writes the rollups of `target` that readings in [fromS, toS] change: every UTC hour holding
 * them (and the one after), then every day of each zone holding those hours. Returns the points
 * written.
 */
export async function recomputeRollups(
  parts: RecomputeParts,
  target: RollupTarget,
  fromS: number,
  toS: number,
): Promise<number> {
  if (target.counters.length === 0) return 0;
  const hours = bucketsTouched(hourOf, fromS, toS);
  let points = 0;
  for (let i = 0; i < hours.length; i += SPAN_HOURS) {
    const span = hours.slice(i, i + SPAN_HOURS);
    const increases = await hourIncreases(parts.query, target, span);
    points += await writeIncreases(parts, target, increases, HOUR_MEASUREMENT, "");
  }
  const first = hours[0];
  const last = hours.at(-1);
  if (first === undefined || last === undefined) return points;
  for (const zone of parts.zones) {
    const days = bucketsTouched((s) => dayOf(zone, s), first.startS, last.endS - 1).filter(
      (day) => day.startS < last.endS,
    );
    const onHours = days.every((d) => d.startS % 3600 === 0 && d.endS % 3600 === 0);
    for (let i = 0; i < days.length; i += SPAN_DAYS) {
      const span = days.slice(i, i + SPAN_DAYS);
      points += onHours
        ? await writeDaySums(parts, target, span, zone)
        : await writeIncreases(
            parts,
            target,
            await increasesOf(parts.query, target, span),
            DAY_MEASUREMENT,
            zone,
          );
    }
  }
  return points;
}

/** Increases over buckets written as `measurement` (a day: of `zone`). */
async function writeIncreases(
  parts: RecomputeParts,
  target: RollupTarget,
  increases: readonly BucketIncrease[],
  measurement: string,
  zone: string,
): Promise<number> {
  const lines = increases.map((x) =>
    rollupLine(measurement, target, x.series, zone, x.increase, x.startS),
  );
  if (lines.length > 0) await parts.sink.write(lineBatch(lines));
  return lines.length;
}

/** Each of `days` as the sum of its hourly increases (stored before), written. */
async function writeDaySums(
  parts: RecomputeParts,
  target: RollupTarget,
  days: readonly Bucket[],
  zone: string,
): Promise<number> {
  const where = `"device_id" = ${quoteLiteral(target.deviceId)} AND "resource_id" = ${quoteLiteral(target.resourceId)}`;
  const results = await parts.query.query(
    days.map(
      (day) =>
        `SELECT sum("increase") FROM ${quoteIdentifier(HOUR_MEASUREMENT)} WHERE ${where} AND time >= ${day.startS}s AND time < ${day.endS}s GROUP BY "measurement", "values_id", "unit", "type"`,
    ),
  );
  const lines: string[] = [];
  results.forEach((series, i) => {
    const day = days[i];
    if (day === undefined) return;
    for (const s of series) {
      const [row] = s.values;
      const sum = row?.[1];
      if (typeof sum !== "number") continue;
      const t: SeriesTags = {
        measurement: s.tags?.measurement ?? "",
        valuesId: s.tags?.values_id ?? "",
        unit: s.tags?.unit ?? "",
        type: s.tags?.type ?? "",
      };
      lines.push(rollupLine(DAY_MEASUREMENT, target, t, zone, sum, day.startS));
    }
  });
  if (lines.length > 0) await parts.sink.write(lineBatch(lines));
  return lines.length;
}

/** One rollup point: the increase of a series over the bucket starting at `startS`. */
function rollupLine(
  measurement: string,
  target: RollupTarget,
  t: SeriesTags,
  zone: string,
  increase: number,
  startS: number,
): string {
  // a day carries its local month and year: month and year panels sum the days of their own
  const date = zone === "" ? "" : localDate(zone, startS);
  const tags =
    `,device_id=${escapeTag(target.deviceId)},measurement=${escapeTag(t.measurement)}` +
    (zone === "" ? "" : `,month=${date.slice(0, 7)}`) +
    `,resource_id=${escapeTag(target.resourceId)},type=${escapeTag(t.type)}` +
    (zone === "" ? "" : `,tz=${escapeTag(zone)}`) +
    `,unit=${escapeTag(t.unit)},values_id=${escapeTag(t.valuesId)}` +
    (zone === "" ? "" : `,year=${date.slice(0, 4)}`);
  return `${escapeMeasurement(measurement)}${tags} increase=${increase} ${startS}`;
}
