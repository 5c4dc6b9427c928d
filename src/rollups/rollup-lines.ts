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

/** A rollup point's line (a dead letter of one is recomputed from the raw data, never rewritten). */
export const isRollupLine = (line: string): boolean =>
  line.startsWith(`${HOUR_MEASUREMENT},`) || line.startsWith(`${DAY_MEASUREMENT},`);

/** The head (measurement and tags) of a series' hour lines, made once per series and span. */
const hourHeads = new WeakMap<SeriesTags, string>();

export function hourLine(target: RollupTarget, p: HourPoint): string {
  const head = hourHeads.get(p.series) ?? headOf(HOUR_MEASUREMENT, target, p.series, "");
  hourHeads.set(p.series, head);
  return `${head} increase=${p.increase},base=${p.base} ${p.startS}`;
}

/** The solar energy counter (the spec's `total_solar_energy`, kWh) whose day points carry the yield. */
const SOLAR_ENERGY = { measurement: "total_solar_energy", unit: "kWh" } as const;

/**
 * A day point, with its local month and year as fields (as tags: a series per month). A {@link
 * SOLAR_ENERGY} point also has `kwp` (`sites`; 0 when none) and, with one, `kwh_per_kwp`.
 */
export function dayLine(target: RollupTarget, zone: string, p: DayPoint, kwp?: number): string {
  const date = localDate(zone, p.startS);
  const solar =
    p.series.measurement === SOLAR_ENERGY.measurement && p.series.unit === SOLAR_ENERGY.unit;
  const yieldFields = !solar
    ? ""
    : kwp !== undefined && kwp > 0
      ? `,kwp=${kwp},kwh_per_kwp=${p.increase / kwp}`
      : ",kwp=0";
  return (
    `${headOf(DAY_MEASUREMENT, target, p.series, zone)} increase=${p.increase}${yieldFields},` +
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
