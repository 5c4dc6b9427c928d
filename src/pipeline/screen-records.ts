import { VALUES_ID } from "../api/limits.js";
import type { DataRecord } from "../api/schemas.js";
import { formatRecordTime } from "../api/time-format.js";

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

/**
 * Keeps only what was asked for of one GET /data answer (README "What is dropped"): rows inside
 * the requested window, the first row of each (timestamp, values_id), and of each row only the
 * requested value ids (plus timestamp and values_id). Everything dropped is counted; a few names
 * of the dropped members are kept for the one warning per answer.
 */
export class AnswerScreen {
  readonly stats: ScreenStats = { outOfWindow: 0, duplicates: 0, extraMembers: 0 };
  /** Up to five names of dropped members. */
  readonly extraExamples: string[] = [];
  private readonly requested: ReadonlySet<string>;
  private readonly fromText: string;
  private readonly toText: string;
  private seen = new Set<string>();

  /** @param fromS,toS the requested window (inclusive, epoch seconds) */
  constructor(values: readonly string[], fromS: number, toS: number) {
    this.requested = new Set(values);
    // timestamps are fixed-width YYYY-MM-DDTHH:MM:SS, so text order is time order
    this.fromText = formatRecordTime(new Date(fromS * 1000));
    this.toText = formatRecordTime(new Date(toS * 1000));
  }

  /** The records to keep, in order; extra members are removed from them in place. */
  keep(records: readonly DataRecord[]): DataRecord[] {
    const kept: DataRecord[] = [];
    for (const record of records) {
      const { timestamp } = record;
      if (timestamp < this.fromText || timestamp > this.toText) {
        this.stats.outOfWindow++;
        continue;
      }
      const key = `${timestamp}|${typeof record.values_id}|${String(record.values_id)}`;
      if (this.seen.has(key)) {
        this.stats.duplicates++;
        continue;
      }
      this.seen.add(key);
      for (const id in record) {
        if (id === "timestamp" || id === VALUES_ID || this.requested.has(id)) continue;
        delete record[id];
        this.stats.extraMembers++;
        if (this.extraExamples.length < MAX_EXAMPLES) this.extraExamples.push(id);
      }
      kept.push(record);
    }
    return kept;
  }

  /** A retry starts the answer over: forget what was seen and counted. */
  restart(): void {
    this.seen = new Set();
    this.stats.outOfWindow = 0;
    this.stats.duplicates = 0;
    this.stats.extraMembers = 0;
    this.extraExamples.length = 0;
  }

  /** True when anything was dropped. */
  get dropped(): boolean {
    const s = this.stats;
    return s.outOfWindow + s.duplicates + s.extraMembers > 0;
  }
}
