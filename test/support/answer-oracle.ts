/**
 * What the transcoder of GET /data answers must give, worked out from first principles: each
 * element read with JSON.parse (invalid UTF-8 becomes U+FFFD, as Buffer#toString makes it), judged
 * by the rules of docs/schema.md "What is dropped", and written by a small line-protocol encoder of
 * its own (https://docs.influxdata.com/influxdb/v2/reference/syntax/line-protocol/). It shares no
 * code with src/transform (names, numbers and the values_id tag are schema-oracle.ts's): the
 * oracle of the transcoder's tests and of the bench's longer fuzz run.
 */
import type { AnswerRequest } from "../../src/transform/answer-transcoder.js";
import { type IdShape, numberIn, safeMeasurement, safeName, valuesIdTag } from "./schema-oracle.js";

/** A row or member set aside: kind, the row's text, the member's value id. */
export type SetAsideView = readonly [kind: "row" | "member", text: string, valueId?: string];

/** One batch handed to the writer: its lines joined by `\n`, how many, what was set aside with it. */
export interface BatchView {
  readonly text: string;
  readonly lines: number;
  readonly setAside: readonly SetAsideView[];
}

/** Everything a transcoder gives for one answer. */
export interface AnswerOutcome {
  readonly batches: readonly BatchView[];
  readonly records: number;
  readonly points: number;
  readonly oldestS: number | undefined;
  readonly newestS: number | undefined;
  readonly outOfWindow: number;
  readonly duplicates: number;
  readonly extraMembers: number;
  readonly extraExamples: readonly string[];
}

/** The answer's rows were mostly invalid: a change of the API's format, nothing kept. */
export const DRIFT = "drift";

const shape = (measurement: string, type: string, unit: string): IdShape => ({
  measurement,
  type,
  unit,
  field: "value",
});

/** The value ids the fuzz asks for, decoded by hand from the spec's tables (2.3). */
export const ID_SHAPES: ReadonlyMap<string, IdShape> = new Map([
  ["e_03_01_00_000_total_solar_power", shape("total_solar_power", "continuous", "kW")],
  ["e_03_01_00_000_total_load_power", shape("total_load_power", "continuous", "kW")],
  ["e_03_07_04_000_total_solar_energy", shape("total_solar_energy", "cumulative", "kWh")],
  ["e_00_00_03_001_operating_mode", shape("operating_mode", "text", "none")],
  ["e_00_00_03_004_note\nline", shape("note\nline", "text", "none")],
  ["e_00_05_00_002_state_of_charge", shape("state_of_charge", "continuous", "%")],
  ["e_00_20_00_001_temperature_°C", shape("temperature_°C", "continuous", "m")],
  ["e_03_01_00_001_inverter_power", shape("inverter_power", "continuous", "kW")],
  ["e_03_01_00_002_inverter_power", shape("inverter_power", "continuous", "kW")],
  ["alarm_index", { ...shape("alarm", "alarm", "none"), field: "alarm_index" }],
  ["alarm_name", { ...shape("alarm", "alarm", "none"), field: "alarm_name" }],
  ["protocol_id", shape("protocol_id", "meta", "none")],
  ["Zähler, Nr. 1", shape("Zähler, Nr. 1", "unknown", "none")],
  ['#tab\t"q"\\b,c=1', shape('#tab\t"q"\\b,c=1', "unknown", "none")],
]);

const escapeWith = (text: string, special: string): string =>
  [...text].map((c) => (special.includes(c) ? `\\${c}` : c)).join("");

const tagText = (text: string): string => escapeWith(safeName(text), ",= ");

const measurementText = (name: string): string => escapeWith(safeMeasurement(name), ", ");

const stringField = (text: string): string => `"${escapeWith(text, '\\"')}"`;

/** A value a record may hold: finite number, string, boolean, null. */
const isMember = (v: unknown): boolean =>
  v === null ||
  typeof v === "string" ||
  typeof v === "boolean" ||
  (typeof v === "number" && Number.isFinite(v));

/** `YYYY-MM-DDTHH:MM:SS` naming a real UTC second, as epoch seconds. */
function recordSeconds(timestamp: unknown): number | undefined {
  if (typeof timestamp !== "string" || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/.test(timestamp)) {
    return undefined;
  }
  const ms = Date.parse(`${timestamp}Z`);
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 19) !== timestamp) return undefined;
  return ms / 1000;
}

/** The field key and value of one member. */
function fieldOf(id: IdShape, member: string | number | boolean): [string, string] {
  if (id.field === "alarm_name") return ["alarm_name", stringField(String(member))];
  if (typeof member === "boolean") return [id.field, member ? "1" : "0"];
  if (typeof member === "number") return [id.field, String(member)];
  const n = id.type === "text" ? undefined : numberIn(member);
  return n === undefined ? ["text", stringField(member)] : [id.field, String(n)];
}

