/** A report on a terminal: tables and bar charts of Unicode blocks, fitted to its width. */
import { fitText, renderTable, type TableColumn } from "../cli/table.js";
import { escapeControls } from "../util/control-chars.js";
import { type Energy, METRICS, type Report } from "./report.js";

/** Eighths of a cell, from one eighth to a whole one. */
const EIGHTHS = ["▏", "▎", "▍", "▌", "▋", "▊", "▉", "█"] as const;

/** A bar of `value` against `max` over `width` cells, to the eighth of a cell. */
export function bar(value: number, max: number, width: number): string {
  if (!(value > 0) || !(max > 0) || width <= 0) return "";
  const eighths = Math.round((Math.min(value, max) / max) * width * 8);
  const whole = Math.floor(eighths / 8);
  const part = eighths % 8;
  return "█".repeat(whole) + (part > 0 ? (EIGHTHS[part - 1] ?? "") : "");
}

export interface BarItem {
  readonly label: string;
  readonly value: number | null;
  /** What follows the bar (the figure); default the value to 0.1. */
  readonly text?: string;
}

const chars = (s: string) => [...s].length;
const cut = (s: string, width: number) =>
  chars(s) <= width
    ? s.padEnd(width + s.length - chars(s))
    : `${[...s].slice(0, width - 1).join("")}…`;
const kwh = (n: number | null) => (n === null ? "" : n.toFixed(1));
const ratio = (n: number | null) => (n === null ? "" : n.toFixed(2));

/**
 * One line per item: its label, a bar scaled to the largest value, its figure; no line longer
 * than `columns` (labels are cut to a third of it when they would not leave room for a bar).
 */
export function barLines(items: readonly BarItem[], columns: number): string[] {
  const texts = items.map((i) => escapeControls(i.text ?? kwh(i.value)));
  const labels = items.map((i) => escapeControls(i.label));
  const textWidth = Math.max(0, ...texts.map(chars));
  const labelWidth = Math.min(
    Math.max(0, ...labels.map(chars)),
    Math.max(4, Math.floor(columns / 3)),
  );
  const barWidth = Math.max(1, columns - labelWidth - textWidth - 2);
  const max = Math.max(0, ...items.map((i) => i.value ?? 0));
  return items.map((item, k) => {
    const drawn = bar(item.value ?? 0, max, barWidth);
    const line = `${cut(labels[k] ?? "", labelWidth)} ${drawn.padEnd(barWidth)} ${(texts[k] ?? "").padStart(textWidth)}`;
    return [...line.trimEnd()].slice(0, columns).join("");
  });
}

// a figure up to 99999.9 kWh stays on one line; a head wraps ("battery / out")
const ENERGY_HEAD: TableColumn[] = METRICS.map((m) => ({ head: m.label, min: 8 }));
const energyCells = (e: Energy) => METRICS.map((m) => kwh(e[m.key]));

const sites = (n: number) => (n === 1 ? "1 site" : `${n} sites`);

/** The report for a terminal `columns` wide. */
export function renderBars(report: Report, columns: number): string {
  const stream = { isTTY: true, columns };
  const range = report.from === report.to ? report.from : `${report.from} to ${report.to}`;
  const out: string[] = [
    fitText(
      `energy per ${report.by}, ${range} (${report.tz}), kWh; ${sites(report.sites.length)}`,
      stream,
    ),
    "",
    `fleet per ${report.by}`,
    renderTable(
      [{ head: report.by, narrow: "keep" }, ...ENERGY_HEAD, { head: "kWh/kWp", optional: true }],
      [
        ...report.fleet.periods.map((p) => [
          p.period,
          ...energyCells(p.energy),
          ratio(p.kwhPerKwp),
        ]),
        ["total", ...energyCells(report.fleet.total), ratio(report.fleet.kwhPerKwp)],
      ],
      stream,
    ),
    "",
    `produced per ${report.by}, fleet`,
    ...barLines(
      report.fleet.periods.map((p) => ({ label: p.period, value: p.energy.produced })),
      columns,
    ),
    "",
    "specific yield, kWh/kWp (ranked)",
    ...barLines(
      report.sites
        .filter((s) => s.rank !== null)
        .map((s) => ({
          label: `${s.rank}. ${s.name}`,
          value: s.kwhPerKwp,
          text: `${ratio(s.kwhPerKwp)} (${kwh(s.total.produced)} kWh / ${s.kwp ?? ""} kWp)`,
        })),
      columns,
    ),
  ];
  const unranked = report.sites.filter((s) => s.rank === null);
  if (unranked.length > 0) {
    const names = unranked.map((s) => s.name).join(", ");
    out.push(fitText(`not ranked (no kWp, or nothing produced): ${names}`, stream));
  }
  out.push(
    "",
    "per site, the whole range",
    renderTable(
      [
        { head: "site", narrow: "cut" },
        ...ENERGY_HEAD,
        { head: "kWp", optional: true },
        { head: "kWh/kWp", optional: true },
      ],
      report.sites.map((s) => [
        s.name,
        ...energyCells(s.total),
        s.kwp === null ? "" : String(s.kwp),
        ratio(s.kwhPerKwp),
      ]),
      stream,
    ),
  );
  return out.join("\n");
}
