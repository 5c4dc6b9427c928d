import Table from "cli-table3";

/** A readable table of rows under a header, as the catalog commands print on a terminal. */
export function renderTable(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const table = new Table({ head: [...head], style: { head: [], border: [] } });
  for (const row of rows) table.push([...row]);
  return table.toString();
}
