/**
 * The bad-input tests' own judge of bodies, written from the API's documented shape (spec 2.4)
 * and the contract of the test's header, not from src: which elements are records, which members
 * are bad, which rows the pipeline keeps, which invalid rows it drops, and the dead letters a
 * body must leave.
 */
import {
  type DataRecord,
  formatRecordTime,
  RECORD_TIMESTAMP_RE,
} from "../../../src/records/data-record.js";
import type { StoredPoint } from "../../support/expected-points.js";
// the storage rule of the values_id tag (1, "1" and "001" are one series) from the schema oracle
import { valuesIdTag } from "../../support/schema-oracle.js";
import { recordTime } from "./scenario.js";

/**
 * The readable timestamp of an element's raw text (the contract's rule for invalid elements), or
 * undefined. The first match, as a reader of the text would take it.
 */
const READABLE_TIMESTAMP = /"timestamp"\s*:\s*"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)"/;
const readableTimestamp = (text: string): string | undefined => READABLE_TIMESTAMP.exec(text)?.[1];
/** True when the text of a `YYYY-MM-DDTHH:MM:SS` lies in [fromS, toS] (text order is time order). */
const inWindowText = (timestamp: string, fromS: number, toS: number): boolean =>
  timestamp >= recordTime(fromS) && timestamp <= recordTime(toS);
/**
 * True when an invalid element's text is dropped rather than kept as a dead letter: it holds a
 * readable timestamp outside the requested window.
 */
export const droppedInvalid = (text: string, fromS: number, toS: number): boolean => {
  const timestamp = readableTimestamp(text);
  return timestamp !== undefined && !inWindowText(timestamp, fromS, toS);
};

/** A member as the API documents it: a finite number, a string, a boolean or null. */
const isMember = (m: unknown): boolean =>
  m === null ||
  typeof m === "string" ||
  typeof m === "boolean" ||
  (typeof m === "number" && Number.isFinite(m));

/**
 * True when `element` can be a record (something of it can be written): an object with a real
 * `timestamp` and a `values_id` that is a member or absent. Its members are judged apart.
 */
export function isRecordElement(element: unknown): element is Record<string, unknown> {
  if (typeof element !== "object" || element === null || Array.isArray(element)) return false;
  const record = element as Record<string, unknown>;
  const { timestamp } = record;
  if (typeof timestamp !== "string" || !RECORD_TIMESTAMP_RE.test(timestamp)) return false;
  // a real calendar time: it round-trips (not 30 February, not 24:00, not :60)
  const ms = Date.parse(`${timestamp}Z`);
  if (Number.isNaN(ms) || formatRecordTime(new Date(ms)) !== timestamp) return false;
  return !Object.hasOwn(record, "values_id") || isMember(record.values_id);
}

/** The requested members of a record element that are not members as the API documents them. */
export const badMembersOf = (
  record: Record<string, unknown>,
  valueIds: readonly string[],
): string[] => valueIds.filter((id) => Object.hasOwn(record, id) && !isMember(record[id]));

/**
 * True when `element` is a record as the API documents it (spec 2.4), judged only on what was
 * asked for with `valueIds`: an object, a real `timestamp`, a `values_id` that is a member or
 * absent, and the requested members. Members that were not requested do not count, whatever their
 * value (the pipeline removes them).
 */
export function isValidRecord(
  element: unknown,
  valueIds: readonly string[],
): element is DataRecord {
  return isRecordElement(element) && badMembersOf(element, valueIds).length === 0;
}

/**
 * The texts of the top-level elements of a body that starts (after white space) with `[`, up to
 * the array's end or the body's: a plain scan of strings, escapes and nesting. Exact for a JSON
 * array; for anything else, the pieces a reader could take for elements. Undefined otherwise.
 */
