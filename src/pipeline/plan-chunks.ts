/** Request planning for GET /data within the API's limits (spec section 8). Pure, no I/O. */
import { MAX_VALUES_PER_REQUEST, MAX_WINDOW_MS, VALUES_ID } from "../api/limits.js";

/** Spec 8: the longest window of one request in seconds (`to - from` may not exceed 7 days). */
export const MAX_WINDOW_S = MAX_WINDOW_MS / 1000;

/** One GET /data request: at most 20 values over at most 7 days, both ends inclusive (epoch s). */
export interface Chunk {
  /** Position in the plan, 0..n-1 (by window, then by value group). */
  readonly index: number;
  /** Sorted, distinct value ids, at most `MAX_VALUES_PER_REQUEST`, never `values_id`. */
  readonly values: readonly string[];
  readonly fromS: number;
  readonly toS: number;
}

/**
 * Splits `[fromS, toS]` x `valueIds` into the fewest requests the API's limits allow: each value
 * group (the same on every run) over each time window, all chunks of the earliest window first.
 */
export function planChunks(valueIds: readonly string[], fromS: number, toS: number): Chunk[] {
  const groups = valueGroups(valueIds);
  const chunks: Chunk[] = [];
  for (const window of timeWindows(fromS, toS)) {
    for (const values of groups) {
      chunks.push({ index: chunks.length, values, fromS: window.fromS, toS: window.toS });
    }
  }
  return chunks;
}

/** How many chunks `planChunks` returns for `valueCount` distinct value ids, without them. */
export function countChunks(valueCount: number, fromS: number, toS: number): number {
  if (!Number.isSafeInteger(valueCount) || valueCount < 0) {
    throw new RangeError(`valueCount must be a non-negative integer, got ${valueCount}`);
  }
  return Math.ceil(valueCount / MAX_VALUES_PER_REQUEST) * countWindows(fromS, toS);
}

/** `[fromS, toS]` as gapless inclusive windows of <= MAX_WINDOW_S; RangeError for unsafe bounds. */
export function timeWindows(fromS: number, toS: number): { fromS: number; toS: number }[] {
  const count = countWindows(fromS, toS);
  const windows: { fromS: number; toS: number }[] = [];
  let start = fromS;
  for (let k = 0; k < count; k++) {
    const end = Math.min(start + MAX_WINDOW_S, toS);
    windows.push({ fromS: start, toS: end });
    start = end + 1;
  }
  return windows;
}

/**
 * Number of windows of `timeWindows(fromS, toS)`: an inclusive window covers MAX_WINDOW_S + 1
 * distinct seconds, so a single instant needs one window and 14 days + 1 s fits in two.
 */
function countWindows(fromS: number, toS: number): number {
  if (!Number.isSafeInteger(fromS) || !Number.isSafeInteger(toS)) {
    throw new RangeError(`fromS and toS must be integer epoch seconds, got ${fromS}, ${toS}`);
  }
  if (fromS > toS) return 0;
  return Math.ceil((toS - fromS + 1) / (MAX_WINDOW_S + 1));
}

/** Distinct requestable value ids, sorted, in frozen groups of `MAX_VALUES_PER_REQUEST`. */
export function valueGroups(valueIds: readonly string[]): (readonly string[])[] {
  const distinct = new Set(valueIds);
  distinct.delete(VALUES_ID);
  const sorted = [...distinct].sort();
  const groups: (readonly string[])[] = [];
  for (let i = 0; i < sorted.length; i += MAX_VALUES_PER_REQUEST) {
    groups.push(Object.freeze(sorted.slice(i, i + MAX_VALUES_PER_REQUEST)));
  }
  return groups;
}
