import Table from "cli-table3";

/**
 * Rows under a header as `stream` wants them: a compact table on a terminal (no line between
 * rows), tab-separated values otherwise (one line per row, for cut, awk and spreadsheets).
 */
export function renderTable(
  head: readonly string[],
  rows: readonly (readonly string[])[],
  stream: { isTTY?: boolean },
): string {
  const cell = (text: string) => text.replace(/[\t\r\n]+/g, " ");
  if (stream.isTTY !== true) {
    return [head, ...rows].map((row) => row.map(cell).join("\t")).join("\n");
  }
  const table = new Table({ head: [...head], style: { head: [], border: [], compact: true } });
  for (const row of rows) table.push(row.map(cell));
  return table.toString();
}
