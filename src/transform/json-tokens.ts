/**
 * JSON tokens read straight from bytes for the fast path (record-scanner.ts): each returns the
 * offset after the token, NEED_MORE when the bytes end first, or AS_TEXT when it is not read here.
 */
import { isUtf8 } from "node:buffer";
import { JSON_BYTES } from "../util/json-bytes.js";
import { AS_TEXT, isJsonSpace, NEED_MORE } from "./json-array-scanner.js";

const { QUOTE, BACKSLASH, MINUS, DOT, ZERO, NINE, LOWER_E, UPPER_E, PLUS } = JSON_BYTES;

export const NULL_BYTES = Buffer.from("null");
export const TRUE_BYTES = Buffer.from("true");
export const FALSE_BYTES = Buffer.from("false");

export function skipSpaces(bytes: Buffer, i: number, limit: number): number {
  while (i < limit && isJsonSpace(bytes[i] ?? 0)) i++;
  return i;
}

/**
 * Compares the key text at `i` with `key` and its closing quote: the offset after the quote,
 * AS_TEXT when it is another key, NEED_MORE when the bytes end first.
 */
export function matchKey(bytes: Buffer, i: number, limit: number, key: Buffer): number {
  const n = key.length;
  const known = Math.min(n, limit - i);
  for (let k = 0; k < known; k++) if (bytes[i + k] !== key[k]) return AS_TEXT;
  if (i + n >= limit) return NEED_MORE;
  return bytes[i + n] === QUOTE ? i + n + 1 : AS_TEXT;
}

/** A key's UTF-8 bytes, and their first whole 32-bit words (little-endian) for {@link matchKeyWords}. */
export interface KeyBytes {
  readonly bytes: Buffer;
  readonly words: Int32Array;
}

export function keyBytes(text: string): KeyBytes {
  const bytes = Buffer.from(text, "utf8");
  const words = new Int32Array(bytes.length >> 2);
  for (let w = 0; w < words.length; w++) words[w] = bytes.readInt32LE(4 * w);
  return { bytes, words };
}

/**
 * {@link matchKey} four bytes at a time, read through `view` (a DataView of all of `bytes`), when
 * the key and the byte after it are in the bytes: keys are most of a record's bytes, and a byte
 * loop over them was half of the record scanner's time.
 */
export function matchKeyWords(
  bytes: Buffer,
  view: DataView,
  i: number,
  limit: number,
  key: KeyBytes,
): number {
  const n = key.bytes.length;
  if (i + n >= limit) return matchKey(bytes, i, limit, key.bytes);
  const { words } = key;
  for (let w = 0; w < words.length; w++) {
    if (view.getInt32(i + 4 * w, true) !== words[w]) return AS_TEXT;
  }
  for (let k = words.length * 4; k < n; k++) if (bytes[i + k] !== key.bytes[k]) return AS_TEXT;
  return bytes[i + n] === QUOTE ? i + n + 1 : AS_TEXT;
}

/** `null`, `true` or `false` at `i`: the offset after it. */
export function literal(bytes: Buffer, i: number, limit: number, word: Buffer): number {
  const n = word.length;
  const known = Math.min(n, limit - i);
  for (let k = 1; k < known; k++) if (bytes[i + k] !== word[k]) return AS_TEXT;
  return i + n > limit ? NEED_MORE : i + n;
}

/**
 * A string whose text starts at `i`, without escapes or control characters and in valid UTF-8
 * (the reference path decodes invalid bytes as U+FFFD; copying them would not): the offset after
 * its closing quote.
 */
export function plainString(bytes: Buffer, i: number, limit: number): number {
  let high = false;
  for (let j = i; j < limit; j++) {
    const c = bytes[j] ?? 0;
    if (c === QUOTE) return high && !isUtf8(bytes.subarray(i, j)) ? AS_TEXT : j + 1;
    if (c === BACKSLASH || c < 0x20) return AS_TEXT;
    if (c >= 0x80) high = true;
  }
  return NEED_MORE;
}

