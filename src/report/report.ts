/**
 * `energy-etl report`: the daily rollups of a zone, made into energy per site and period, the
 * fleet's, and each site's specific yield. Pure: rows in, the report out (read-rollups.ts reads
 * the rows, render-*.ts print the report).
 */

import { type Site, type Sites, siteOf } from "../config/sites.js";
import { storedName } from "../transform/line-protocol.js";

/** The report's six energies and the counter (rollups' `measurement`, in kWh) each is read from. */
export const METRICS = [
  { key: "produced", label: "produced", measurement: "total_solar_energy" },
  { key: "consumed", label: "consumed", measurement: "total_load_energy" },
  { key: "imported", label: "imported", measurement: "total_other_energy" },
  { key: "exported", label: "exported", measurement: "total_export_energy" },
  { key: "batteryIn", label: "battery in", measurement: "charge_energy_today" },
  // battery out from the same readout and kind of counter as battery in (002, daily reset)
  { key: "batteryOut", label: "battery out", measurement: "discharge_energy_today" },
] as const;

export type MetricKey = (typeof METRICS)[number]["key"];
/** kWh per energy; null: no rollup of its counter in the period (not the same as 0). */
export type Energy = Record<MetricKey, number | null>;

export type PeriodKind = "day" | "week" | "month";

/** One `rollup_day` point of a report counter (`date`: its local date in the report's zone). */
export interface RollupDay {
  readonly deviceId: string;
  readonly resourceId: string;
  readonly measurement: string;
  readonly valuesId: string;
  readonly date: string;
  readonly kwh: number;
}

export interface PeriodEnergy {
  /** `2026-03-27` (day), `2026-W13` (ISO week), `2026-03` (month). */
  readonly period: string;
  readonly energy: Energy;
  /** The period's produced kWh per kWp; null without a kWp or without produced energy. */
  readonly kwhPerKwp: number | null;
}

export interface SiteReport {
  readonly deviceId: string;
  readonly name: string;
  readonly group: string | null;
  readonly kwp: number | null;
  readonly periods: readonly PeriodEnergy[];
  readonly total: Energy;
  readonly kwhPerKwp: number | null;
  /** 1 = highest specific yield; null: not ranked (no kWp, or nothing produced). */
  readonly rank: number | null;
}

export interface Report {
  readonly tz: string;
  readonly by: PeriodKind;
  /** First and last local date the report's whole periods cover. */
  readonly from: string;
  readonly to: string;
  readonly unit: "kWh";
  readonly periods: readonly string[];
  /** Ranked sites first (by specific yield), then the unranked by device id. */
  readonly sites: readonly SiteReport[];
  readonly fleet: {
    readonly periods: readonly PeriodEnergy[];
    readonly total: Energy;
    /** Sum of the kWp of the sites that have one; their produced kWh over it. */
    readonly kwp: number | null;
    readonly kwhPerKwp: number | null;
  };
}

const DAY_MS = 86_400_000;
const utcOf = (date: string): Date => new Date(`${date}T00:00:00Z`);
const dateOf = (d: Date): string => d.toISOString().slice(0, 10);
/** The date `n` days after `date` (before, for a negative `n`). */
export const plusDays = (date: string, n: number): string =>
  dateOf(new Date(utcOf(date).getTime() + n * DAY_MS));

/** The first date of the period holding `date` (a week starts on Monday, as ISO 8601's). */
export function periodStart(by: PeriodKind, date: string): string {
  if (by === "day") return date;
  if (by === "month") return `${date.slice(0, 7)}-01`;
  return plusDays(date, -((utcOf(date).getUTCDay() + 6) % 7));
}

/** The period's label: the date, `2026-W13` (ISO week-numbering year and week), `2026-03`. */
export function periodLabel(by: PeriodKind, date: string): string {
  if (by === "day") return date;
  if (by === "month") return date.slice(0, 7);
  // the ISO week's year is the year of its Thursday
  const thursday = plusDays(periodStart("week", date), 3);
  const firstDay = `${thursday.slice(0, 4)}-01-01`;
  const week = Math.floor((utcOf(thursday).getTime() - utcOf(firstDay).getTime()) / DAY_MS / 7);
  return `${thursday.slice(0, 4)}-W${String(week + 1).padStart(2, "0")}`;
}

/** The first date after the period that starts on `start`. */
function nextPeriod(by: PeriodKind, start: string): string {
  if (by === "day") return plusDays(start, 1);
  if (by === "week") return plusDays(start, 7);
  const d = utcOf(start);
  return dateOf(new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)));
}

/** The local dates a report covers (first, last) and its periods' labels. */
export interface Covered {
  readonly from: string;
  readonly to: string;
  readonly labels: readonly string[];
}

/** The dates the report covers: the whole periods that hold `fromDate` to `toDate`. */
export function coveredDates(by: PeriodKind, fromDate: string, toDate: string): Covered {
  const from = periodStart(by, fromDate);
  const after = nextPeriod(by, periodStart(by, toDate));
  const starts: string[] = [];
  for (let s = from; s < after; s = nextPeriod(by, s)) starts.push(s);
  return { from, to: plusDays(after, -1), labels: starts.map((s) => periodLabel(by, s)) };
}

const emptyEnergy = (): Energy => ({
  produced: null,
  consumed: null,
  imported: null,
  exported: null,
  batteryIn: null,
  batteryOut: null,
});