/** The lines of one kept record: one per series, its fields in order, a later field wins. */
function recordLines(
  record: Record<string, unknown>,
  members: readonly string[],
  request: AnswerRequest,
  seconds: number,
): string[] {
  const device = `,device_id=${tagText(request.deviceId)},resource_id=${tagText(request.resourceId)}`;
  const tag = tagText(valuesIdTag(record.values_id));
  // the alarm point's tag `alarm`: the record's alarm name (kept members only), none when empty
  const name = members.includes("alarm_name") ? record.alarm_name : null;
  const named = name !== null && name !== undefined && String(name) !== "";
  const alarm = named ? `,alarm=${tagText(String(name))}` : "";
  const series = new Map<string, Map<string, string>>();
  for (const key of members) {
    const member = record[key];
    const id = ID_SHAPES.get(key);
    if (member === null || id === undefined) continue;
    if (typeof member !== "string" && typeof member !== "number" && typeof member !== "boolean") {
      continue;
    }
    // tags in InfluxDB's order, sorted by key: alarm, device_id, resource_id, type, unit, values_id
    const head =
      `${measurementText(id.measurement)}${id.field === "value" ? "" : alarm}${device}` +
      `,type=${tagText(id.type)},unit=${tagText(id.unit)},values_id=${tag}`;
    const fields = series.get(head) ?? new Map<string, string>();
    series.set(head, fields);
    const [field, value] = fieldOf(id, member);
    fields.set(field, value);
  }
  return [...series].map(
    ([head, fields]) => `${head} ${[...fields].map(([k, v]) => `${k}=${v}`).join(",")} ${seconds}`,
  );
}

/** Cuts lines into batches: one is full after a line that makes it `batchLines` long, and ends with its row. */
class Batches {
  readonly batches: BatchView[] = [];
  private pending: string[] = [];
  private mark: number | undefined;

  constructor(private readonly batchLines: number) {}

  line(line: string): void {
    this.pending.push(line);
    if (this.mark === undefined && this.pending.length >= this.batchLines) {
      this.mark = this.pending.length;
    }
  }

  rowDone(): void {
    if (this.mark === undefined) return;
    this.emit(this.pending.slice(0, this.mark), []);
    this.pending = this.pending.slice(this.mark);
    this.mark = undefined;
  }

  end(setAside: readonly SetAsideView[]): void {
    if (this.pending.length > 0 || setAside.length > 0) this.emit(this.pending, setAside);
  }

  private emit(lines: readonly string[], setAside: readonly SetAsideView[]): void {
    // as written in UTF-8: a lone surrogate (JSON's "\ud800") becomes U+FFFD
    const text = Buffer.from(lines.join("\n"), "utf8").toString("utf8");
    this.batches.push({ text, lines: lines.length, setAside });
  }
}

const TIMESTAMP_IN_TEXT = /"timestamp"\s*:\s*"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)"/;
const DRIFT_MIN_ROWS = 20;

/**
 * What an answer made of `elements` (each element's bytes, as they stand in the body) must give
 * for `request` in batches of `batchLines`; {@link DRIFT} when most rows are invalid.
 */
export function oracleAnswer(
  elements: readonly Buffer[],
  request: AnswerRequest,
  batchLines: number,
): AnswerOutcome | typeof DRIFT {
  const requested = new Set(request.values);
  const iso = (s: number) => new Date(s * 1000).toISOString().slice(0, 19);
  const [from, to] = [iso(request.fromS), iso(request.toS)];
  const out = new Batches(batchLines);
  const setAside: SetAsideView[] = [];
  const seen = new Set<string>();
  const extras: string[] = [];
  let [rows, invalid, records, outOfWindow, duplicates] = [0, 0, 0, 0, 0];
  let [oldestS, newestS]: (number | undefined)[] = [undefined, undefined];
  for (const bytes of elements) {
    const text = bytes.toString("utf8");
    rows++;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    const record =
      typeof value === "object" && value !== null && !Array.isArray(value)
        ? (value as Record<string, unknown>)
        : undefined;
    const keys = record === undefined ? [] : Object.keys(record);
    const members = keys.filter((k) => k !== "timestamp" && k !== "values_id");
    extras.push(...members.filter((k) => !requested.has(k)));
    const kept = members.filter((k) => requested.has(k));
    const seconds = recordSeconds(record?.timestamp);
    if (record === undefined || seconds === undefined || !isMember(record.values_id ?? null)) {
      invalid++;
      const at = TIMESTAMP_IN_TEXT.exec(text)?.[1];
      if (at === undefined || (at >= from && at <= to)) setAside.push(["row", text]);
      else outOfWindow++;
      out.rowDone();
      continue;
    }
    const bad = kept.filter((k) => !isMember(record[k]));
    if (bad.length > 0) invalid++;
    const key = `${seconds} ${valuesIdTag(record.values_id)}`;
    if (seconds < request.fromS || seconds > request.toS) outOfWindow++;
    else if (seen.has(key)) duplicates++;
    else {
      seen.add(key);
      records++;
      oldestS = Math.min(oldestS ?? seconds, seconds);
      newestS = Math.max(newestS ?? seconds, seconds);
      const good = kept.filter((k) => !bad.includes(k));
      for (const line of recordLines(record, good, request, seconds)) out.line(line);
      for (const valueId of bad) setAside.push(["member", text, valueId]);
    }
    out.rowDone();
  }
  if (invalid >= DRIFT_MIN_ROWS && invalid > rows / 2) return DRIFT;
  out.end(setAside);
  return {
    batches: out.batches,
    records,
    points: out.batches.reduce((sum, b) => sum + b.lines, 0),
    oldestS,
    newestS,
    outOfWindow,
    duplicates,
    extraMembers: extras.length,
    extraExamples: [...new Set(extras)].slice(0, 5),
  };
}