export function elementTexts(body: string): string[] | undefined {
  const start = body.search(/\S/);
  if (start < 0 || body.charAt(start) !== "[") return undefined;
  const pieces: string[] = [];
  let depth = 0;
  let inString = false;
  let escaped = false;
  let from = start + 1;
  let i = from;
  for (; i < body.length; i++) {
    const c = body.charAt(i);
    if (inString) {
      if (escaped) escaped = false;
      else if (c === "\\") escaped = true;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      if (depth === 0) break;
      depth--;
    } else if (c === "," && depth === 0) {
      pieces.push(body.slice(from, i));
      from = i + 1;
    }
  }
  pieces.push(body.slice(from, i));
  return pieces.map((p) => p.trim()).filter((p) => p !== "");
}

/**
 * What the pipeline keeps of valid records asked for over [fromS, toS] with `valueIds`: the rows
 * inside the window (timestamp text order is time order), the first of each (timestamp, values_id
 * tag: 1, "1" and "001" are one readout; null and absent are both "none"), and of each only the
 * requested members (and timestamp, values_id).
 */
export function keptRecords(
  records: readonly DataRecord[],
  valueIds: readonly string[],
  fromS: number,
  toS: number,
): DataRecord[] {
  const wanted = new Set(["timestamp", "values_id", ...valueIds]);
  return keptOf(records, fromS, toS).map(
    (record) =>
      Object.fromEntries(Object.entries(record).filter(([id]) => wanted.has(id))) as DataRecord,
  );
}

/** The records (the same objects) inside [fromS, toS], the first of each readout. */
export function keptOf(records: readonly DataRecord[], fromS: number, toS: number): DataRecord[] {
  const from = recordTime(fromS);
  const to = recordTime(toS);
  const seen = new Set<string>();
  const kept: DataRecord[] = [];
  for (const record of records) {
    if (record.timestamp < from || record.timestamp > to) continue;
    const key = `${record.timestamp}|${valuesIdTag(record.values_id)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    kept.push(record);
  }
  return kept;
}

/** Every field of `points` as one fact: measurement, tags, time, field and value. */
export const facts = (points: readonly StoredPoint[]): string[] =>
  points.flatMap((p) =>
    Object.entries(p.fields).map(([field, value]) =>
      JSON.stringify([p.measurement, Object.entries(p.tags).sort(), p.time, field, value]),
    ),
  );

/** A dead letter as the fuzzed test compares it: kind, payload, and the value ids of a member. */
export const letterKey = (kind: string, payload: string, valueIds: readonly string[]): string =>
  JSON.stringify([kind, payload, kind === "member" ? valueIds : []]);

/**
 * The elements of a body the pipeline reads as an array, judged as the refined contract says:
 * records (without their bad requested members); the distinct dead letters (as
 * {@link letterKey}): the texts of the elements that are not records (not JSON, or JSON that
 * is not a record) and the bad members of the records kept (inside the window, the first of
 * their readout); and how many non-records are dropped instead (a readable timestamp outside
 * the window). No body here reaches 20 elements (at most 5 records and one more element,
 * fc.json arrays of at most 10, a string of 30 characters), so the answer is never "mostly
 * invalid rows": SchemaDriftError does not apply (checked by the test). Asked for with
 * `valueIds` over [fromS, toS].
 */
export const judge = (
  texts: readonly string[],
  valueIds: readonly string[],
  fromS: number,
  toS: number,
) => {
  const valid: DataRecord[] = [];
  const badOf = new Map<DataRecord, { text: string; members: string[] }>();
  const letters = new Set<string>();
  let dropped = 0;
  for (const text of texts) {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    if (value !== undefined && isRecordElement(value)) {
      const members = badMembersOf(value, valueIds);
      const record = Object.fromEntries(
        Object.entries(value).filter(([k]) => !members.includes(k)),
      ) as DataRecord;
      valid.push(record);
      if (members.length > 0) badOf.set(record, { text, members });
    } else if (droppedInvalid(text, fromS, toS)) dropped++;
    else letters.add(letterKey("row", text, valueIds));
  }
  for (const record of keptOf(valid, fromS, toS)) {
    const bad = badOf.get(record);
    for (const id of bad?.members ?? []) letters.add(letterKey("member", bad?.text ?? "", [id]));
  }
  return { valid, letters: [...letters].sort(), dropped };
};