const add = (a: number | null, b: number | null): number | null =>
  a === null ? b : b === null ? a : a + b;

function sumEnergy(list: readonly Energy[]): Energy {
  const sum = emptyEnergy();
  for (const e of list) for (const { key } of METRICS) sum[key] = add(sum[key], e[key]);
  return sum;
}

const perKwp = (produced: number | null, kwp: number | null): number | null =>
  produced === null || kwp === null || kwp <= 0 ? null : produced / kwp;

const METRIC_OF = new Map<string, MetricKey>(METRICS.map((m) => [m.measurement, m.key]));

/**
 * Per device, period and energy, the kWh of its rollup days. A device's resources are views of
 * its data (the simulator's `battery_bank` repeats `all_data`'s battery counters): a counter in
 * several resources counts once a day, from the resource whose sum is largest; its values ids
 * (readouts) add up.
 */
function energyByDevice(
  rows: readonly RollupDay[],
  by: PeriodKind,
): Map<string, Map<string, Energy>> {
  /** Per device, period, energy and date: the kWh of each resource. */
  const days = new Map<string, { row: RollupDay; metric: MetricKey; kwh: Map<string, number> }>();
  for (const row of rows) {
    const metric = METRIC_OF.get(row.measurement);
    if (metric === undefined) continue;
    const key = JSON.stringify([row.deviceId, metric, row.date]);
    const day = days.get(key) ?? { row, metric, kwh: new Map<string, number>() };
    days.set(key, day);
    day.kwh.set(row.resourceId, (day.kwh.get(row.resourceId) ?? 0) + row.kwh);
  }
  const out = new Map<string, Map<string, Energy>>();
  for (const { row, metric, kwh } of days.values()) {
    const periods = out.get(row.deviceId) ?? new Map<string, Energy>();
    out.set(row.deviceId, periods);
    const label = periodLabel(by, row.date);
    const energy = periods.get(label) ?? emptyEnergy();
    periods.set(label, energy);
    energy[metric] = add(energy[metric], Math.max(...kwh.values()));
  }
  return out;
}

export interface ReportRequest {
  readonly tz: string;
  readonly by: PeriodKind;
  /** The whole periods asked ({@link coveredDates}): the rows read are of these dates. */
  readonly covered: Covered;
  readonly sites: Sites;
}

/** The report of `rows` (rollup days of the zone; those outside the periods are left out). */
export function buildReport(rows: readonly RollupDay[], request: ReportRequest): Report {
  const { by, covered } = request;
  const inRange = rows.filter((r) => r.date >= covered.from && r.date <= covered.to);
  const byDevice = energyByDevice(inRange, by);
  const siteIds = new Map(Object.keys(request.sites).map((id) => [storedName(id), id]));
  const deviceIds = [...new Set([...byDevice.keys(), ...siteIds.keys()])];
  const sites = deviceIds.map((deviceId) => {
    const site: Site | undefined = siteOf(request.sites, siteIds.get(deviceId) ?? deviceId);
    const kwp = site?.kwp ?? null;
    const energies = byDevice.get(deviceId);
    const periods = covered.labels.map((period) => {
      const energy = energies?.get(period) ?? emptyEnergy();
      return { period, energy, kwhPerKwp: perKwp(energy.produced, kwp) };
    });
    const total = sumEnergy(periods.map((p) => p.energy));
    return {
      deviceId,
      name: site?.name ?? deviceId,
      group: site?.group ?? null,
      kwp,
      periods,
      total,
      kwhPerKwp: perKwp(total.produced, kwp),
    };
  });
  const ranked = sites
    .filter((s) => s.kwhPerKwp !== null)
    .sort(
      (a, b) => (b.kwhPerKwp ?? 0) - (a.kwhPerKwp ?? 0) || a.deviceId.localeCompare(b.deviceId),
    );
  const unranked = sites
    .filter((s) => s.kwhPerKwp === null)
    .sort((a, b) => a.deviceId.localeCompare(b.deviceId));
  const withKwp = ranked.filter((s) => s.kwp !== null);
  const fleetKwp = withKwp.length > 0 ? withKwp.reduce((n, s) => n + (s.kwp ?? 0), 0) : null;
  const fleetYield = sumEnergy(withKwp.map((s) => s.total)).produced;
  const fleetPeriods = covered.labels.map((period, i) => {
    const energy = sumEnergy(sites.map((s) => s.periods[i]?.energy ?? emptyEnergy()));
    const ratedProduced = sumEnergy(withKwp.map((s) => s.periods[i]?.energy ?? emptyEnergy()));
    return { period, energy, kwhPerKwp: perKwp(ratedProduced.produced, fleetKwp) };
  });
  return {
    tz: request.tz,
    by,
    from: covered.from,
    to: covered.to,
    unit: "kWh",
    periods: covered.labels,
    sites: [
      ...ranked.map((s, i) => ({ ...s, rank: i + 1 })),
      ...unranked.map((s) => ({ ...s, rank: null })),
    ],
    fleet: {
      periods: fleetPeriods,
      total: sumEnergy(sites.map((s) => s.total)),
      kwp: fleetKwp,
      kwhPerKwp: perKwp(fleetYield, fleetKwp),
    },
  };
}