/**
 * Whether the last number {@link numberEnd} read is what `String(Number(text))` writes: no
 * exponent, no fraction ending in 0, not `-0`, at most 15 significant digits and no smaller than
 * 1e-6. Conservative (a number it refuses is converted, to the same text); read right after the
 * call, so that one pass judges both a number's syntax and its form.
 */
export let numberIsShortest = false;

/** The end of a JSON number at `i` (`-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?`); AS_TEXT if none. */
export function numberEnd(bytes: Buffer, i: number, limit: number): number {
  numberIsShortest = false;
  let j = i;
  const negative = bytes[j] === MINUS;
  if (negative) j++;
  if (j >= limit) return NEED_MORE;
  const first = bytes[j] ?? 0;
  const zeroInt = first === ZERO;
  if (zeroInt) j++;
  else if (first > ZERO && first <= NINE) j = digitsEnd(bytes, j + 1, limit);
  else return AS_TEXT;
  const intDigits = j - i - (negative ? 1 : 0);
  let fraction = 0;
  let leadingZeros = 0;
  let lastDigit: number = ZERO;
  if (j < limit && bytes[j] === DOT) {
    const from = j + 1;
    j = digitsEnd(bytes, from, limit);
    if (j === from) return j >= limit ? NEED_MORE : AS_TEXT;
    fraction = j - from;
    lastDigit = bytes[j - 1] ?? ZERO;
    while (bytes[from + leadingZeros] === ZERO) leadingZeros++;
  }
  let exponent = false;
  if (j < limit && (bytes[j] === LOWER_E || bytes[j] === UPPER_E)) {
    exponent = true;
    j++;
    if (j < limit && (bytes[j] === PLUS || bytes[j] === MINUS)) j++;
    const from = j;
    j = digitsEnd(bytes, from, limit);
    if (j === from) return j >= limit ? NEED_MORE : AS_TEXT;
  }
  // the number must end here, not run into more text ("01", "1x")
  if (j >= limit) return NEED_MORE;
  if (exponent || (fraction > 0 && lastDigit === ZERO)) return j;
  if (!zeroInt) numberIsShortest = intDigits + fraction <= 15;
  else if (fraction === 0)
    numberIsShortest = !negative; // "-0" is written "0"
  else numberIsShortest = leadingZeros < 6 && fraction - leadingZeros <= 15;
  return j;
}

function digitsEnd(bytes: Buffer, j: number, limit: number): number {
  while (j < limit) {
    const c = bytes[j] ?? 0;
    if (c < ZERO || c > NINE) break;
    j++;
  }
  return j;
}

/**
 * Epoch seconds of `YYYY-MM-DDTHH:MM:SS` at `i` when it names a real second (as isRealRecordTime:
 * not 30 February, not 24:00, not :60); undefined otherwise. No Date and no string.
 */
export function timestampSeconds(bytes: Uint8Array, i: number): number | undefined {
  for (let k = 0; k < 19; k++) {
    const c = bytes[i + k] ?? 0;
    const expected = TIMESTAMP_SHAPE[k] ?? 0;
    if (expected === DIGIT) {
      if (c < ZERO || c > NINE) return undefined;
    } else if (c !== expected) return undefined;
  }
  const number = (at: number, width: number) => {
    let n = 0;
    for (let k = 0; k < width; k++) n = n * 10 + ((bytes[i + at + k] ?? 0) - ZERO);
    return n;
  };
  const year = number(0, 4);
  const month = number(5, 2);
  const day = number(8, 2);
  const hour = number(11, 2);
  const minute = number(14, 2);
  const second = number(17, 2);
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  return daysFromCivil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
}

function daysIn(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

const DIGIT = 0;
/** `dddd-dd-ddTdd:dd:dd`, a digit as 0. */
const TIMESTAMP_SHAPE = Uint8Array.from("dddd-dd-ddTdd:dd:dd", (c) =>
  c === "d" ? DIGIT : c.charCodeAt(0),
);
