/** The `rollup_day` points a report needs, read in one InfluxQL request. */
import { z } from "zod";
import { type InfluxQuery, InfluxQueryError } from "../influx/influx-query.js";
import { quoteLiteral } from "../influx/influxql.js";
import { localDate, startOfLocalDate } from "../rollups/buckets.js";
import { type RollupHome, rollupSource } from "../rollups/series.js";
import { excerpt } from "../util/text.js";
import { isoSeconds } from "../util/utc-time.js";
import { type Covered, METRICS, plusDays, type RollupDay } from "./report.js";

/**
 * The statement: every report counter's day points of `tz` in kWh, one series per counter, of
 * the local dates `covered.from` to `covered.to` exactly (a day point is at its day's start).
 */
export function reportStatement(home: RollupHome, tz: string, covered: Covered) {
  const fromS = startOfLocalDate(tz, covered.from);
  const toS = startOfLocalDate(tz, plusDays(covered.to, 1));
  const measurements = METRICS.map((m) => m.measurement).join("|");
  return (
    `SELECT "increase" FROM ${rollupSource(home, "rollup_day")} WHERE "tz" = ${quoteLiteral(tz)} ` +
    `AND "unit" = 'kWh' AND "measurement" =~ /^(${measurements})$/ ` +
    `AND time >= '${isoSeconds(fromS)}' AND time < '${isoSeconds(toS)}' ` +
    `GROUP BY "device_id", "resource_id", "measurement", "values_id"`
  );
}

const tagsSchema = z.object({
  device_id: z.string(),
  resource_id: z.string(),
  measurement: z.string(),
  values_id: z.string(),
});
const rowSchema = z.tuple([z.number(), z.number().nullable()]);

/** A report's rollup days of `tz`, their dates local to `tz` (see {@link reportStatement}). */
export async function readRollupDays(
  query: Pick<InfluxQuery, "query">,
  home: RollupHome,
  tz: string,
  covered: Covered,
): Promise<RollupDay[]> {
  const [series = []] = await query.query([reportStatement(home, tz, covered)]);
  const days: RollupDay[] = [];
  for (const one of series) {
    const tags = tagsSchema.safeParse(one.tags);
    if (!tags.success) {
      throw new InfluxQueryError(
        `InfluxDB answered rollups without their tags: ${excerpt(JSON.stringify(one.tags) ?? "")}`,
      );
    }
    const timeAt = one.columns.indexOf("time");
    const increaseAt = one.columns.indexOf("increase");
    for (const raw of one.values) {
      const row = rowSchema.safeParse([raw[timeAt], raw[increaseAt]]);
      if (!row.success) {
        throw new InfluxQueryError(
          `InfluxDB answered a rollup row that is not [time, increase]: ${excerpt(JSON.stringify(raw))}`,
        );
      }
      const [s, kwh] = row.data;
      if (kwh === null) continue;
      const t = tags.data;
      days.push({
        deviceId: t.device_id,
        resourceId: t.resource_id,
        measurement: t.measurement,
        valuesId: t.values_id,
        date: localDate(tz, s),
        kwh,
      });
    }
  }
  return days;
}
