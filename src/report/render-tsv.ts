/** A report piped: tab-separated values, a header row, then one row per site and period. */
import { renderTable } from "../cli/table.js";
import { METRICS, type Report } from "./report.js";

/** Header of the TSV: the site, the period, the six energies in kWh and the specific yield. */
export const TSV_HEAD = [
  "device_id",
  "name",
  "group",
  "kwp",
  "period",
  ...METRICS.map((m) => `${m.label.replace(" ", "_")}_kwh`),
  "kwh_per_kwp",
] as const;

/** A figure as TSV writes it: to the Wh (3 decimals of kWh), empty when there is none. */
export const tsvNumber = (n: number | null): string =>
  n === null ? "" : String(Math.round(n * 1000) / 1000);

/** The report as TSV (the fleet is the sum of its rows: not repeated as a row of its own). */
export function renderTsv(report: Report): string {
  const rows = report.sites.flatMap((site) =>
    site.periods.map((p) => [
      site.deviceId,
      site.name,
      site.group ?? "",
      tsvNumber(site.kwp),
      p.period,
      ...METRICS.map((m) => tsvNumber(p.energy[m.key])),
      tsvNumber(p.kwhPerKwp),
    ]),
  );
  // piped, renderTable gives TSV with control characters (a tab in a name) escaped
  return renderTable(TSV_HEAD, rows, { isTTY: false });
}
