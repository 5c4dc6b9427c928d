/**
 * The scenario of the bad-input tests (test/reliability/bad-input.test.ts): the simulated fleet's
 * seed and device, the backfill's window and chunk count, the fake API's key, the retries and the
 * run's deadline; and the small helpers every part of them uses.
 */
import { formatRecordTime } from "../../../src/records/data-record.js";

export const SEED = 777;
export const DEVICE = "hybrid-site-01";
export const DAY_S = 86_400;
export const TO_S = Date.UTC(2026, 5, 15, 12) / 1000;
/** 8 windows of 7 days x 5 value groups (4 of all_data, 1 of battery_bank): 40 chunks. */
export const FROM_S = TO_S - 56 * DAY_S;
export const CHUNKS = 40;
export const API_KEY = "fake-api-key";
export const RETRIES = 2;
export const RUN_DEADLINE_MS = 30_000;

export const at = <T>(items: readonly T[], index: number): T => {
  const item = items[index];
  if (item === undefined) throw new Error(`no item ${index} (of ${items.length})`);
  return item;
};
export const arrayText = (elements: readonly string[]): string => `[${elements.join(",")}]`;
export const recordTime = (s: number): string => formatRecordTime(new Date(s * 1000));
