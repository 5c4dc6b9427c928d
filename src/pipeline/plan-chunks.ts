/**
 * Request planning for GET /data: splits a time range x a set of value ids into requests that
 * each stay within the API's limits (spec section 8). Pure, no I/O.
 */
import { MAX_VALUES_PER_REQUEST, MAX_WINDOW_MS, VALUES_ID } from "../api/limits.js";

/** Spec 8: the longest window of one request in seconds (`to - from` may not exceed 7 days). */
export const MAX_WINDOW_S = MAX_WINDOW_MS / 1000;

/**
 * One GET /data request: at most 20 values over at most 7 days (spec 8), both ends inclusive
 * (epoch seconds, `toS - fromS <= MAX_WINDOW_S`).
 */
export interface Chunk {
  /** Position in the plan, 0..n-1 (by window, then by value group). */
  readonly index: number;
  /** Sorted, distinct value ids, at most `MAX_VALUES_PER_REQUEST`, never `values_id`. */
  readonly values: readonly string[];
  /** First second of the window (inclusive). */
  readonly fromS: number;
  /** Last second of the window (inclusive). */
  readonly toS: number;
}

/**
 * Splits `[fromS, toS]` (inclusive, epoch seconds) x `valueIds` into the fewest requests the
 * API's limits allow (spec 8: 20 values, 7 days).
 *
 * Values are de-duplicated, `values_id` is dropped (it must never be requested), the rest are
 * sorted in plain string order and cut into groups of 20, so a value lands in the same group on
 * every run given the same set. Chunks are ordered by window, then by group, so all chunks of
 * the earliest window come first. Total = `ceil(V / 20) * timeWindows(fromS, toS).length`.
 *
 * Returns `[]` when `fromS > toS` or no value remains.
 *
 * @throws RangeError when `fromS` or `toS` is not a safe integer.
 */
export function planChunks(valueIds: readonly string[], fromS: number, toS: number): Chunk[] {
  const groups = valueGroups(valueIds);
  const windows = timeWindows(fromS, toS);
  const chunks: Chunk[] = [];
  for (const window of windows) {
    for (const values of groups) {
      chunks.push({ index: chunks.length, values, fromS: window.fromS, toS: window.toS });
    }
  }
  return chunks;
}

/**
 * The number of chunks `planChunks` returns for `valueCount` requestable value ids (already
 * distinct and without `values_id`) over `[fromS, toS]`, without building them (spec 8).
 *
 * @throws RangeError when `valueCount` is not a non-negative safe integer, or `fromS` / `toS`
 * is not a safe integer.
 */
export function countChunks(valueCount: number, fromS: number, toS: number): number {
  if (!Number.isSafeInteger(valueCount) || valueCount < 0) {
    throw new RangeError(`valueCount must be a non-negative integer, got ${valueCount}`);
  }
  return Math.ceil(valueCount / MAX_VALUES_PER_REQUEST) * countWindows(fromS, toS);
}

/**
 * Cuts `[fromS, toS]` (inclusive, epoch seconds) into consecutive inclusive windows with
 * `toS - fromS <= 7 days` each (spec 8). Window k+1 starts one second after window k ends (no
 * overlap, no gap at one-second resolution) and the last one ends at `toS`.
 *
 * The number of windows is `ceil((T + 1) / (MAX_WINDOW_S + 1))` with `T = toS - fromS`: an
 * inclusive window covers up to `MAX_WINDOW_S + 1` distinct seconds, so this is the minimum.
 * It differs from the naive `ceil(T / 7 days)`: a single instant (`T = 0`) needs one window,
 * and e.g. `T = 14 days + 1 s` fits in 2 windows (not 3). Whenever `T` is a whole number of
 * days (the usual case, for any span shorter than ~1600 years) both formulas agree.
 *
 * Returns `[]` when `fromS > toS`.
 *
 * @throws RangeError when `fromS` or `toS` is not a safe integer.
 */
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

/** Number of windows of `timeWindows(fromS, toS)`, validating the bounds. */
function countWindows(fromS: number, toS: number): number {
  if (!Number.isSafeInteger(fromS) || !Number.isSafeInteger(toS)) {
    throw new RangeError(`fromS and toS must be integer epoch seconds, got ${fromS}, ${toS}`);
  }
  if (fromS > toS) return 0;
  return Math.ceil((toS - fromS + 1) / (MAX_WINDOW_S + 1));
}

/** Distinct requestable value ids, sorted, cut into frozen groups of `MAX_VALUES_PER_REQUEST`. */
export function valueGroups(valueIds: readonly string[]): (readonly string[])[] {
  const distinct = new Set(valueIds);
  distinct.delete(VALUES_ID);
  const sorted = [...distinct].sort(compareStrings);
  const groups: (readonly string[])[] = [];
  for (let i = 0; i < sorted.length; i += MAX_VALUES_PER_REQUEST) {
    groups.push(Object.freeze(sorted.slice(i, i + MAX_VALUES_PER_REQUEST)));
  }
  return groups;
}

/** Plain string order (UTF-16 code units), the same as `Array.prototype.sort` without a compare. */
function compareStrings(a: string, b: string): number {
  if (a < b) return -1;
  return a > b ? 1 : 0;
}
