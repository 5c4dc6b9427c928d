/**
 * InfluxDB line protocol (docs.influxdata.com/influxdb/v2/reference/syntax/line-protocol/).
 * Names and tag values cannot hold every string (a line break ends a line; InfluxDB reads a
 * backslash before a space, comma or `=` as an escape whatever precedes it), so in them line breaks
 * and tabs become spaces and backslashes slashes. String field values keep every character.
 */

/** The tag value InfluxDB stores for `text`. */
export function storedName(text: string): string {
  return text.replace(/[\n\r\t]/g, " ").replace(/\\/g, "/");
}

/** As {@link storedName}, with `_` for an empty name or before a `#` (a comment line). */
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

/** Lines of line protocol as the UTF-8 bytes that go out, joined by `\n`, and how many. */
export interface LineBatch {
  readonly bytes: Buffer;
  readonly lines: number;
}

export function lineBatch(lines: readonly string[]): LineBatch {
  return { bytes: Buffer.from(lines.join("\n"), "utf8"), lines: lines.length };
}

/** The lines of a batch (for the rare cases that need them one by one), cut by {@link lineEnds}. */
export function linesOf(batch: LineBatch): string[] {
  if (batch.lines === 0) return [];
  const lines: string[] = [];
  let start = 0;
  for (const end of lineEnds(batch.bytes)) {
    lines.push(batch.bytes.toString("utf8", start, end));
    start = end + 1;
  }
  return lines;
}

const NEWLINE = 0x0a;
const SPACE = 0x20;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const EQUALS = 0x3d;

/**
 * Where the lines of `bytes` end: each `\n` that ends a line, and the end of the bytes. A string
 * field may hold a line break, so a line ends only at a `\n` outside a quoted field value; a
 * backslash escapes the byte after it. The one rule by which every batch is cut.
 */
export function lineEnds(bytes: Buffer): number[] {
  const ends: number[] = [];
  const n = bytes.length;
  // 0: measurement and tags, 1: fields, 2: inside a string field, 3: timestamp
  let part = 0;
  let afterEquals = false;
  for (let i = 0; i < n; i++) {
    const c = bytes[i];
    if (part === 2) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) part = 1;
      continue;
    }
    if (c === NEWLINE) {
      ends.push(i);
      part = 0;
    } else if (c === BACKSLASH) i++;
    else if (c === QUOTE && afterEquals) part = 2;
    else if (c === SPACE) part = part === 0 ? 1 : 3;
    // only in the fields: the `=` before a string field's opening quote
    afterEquals = part === 1 && c === EQUALS;
  }
  ends.push(n);
  return ends;
}

export function inBatches(batch: LineBatch, size: number): LineBatch[] {
  const lines = linesOf(batch);
  const batches: LineBatch[] = [];
  for (let i = 0; i < lines.length; i += size) batches.push(lineBatch(lines.slice(i, i + size)));
  return batches;
}
