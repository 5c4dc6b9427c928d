/**
 * InfluxDB line protocol escaping
 * (https://docs.influxdata.com/influxdb/v2/reference/syntax/line-protocol/).
 *
 * Measurement names and tag values cannot hold every string: a line break ends a line, and
 * InfluxDB reads a backslash before a space, comma or equals sign (or at the end) as an escape,
 * whatever precedes it. So in names and tag values line breaks and tabs become spaces and
 * backslashes become slashes; a measurement that would start with `#` (a comment line) gets a `_`
 * in front. {@link storedName} and {@link storedMeasurement} say what InfluxDB then holds.
 * String field values keep every character.
 */

/** The tag value InfluxDB stores for `text` (see the module comment). */
export function storedName(text: string): string {
  return text.replace(/[\n\r\t]/g, " ").replace(/\\/g, "/");
}

/** The measurement InfluxDB stores for `name`: as {@link storedName}; `_` for an empty name. */
export function storedMeasurement(name: string): string {
  const safe = storedName(name);
  if (safe === "") return "_";
  return safe.startsWith("#") ? `_${safe}` : safe;
}

/** A measurement name in line protocol: commas and spaces escaped (see {@link storedMeasurement}). */
export function escapeMeasurement(name: string): string {
  return storedMeasurement(name).replace(/[, ]/g, "\\$&");
}

/** A tag key or value in line protocol: commas, equals signs and spaces escaped. */
export function escapeTag(value: string): string {
  return storedName(value).replace(/[,= ]/g, "\\$&");
}

/** A string field value in line protocol, quoted, with `"` and `\` escaped. */
export function quoteString(value: string): string {
  return `"${value.replace(/[\\"]/g, "\\$&")}"`;
}
