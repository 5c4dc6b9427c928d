import Table from "cli-table3";
import { escapeControls } from "../util/control-chars.js";

/** A column of a table, and how it gives way on a terminal too narrow for the whole table. */
export interface TableColumn {
  readonly head: string;
  /** `wrap` (default): onto more lines; `cut`: with "…" (shown whole elsewhere); `keep`: no. */
  readonly narrow?: "wrap" | "cut" | "keep";
  /** Narrowest width it is wrapped or cut to (default 10). */
  readonly min?: number;
  /** Left out when the table does not fit even with every column at its narrowest. */
  readonly optional?: boolean;
}

/** What a table is rendered for: a terminal (`columns` wide) or a pipe. */
export interface TableStream {
  readonly isTTY?: boolean;
  readonly columns?: number;
}

/** On a terminal a table fitted to its width, else tab-separated values (cut, awk); escaped. */
export function renderTable(
  head: readonly (string | TableColumn)[],
  rows: readonly (readonly string[])[],
  stream: TableStream,
): string {
  const columns = head
    .map((h) => (typeof h === "string" ? { head: h } : h))
    .map((c) => ({ ...c, head: escapeControls(c.head) }));
  const oneLine = rows.map((row) => row.map(escapeControls));
  if (stream.isTTY !== true) {
    return [columns.map((c) => c.head), ...oneLine].map((row) => row.join("\t")).join("\n");
  }
  const shown = fitColumns(columns, oneLine, widthOf(stream));
  const table = new Table({
    head: shown.map(({ column, width }) => shape(column.head, column, width)),
    style: { head: [], border: [], compact: true },
  });
  for (const row of oneLine) {
    table.push(shown.map(({ column, index, width }) => shape(row[index] ?? "", column, width)));
  }
  return table.toString();
}

/** `items` as a table ({@link renderTable}): each column a head and the cell of an item. */
export function renderItems<T>(
  columns: readonly (readonly [string | TableColumn, (item: T) => string])[],
  items: readonly T[],
  stream: TableStream,
): string {
  const rows = items.map((item) => columns.map(([, cell]) => cell(item)));
  return renderTable(
    columns.map(([head]) => head),
    rows,
    stream,
  );
}

/** A line of text (control characters escaped) wrapped to a terminal's width; whole when piped. */
export function fitText(text: string, stream: TableStream): string {
  const line = escapeControls(text);
  return stream.isTTY === true ? wrap(line, widthOf(stream)).join("\n") : line;
}

/** A terminal's width; one that says 0 (a pseudo-terminal under `script`) or nothing: 80. */
export function widthOf(stream: TableStream): number {
  const { columns } = stream;
  return columns !== undefined && columns > 0 ? columns : 80;
}

/** Characters a table spends on borders and padding around `n` columns. */
const frame = (n: number) => 1 + 3 * n;

const length = (text: string) => [...text].length;

/** Columns shown: optional ones left out (last first), wrapping ones narrowed, then cut ones. */
function fitColumns(
  columns: readonly TableColumn[],
  rows: readonly (readonly string[])[],
  total: number,
): { column: TableColumn; index: number; width: number }[] {
  type Shown = { column: TableColumn; index: number; width: number };
  let shown: Shown[] = columns.map((column, index) => ({
    column,
    index,
    width: Math.max(length(column.head), ...rows.map((row) => length(row[index] ?? ""))),
  }));
  const floor = (c: Shown) =>
    c.column.narrow === "keep" ? c.width : Math.min(c.width, c.column.min ?? 10);
  const sum = (widthOf: (c: Shown) => number) =>
    frame(shown.length) + shown.reduce((n, c) => n + widthOf(c), 0);
  while (sum(floor) > total) {
    const last = shown.findLastIndex((c) => c.column.optional === true);
    if (last < 0) break;
    shown = shown.filter((_, i) => i !== last);
  }
  for (const how of ["wrap", "cut"] as const) {
    let excess = sum((c) => c.width) - total;
    while (excess > 0) {
      const [widest, next] = shown
        .filter((c) => (c.column.narrow ?? "wrap") === how && c.width > floor(c))
        .sort((a, b) => b.width - a.width);
      if (widest === undefined) break;
      // down to the next widest (or its floor) at once, by one when they are level
      const step = widest.width - Math.max(next?.width ?? 0, floor(widest));
      const by = Math.min(excess, Math.max(1, step));
      widest.width -= by;
      excess -= by;
    }
  }
  return shown;
}

/** A cell's text at `width`: whole when it fits, else cut or wrapped as its column says. */
function shape(text: string, column: TableColumn, width: number): string {
  const chars = [...text];
  if (chars.length <= width) return text;
  if (column.narrow === "cut") return `${chars.slice(0, Math.max(0, width - 1)).join("")}…`;
  return wrap(text, width).join("\n");
}

/** Lines of at most `width` characters, broken at spaces where it can, within words where not. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    let rest = [...word];
    const candidate = line === "" ? word : `${line} ${word}`;
    if (length(candidate) <= width) {
      line = candidate;
      continue;
    }
    if (line !== "") lines.push(line);
    while (rest.length > width) {
      lines.push(rest.slice(0, width).join(""));
      rest = rest.slice(width);
    }
    line = rest.join("");
  }
  if (line !== "" || lines.length === 0) lines.push(line);
  return lines;
}
