/**
 * What is kept of a GET /data answer, in one place (README "What is dropped"): the members of a
 * row cut to those requested (the others removed, counted, not judged), its requested members of
 * a wrong type set aside one by one, rows outside the requested window and repeated rows dropped,
 * invalid rows kept as dead letters unless they lie outside the window, and an answer made mostly
 * of invalid rows failed as a change of the API's format. Pure: the client's stream calls
 * {@link keepRequested} per element, the chunk writer an {@link AnswerScreen} per answer; what is
 * set aside is stored by the pipeline.
 */
import type { DataPage, InvalidRecord } from "../api/data-stream.js";
import {
  type DataRecord,
  isRealRecordTime,
  isRecordMember,
  RECORD_MEMBER_MESSAGE,
  RECORD_TIMESTAMP_RE,
} from "../api/schemas.js";
import { formatRecordTime } from "../api/time-format.js";
import { valuesIdTag } from "./record-encoder.js";

/** A requested member that is not a {@link RecordMember}, as {@link keepRequested} set it aside. */
export interface BadMember {
  readonly valueId: string;
  /** What JSON.parse gave for it (Infinity for 1e400, an object, an array). */
  readonly value: unknown;
}

/**
 * Checks a parsed element of a GET /data answer against what was asked for, in place: members
 * that were not requested are removed whatever their value (they are not ours to judge) and their
 * names appended to `extras`. It is a record when it is an object with a real timestamp and a
 * `values_id` that is a member (or none); nothing of it can be written otherwise (false, and the
 * element is left as it is but for the cut). A record's requested members that are not of the
 * allowed types are removed from it and appended to `bad`, so that its good members can be
 * written. The hot path of the boundary: one pass, no copy, no allocation for a good record.
 * When it refuses, {@link dataRecordSchema} on the same (cut) object says why.
 */
export function keepRequested(
  value: unknown,
  requested: ReadonlySet<string>,
  extras: string[],
  bad: BadMember[],
): value is DataRecord {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const record = value as Record<string, unknown>;
  const before = bad.length;
  let valid = true;
  for (const key in record) {
    if (key === "timestamp") continue;
    if (key === "values_id") {
      if (!isRecordMember(record[key])) valid = false;
    } else if (!requested.has(key)) {
      delete record[key];
      extras.push(key);
    } else if (!isRecordMember(record[key])) bad.push({ valueId: key, value: record[key] });
  }
  const { timestamp } = record;
  if (
    !valid ||
    typeof timestamp !== "string" ||
    !RECORD_TIMESTAMP_RE.test(timestamp) ||
    !isRealRecordTime(timestamp)
  ) {
    bad.length = before;
    return false;
  }
  if (bad.length > before) for (const { valueId } of bad.slice(before)) delete record[valueId];
  return true;
}

/** What is wrong with a member {@link keepRequested} set aside: names it and what it was. */
export function badMemberMessage(member: BadMember): string {
  const { value } = member;
  const got =
    typeof value === "number"
      ? `${value}, out of a double's range`
      : Array.isArray(value)
        ? "an array"
        : typeof value === "object"
          ? "an object"
          : typeof value;
  return `${member.valueId}: ${RECORD_MEMBER_MESSAGE}; got ${got}`;
}

/** What screening dropped from one answer. */
export interface ScreenStats {
  /** Rows whose timestamp lies outside the requested window. */
  outOfWindow: number;
  /** Rows repeating a (timestamp, values_id) already seen in the answer (the first one is kept). */
  duplicates: number;
  /** Members that were not requested, removed from their rows. */
  extraMembers: number;
}

const MAX_EXAMPLES = 5;

/** What one page comes to: the records to write, and what to set aside as dead letters. */
export interface ScreenedPage {
  /** Records to encode and write, in order. */
  readonly kept: DataRecord[];
  /** Invalid rows within the window: dead letters (kind `row`). */
  readonly invalidRows: readonly InvalidRecord[];
  /** Bad members of kept records: a dead letter each (kind `member`), with its whole row. */
  readonly badMembers: readonly {
    readonly valueId: string;
    readonly text: string;
    readonly error: string;
  }[];
}

const TIMESTAMP_TEXT = /"timestamp"\s*:\s*"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)"/;

/**
 * Keeps only what was asked for of one GET /data answer, page by page: rows inside the requested
 * window and the first row of each (timestamp, values_id tag); invalid rows outside the window
 * are dropped like valid ones, the others set aside; bad members of a dropped row go with it.
 * The client has already cut each row to the requested value ids; those removed members are
 * counted here, so that everything dropped from an answer is counted, and told, in one place.
 * One screen per answer.
 */
