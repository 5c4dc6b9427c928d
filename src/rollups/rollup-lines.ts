/** The rollup points: their measurements and their line protocol. */
import { escapeMeasurement, escapeTag } from "../transform/line-protocol.js";
import { localDate } from "./buckets.js";
import type { DayPoint } from "./day-increases.js";
import type { HourPoint } from "./hour-increases.js";
import type { RollupTarget, SeriesTags } from "./series.js";

/** The measurement of hourly increases (fields `increase` and `base`, the base at its end). */
export const HOUR_MEASUREMENT = "rollup_hour";
/** The measurement of daily increases (tag `tz`: the time zone of the day). */
export const DAY_MEASUREMENT = "rollup_day";

/** The head (measurement and tags) of a series' hour lines, made once per series and span. */
const hourHeads = new WeakMap<SeriesTags, string>();

/** An hour point's line: its increase and the base after it. */
export function hourLine(target: RollupTarget, p: HourPoint): string {
  const head = hourHeads.get(p.series) ?? headOf(HOUR_MEASUREMENT, target, p.series, "");
  hourHeads.set(p.series, head);
  return `${head} increase=${p.increase},base=${p.base} ${p.startS}`;
}

/** A day point, with its local month and year as fields (as tags: a series per month). */
export function dayLine(target: RollupTarget, zone: string, p: DayPoint): string {
  const date = localDate(zone, p.startS);
  return (
    `${headOf(DAY_MEASUREMENT, target, p.series, zone)} increase=${p.increase},` +
    `month="${date.slice(0, 7)}",year="${date.slice(0, 4)}" ${p.startS}`
  );
}

/** A rollup line's measurement and tags (a day's: its zone too). */
function headOf(measurement: string, target: RollupTarget, t: SeriesTags, zone: string): string {
  const tags =
    `,device_id=${escapeTag(target.deviceId)},measurement=${escapeTag(t.measurement)}` +
    `,resource_id=${escapeTag(target.resourceId)},type=${escapeTag(t.type)}` +
    (zone === "" ? "" : `,tz=${escapeTag(zone)}`) +
    `,unit=${escapeTag(t.unit)},values_id=${escapeTag(t.valuesId)}`;
  return `${escapeMeasurement(measurement)}${tags}`;
}
