/**
 * What is kept of a GET /data answer, in one place (README "What is dropped"): members cut to
 * those requested, bad members set aside, rows outside the window and repeated rows dropped,
 * invalid rows set aside, and an answer of mostly invalid rows failed as a change of format.
 */
import {
  type DataRecord,
  formatRecordTime,
  isRealRecordTime,
  isRecordMember,
  parseRecordTime,
  RECORD_MEMBER_MESSAGE,
  RECORD_TIMESTAMP_RE,
} from "../records/data-record.js";
import { valuesIdTag } from "./record-encoder.js";

/** A requested member that is not a {@link RecordMember}, as {@link keepRequested} set it aside. */
export interface BadMember {
  readonly valueId: string;
  /** What JSON.parse gave for it (Infinity for 1e400, an object, an array). */
  readonly value: unknown;
}

/**
 * Cuts a parsed element of a GET /data answer to what was asked for, in place: members not
 * requested are removed unjudged (names appended to `extras`), requested ones of a wrong type
 * moved to `bad`. True when it is a record (a real timestamp, a valid `values_id` or none); when
 * false, dataRecordSchema on it says why. One pass, no allocation for a good record.
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

/** What screening dropped from one answer: rows, and members not requested. */
export interface ScreenStats {
  outOfWindow: number;
  /** Rows repeating a (timestamp, values_id) already seen in the answer (the first one is kept). */
  duplicates: number;
  extraMembers: number;
}

const MAX_EXAMPLES = 5;

const TIMESTAMP_TEXT = /"timestamp"\s*:\s*"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)"/;

/** One answer's screen for both paths: rows in the window, the first per (time, values_id). */
export class AnswerScreen {
  readonly stats: ScreenStats = { outOfWindow: 0, duplicates: 0, extraMembers: 0 };
  /** Up to five names of dropped members. */
  readonly extraExamples: string[] = [];
  /** The window as record timestamps (text order is time order), made when first compared. */
  private window: { readonly from: string; readonly to: string } | undefined;
  /** Per values_id tag, the seconds of the window (from its start) of the rows kept. */
  private readonly seen = new Map<string, SecondsSeen>();
  private rowsSeen = 0;
  private invalidRows = 0;

  /** @param fromS,toS the requested window (inclusive, epoch seconds) */
  constructor(
    private readonly fromS: number,
    private readonly toS: number,
  ) {}

  /** Rows read: `rows` in all, `invalid` of them invalid or with invalid members. */
  countRows(rows: number, invalid: number): void {
    this.rowsSeen += rows;
    this.invalidRows += invalid;
  }

  /** Throws {@link SchemaDriftError} when most rows so far were invalid (`first`: one's error). */
  checkDrift(first: string): void {
    if (this.invalidRows >= DRIFT_MIN_ROWS && this.invalidRows > this.rowsSeen * DRIFT_SHARE) {
      throw new SchemaDriftError(this.invalidRows, this.rowsSeen, first);
    }
  }

  /** True when an invalid row is set aside: its timestamp (if one can be read) is in the window. */
  keepInvalid(text: string): boolean {
    const timestamp = TIMESTAMP_TEXT.exec(text)?.[1];
    if (timestamp === undefined || this.inWindow(timestamp)) return true;
    this.stats.outOfWindow++;
    return false;
  }

  keep(records: readonly DataRecord[]): DataRecord[] {
    const kept: DataRecord[] = [];
    for (const record of records) {
      const { timestamp } = record;
      if (!this.inWindow(timestamp)) {
        this.stats.outOfWindow++;
        continue;
      }
      const seconds = Math.floor(parseRecordTime(timestamp) / 1000);
      if (this.isFirst(seconds, valuesIdTag(record.values_id))) kept.push(record);
    }
    return kept;
  }

  /** True when a row at `seconds` is in the window; counts it dropped otherwise. */
  keepTime(seconds: number): boolean {
    if (seconds >= this.fromS && seconds <= this.toS) return true;
    this.stats.outOfWindow++;
    return false;
  }

  /**
   * True for the first row of a (time, values_id tag) in the window; counts the others as
   * duplicates. The tag is what InfluxDB would see: 1, "1" and "001" are one readout.
   */
  isFirst(seconds: number, tag: string): boolean {
    let times = this.seen.get(tag);
    if (times === undefined) {
      times = new SecondsSeen(this.toS - this.fromS);
      this.seen.set(tag, times);
    }
    if (times.add(seconds - this.fromS)) return true;
    this.stats.duplicates++;
    return false;
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

  /** True when a `YYYY-MM-DDTHH:MM:SS` timestamp (text order is time order) is in the window. */
  private inWindow(timestamp: string): boolean {
    this.window ??= {
      from: formatRecordTime(new Date(this.fromS * 1000)),
      to: formatRecordTime(new Date(this.toS * 1000)),
    };
    return timestamp >= this.window.from && timestamp <= this.window.to;
  }
}

/** Windows up to this long keep a bit per second: a request's window is at most 7 days (spec 8). */
const BITMAP_MAX_S = 8 * 86_400;

/** Seconds of a window seen: a bit per second (76 KB for 7 days), a set for longer windows. */
class SecondsSeen {
  private readonly bits: Uint8Array | undefined;
  private readonly set: Set<number> | undefined;

  constructor(windowS: number) {
    if (windowS <= BITMAP_MAX_S) this.bits = new Uint8Array((Math.max(0, windowS) >> 3) + 1);
    else this.set = new Set();
  }

  /** Notes second `at` of the window; false when it was noted before. */
  add(at: number): boolean {
    const { bits } = this;
    if (bits === undefined) {
      if (this.set?.has(at)) return false;
      this.set?.add(at);
      return true;
    }
    const byte = at >> 3;
    const bit = 1 << (at & 7);
    const known = bits[byte] ?? 0;
    if ((known & bit) !== 0) return false;
    bits[byte] = known | bit;
    return true;
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