export class AnswerScreen {
  readonly stats: ScreenStats = { outOfWindow: 0, duplicates: 0, extraMembers: 0 };
  /** Up to five names of dropped members. */
  readonly extraExamples: string[] = [];
  private readonly fromText: string;
  private readonly toText: string;
  private readonly seen = new Set<string>();
  private rowsSeen = 0;
  private invalidRows = 0;

  /** @param fromS,toS the requested window (inclusive, epoch seconds) */
  constructor(fromS: number, toS: number) {
    // timestamps are fixed-width YYYY-MM-DDTHH:MM:SS, so text order is time order
    this.fromText = formatRecordTime(new Date(fromS * 1000));
    this.toText = formatRecordTime(new Date(toS * 1000));
  }

  /**
   * Screens the next page of the answer. Throws {@link SchemaDriftError} once most rows so far
   * were invalid or carried invalid members (at least {@link DRIFT_MIN_ROWS} of them).
   */
  screen(page: DataPage): ScreenedPage {
    this.rowsSeen += page.records.length + page.invalid.length;
    this.invalidRows += page.invalid.length + page.badMembers.length;
    if (this.invalidRows >= DRIFT_MIN_ROWS && this.invalidRows > this.rowsSeen * DRIFT_SHARE) {
      const first = page.invalid[0]?.error ?? page.badMembers[0]?.members[0]?.error ?? "";
      throw new SchemaDriftError(this.invalidRows, this.rowsSeen, first);
    }
    const invalidRows = page.invalid.filter((bad) => {
      const timestamp = TIMESTAMP_TEXT.exec(bad.text)?.[1];
      if (timestamp === undefined || this.inWindow(timestamp)) return true;
      this.stats.outOfWindow++;
      return false;
    });
    this.noteExtras(page.extraMembers, page.extraMemberNames);
    const kept = this.keep(page.records);
    if (page.badMembers.length === 0) return { kept, invalidRows, badMembers: [] };
    const keptSet = new Set(kept);
    const badMembers = page.badMembers.flatMap(({ record, text, members }) =>
      keptSet.has(record) ? members.map((m) => ({ valueId: m.valueId, text, error: m.error })) : [],
    );
    return { kept, invalidRows, badMembers };
  }

  /** The records to keep, in order. */
  keep(records: readonly DataRecord[]): DataRecord[] {
    const kept: DataRecord[] = [];
    for (const record of records) {
      const { timestamp } = record;
      if (!this.inWindow(timestamp)) {
        this.stats.outOfWindow++;
        continue;
      }
      // the series key InfluxDB would see: 1, "1" and "001" are one readout
      const key = `${timestamp}|${valuesIdTag(record.values_id)}`;
      if (this.seen.has(key)) {
        this.stats.duplicates++;
        continue;
      }
      this.seen.add(key);
      kept.push(record);
    }
    return kept;
  }

  /** Members the client removed from a page's rows because they were not requested. */
  noteExtras(count: number, names: readonly string[]): void {
    this.stats.extraMembers += count;
    for (const name of names) {
      if (this.extraExamples.length < MAX_EXAMPLES && !this.extraExamples.includes(name)) {
        this.extraExamples.push(name);
      }
    }
  }

  /** True when a `YYYY-MM-DDTHH:MM:SS` timestamp lies in the requested window. */
  inWindow(timestamp: string): boolean {
    return timestamp >= this.fromText && timestamp <= this.toText;
  }

  /** True when anything was dropped. */
  get dropped(): boolean {
    const s = this.stats;
    return s.outOfWindow + s.duplicates + s.extraMembers > 0;
  }
}

/** An answer whose rows are mostly invalid is not bad rows but an API that changed its format. */
export const DRIFT_MIN_ROWS = 20;
const DRIFT_SHARE = 0.5;

/** The API's answers no longer match what energy-etl understands: the chunk fails, loudly. */
export class SchemaDriftError extends Error {
  constructor(invalid: number, rows: number, firstError: string) {
    super(
      `${invalid} of ${rows} rows of the answer are not valid records (or carry invalid ` +
        "members), so the API's format changed rather than a few rows being bad; not kept as " +
        `dead letters. First: ${firstError}`,
    );
    this.name = "SchemaDriftError";
  }
}
