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
  /** The figure after the bar (right-aligned); default the value to 0.1. */
  readonly figure?: string;
  /** What follows the figure (left-aligned). */
  readonly note?: string;
}

const chars = (s: string) => [...s].length;
/** `s` in exactly `width` characters: padded, or cut with "…". */
const padTo = (s: string, width: number) =>
  chars(s) <= width
    ? s + " ".repeat(width - chars(s))
    : `${[...s].slice(0, Math.max(0, width - 1)).join("")}…`;
const kwh = (n: number | null) => (n === null ? "" : n.toFixed(1));
const ratio = (n: number | null) => (n === null ? "" : n.toFixed(2));

/**
 * One line per item: its label, a bar scaled to the largest value, its figure and note; no line
 * longer than `columns` (labels are cut to a third of it, notes at the edge).
 */
export function barLines(items: readonly BarItem[], columns: number): string[] {
  const figures = items.map((i) => escapeControls(i.figure ?? kwh(i.value)));
  const notes = items.map((i) => (i.note === undefined ? "" : ` ${escapeControls(i.note)}`));
  const labels = items.map((i) => escapeControls(i.label));
  const figureWidth = Math.max(0, ...figures.map(chars));
  const noteWidth = Math.max(0, ...notes.map(chars));
  const labelWidth = Math.min(
    Math.max(0, ...labels.map(chars)),
    Math.max(4, Math.floor(columns / 3)),
  );
  // the notes give way first: a bar of a quarter of the width at least
  const room = columns - labelWidth - figureWidth - 2;
  const barWidth = Math.max(1, room - noteWidth, Math.floor(room / 4));
  const max = Math.max(0, ...items.map((i) => i.value ?? 0));
  return items.map((item, k) => {
    const drawn = padTo(bar(item.value ?? 0, max, barWidth), barWidth);
    const figure = (figures[k] ?? "").padStart(figureWidth);
    const line = `${padTo(labels[k] ?? "", labelWidth)} ${drawn} ${figure}${notes[k] ?? ""}`;
    return [...line].slice(0, columns).join("").trimEnd();
  });
}

// a figure up to 99999.9 kWh stays on one line, a head wraps ("battery / out"); a terminal too
// narrow for every column leaves out the last ones first (TSV and --json have them all)
const ENERGY_HEAD: TableColumn[] = METRICS.map((m, i) => ({
  head: m.label,
  min: 8,
  optional: i >= 2,
}));
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
          figure: ratio(s.kwhPerKwp),
          note: `(${kwh(s.total.produced)} kWh / ${s.kwp ?? ""} kWp)`,
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
