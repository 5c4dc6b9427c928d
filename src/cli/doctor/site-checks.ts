/**
 * The configured sites' peak power against the data: the most solar power each site's device
 * reported over the last days. A kWp typed in Wp (9800 for 9.8 kWp) is a number the config cannot
 * tell from a 9.8 MWp plant; next to a week of measured power it stands out by a factor of 1000.
 */
import { z } from "zod";
import { siteOf } from "../../config/sites.js";
import type { Config } from "../../config.js";
import { credentialSettings } from "../../influx/influx-connection.js";
import { storedName } from "../../transform/line-protocol.js";
import { excerpt } from "../../util/text.js";
import { DAY_S } from "../../util/utc-time.js";
import { type CheckResult, notChecked, ok, warning } from "./check.js";
import { apiInUse, influxql, REACHABLE } from "./influx-checks.js";

export const SITES_KWP = "sites' kWp";
/** The days of solar power the check reads, up to now. */
export const SITE_CHECK_DAYS = 7;
/** A peak above this many times the kWp (in kW) is more than the site's generator can give. */
export const PEAK_ABOVE = 1.5;
/** A peak below this share of the kWp is a tiny fraction (a Wp value gives about 0.1 %). */
export const PEAK_BELOW = 0.01;

/** The measurement of the solar power (spec: `e_03_01_00_000_total_solar_power`, in kW). */
const SOLAR_POWER = "total_solar_power";
/** kW per unit of the `unit` tag a solar power may carry. */
const KW_PER_UNIT: Readonly<Record<string, number>> = { W: 0.001, kW: 1, MW: 1000 };

/** Rows of `SELECT max("value"), "device_id", "unit"`: time, peak, device, unit. */
const peakRow = z.tuple([z.unknown(), z.number(), z.string(), z.string()]);
const PEAK_ROW_SHAPE = `[time, max of "value" (a number), "device_id", "unit" (W, kW or MW)]`;

/** Each device's peak in kW, and the rows of another shape (not compared): their count, the first. */
interface Peaks {
  readonly kw: Map<string, number>;
  readonly rejected: number;
  readonly firstRejected?: unknown;
}

/** The highest solar power in kW of each device (by the id as stored) since `fromS`. */
async function peaks(influx: Config["influx"], fromS: number): Promise<Peaks | string> {
  const from = new Date(fromS * 1000).toISOString();
  const result = await influxql(
    influx,
    `SELECT max("value"), "device_id", "unit" FROM "${SOLAR_POWER}" WHERE time >= '${from}' ` +
      `GROUP BY "device_id", "unit"`,
    "GET",
  );
  if (typeof result === "string") return result;
  const kw = new Map<string, number>();
  let rejected = 0;
  let firstRejected: unknown;
  for (const series of result.series ?? []) {
    for (const row of series.values) {
      const parsed = peakRow.safeParse(row);
      const factor = parsed.success ? KW_PER_UNIT[parsed.data[3]] : undefined;
      if (!parsed.success || factor === undefined) {
        if (rejected++ === 0) firstRejected = row;
        continue;
      }
      const [, peak, device] = parsed.data;
      kw.set(device, Math.max(kw.get(device) ?? 0, peak * factor));
    }
  }
  return { kw, rejected, firstRejected };
}

/** Rows of the peaks that could not be compared: a warning naming the shape wanted. */
function rejectedWarning({ rejected, firstRejected }: Peaks): CheckResult {
  return warning(
    SITES_KWP,
    `${rejected} row(s) of "${SOLAR_POWER}"'s peaks are not ${PEAK_ROW_SHAPE} (the first: ` +
      `${excerpt(JSON.stringify(firstRejected) ?? "")}): their devices' kWp was not compared`,
    `each "${SOLAR_POWER}" point needs a number field "value" and the tags "device_id" and ` +
      `"unit" (W, kW or MW), as energy-etl writes it`,
  );
}

const figure = (value: number): string => String(Number(value.toPrecision(3)));

/** Each site with a kWp against its device's peak solar power of the last days (none: no check). */
export async function siteChecks(
  config: Config,
  reachable: boolean,
  nowMs: number,
): Promise<CheckResult[]> {
  const withKwp = Object.keys(config.sites).flatMap((device) => {
    const kwp = siteOf(config.sites, device)?.kwp;
    return kwp === undefined ? [] : [{ device, kwp }];
  });
  if (withKwp.length === 0 || config.influx.url === "") return [];
  if (!reachable) return [notChecked(SITES_KWP, "InfluxDB is not reachable", REACHABLE)];
  const found = await peaks(config.influx, Math.floor(nowMs / 1000) - SITE_CHECK_DAYS * DAY_S);
  if (typeof found === "string") {
    const resolved = await apiInUse(config.influx);
    const api = "api" in resolved ? resolved.api : "v2";
    const settings = credentialSettings(api, config.influx);
    return [
      warning(
        SITES_KWP,
        `the solar power is not readable (${found})`,
        `check that ${settings} may read INFLUX_BUCKET`,
      ),
    ];
  }
  const warnings: CheckResult[] = found.rejected > 0 ? [rejectedWarning(found)] : [];
  let compared = 0;
  for (const { device, kwp } of withKwp) {
    const peakKw = found.kw.get(storedName(device));
    if (peakKw === undefined || peakKw <= 0) continue;
    compared += 1;
    const figures =
      `site "${device}": kwp ${figure(kwp)} but its solar power peaked at ${figure(peakKw)} kW ` +
      `over the last ${SITE_CHECK_DAYS} days`;
    if (peakKw > PEAK_ABOVE * kwp) {
      warnings.push(
        warning(
          SITES_KWP,
          `${figures}, more than ${PEAK_ABOVE} x the kWp (kWp, not MWp? the wrong device?)`,
          `set sites."${device}".kwp in the config file to the generator's peak power in kWp`,
        ),
      );
    } else if (peakKw < PEAK_BELOW * kwp) {
      warnings.push(
        warning(
          SITES_KWP,
          `${figures}, less than ${PEAK_BELOW * 100} % of the kWp (kWp, not Wp?)`,
          `set sites."${device}".kwp in the config file in kWp (9.8, not 9800)`,
        ),
      );
    }
  }
  if (warnings.length > 0) return warnings;
  const unchecked = withKwp.length - compared;
  const without = unchecked === 0 ? "" : `; ${unchecked} without solar power stored to compare`;
  return [
    ok(
      SITES_KWP,
      `${compared} of ${withKwp.length} fit their solar power of the last ${SITE_CHECK_DAYS} days${without}`,
    ),
  ];
}
