/** InfluxQL's quoting, apart from the query client: doctor and the rollups' SQL need no client. */

/** Quotes an InfluxQL identifier (a measurement): `"…"` with `"` and `\` escaped. */
export function quoteIdentifier(name: string): string {
  return `"${name.replace(/[\\"]/g, "\\$&")}"`;
}

/** Quotes an InfluxQL string literal (a tag value): `'…'` with `'` and `\` escaped. */
export function quoteLiteral(value: string): string {
  return `'${value.replace(/[\\']/g, "\\$&")}'`;
}
