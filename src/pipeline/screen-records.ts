import type { DataRecord } from "../api/schemas.js";
import { formatRecordTime } from "../api/time-format.js";
import { valuesIdTag } from "../transform/record-encoder.js";

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
 * the requested window and the first row of each (timestamp, values_id tag). The client has
 * already cut each row to the requested value ids; those removed members are noted here too, so
 * that everything dropped from an answer is counted, and told in one warning, in one place.
 */
export class AnswerScreen {
  readonly stats: ScreenStats = { outOfWindow: 0, duplicates: 0, extraMembers: 0 };
  /** Up to five names of dropped members. */
  readonly extraExamples: string[] = [];
  private readonly fromText: string;
  private readonly toText: string;
  private seen = new Set<string>();

  /** @param fromS,toS the requested window (inclusive, epoch seconds) */
  constructor(fromS: number, toS: number) {
    // timestamps are fixed-width YYYY-MM-DDTHH:MM:SS, so text order is time order
    this.fromText = formatRecordTime(new Date(fromS * 1000));
    this.toText = formatRecordTime(new Date(toS * 1000));
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
