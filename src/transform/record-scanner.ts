import { JSON_BYTES } from "../util/json-bytes.js";
import { AS_TEXT, isJsonSpace, NEED_MORE } from "./json-array-scanner.js";
import {
  FALSE_BYTES,
  type KeyBytes,
  keyBytes,
  literal,
  matchKey,
  matchKeyWords,
  NULL_BYTES,
  numberEnd,
  numberIsShortest,
  plainString,
  skipSpaces,
  TRUE_BYTES,
  timestampSeconds,
} from "./json-tokens.js";

/** How a member's value is written: its bytes as they came, or a text made of them. */
export enum ValueKind {
  /** A number in its shortest form (as JavaScript writes it): its bytes are the field value. */
  Number,
  /** A number in another form (`1.50`, `1e3`): {@link RecordScanner.numberText} holds its text. */
  NumberText,
  True,
  False,
  /** A string without escapes: its bytes, quotes included, are its JSON text. */
  String,
}

const { QUOTE, BACKSLASH, COMMA, COLON, OPEN_OBJECT, CLOSE_OBJECT, ZERO } = JSON_BYTES;

/** Key indexes of the two members every record has. */
const TIMESTAMP = -1;
const VALUES_ID = -2;
const UNKNOWN = -3;

/** Most members a record read by the fast path may have. */
const MAX_MEMBERS = 256;

/**
 * The fast path of reading a GET /data answer: one record's bytes read in one pass, without
 * JSON.parse, an object per record or a string per member. It reads what a record usually is
 * (the requested value ids, `timestamp` and `values_id`; numbers, strings without escapes,
 * booleans or null) and gives up on anything else (AS_TEXT) for the reference path. What it
 * reads, it reads as the reference path would; the property tests hold both to that.
 */
export class RecordScanner {
  private readonly keys: readonly KeyBytes[];
  /** The bytes the last read was in, and a DataView of them (keys are compared by words). */
  private viewOf: Buffer | undefined;
  private view: DataView = NO_VIEW;
  /** For each member position, the key index read there last: records repeat their key order. */
  private readonly order = new Int32Array(MAX_MEMBERS).fill(UNKNOWN);
  /** Per key index, the record that last had it (duplicate keys are left to JSON.parse). */
  private readonly seenIn: Int32Array;
  private serial = 0;
  private lastTimestamp = Buffer.alloc(19);
  private lastTimestampS = Number.NaN;

  // what the last read found
  timestampS = 0;
  /** Its `values_id` member's value (JSON.parse of its text); undefined when it has none. */
  valuesId: number | string | boolean | null | undefined;
  /** Its non-null members: key index, kind, and where the value's bytes are. */
  members = 0;
  readonly key = new Int32Array(MAX_MEMBERS);
  readonly kind = new Uint8Array(MAX_MEMBERS);
  readonly start = new Int32Array(MAX_MEMBERS);
  readonly end = new Int32Array(MAX_MEMBERS);
  /** Texts of the {@link ValueKind.NumberText} members, by member index. */
  readonly numberText: string[] = [];

  /** @param keys the requested value ids, by key index */
  constructor(keys: readonly string[]) {
    this.keys = keys.map(keyBytes);
    this.seenIn = new Int32Array(keys.length).fill(-1);
  }

  /**
   * Reads the record starting at `start` (its `{`) of `bytes`, known up to `limit`: the offset
   * after its `}`, NEED_MORE, or AS_TEXT when the record is one for the reference path.
   */
  read(bytes: Buffer, start: number, limit: number): number {
    if (bytes[start] !== OPEN_OBJECT) return AS_TEXT;
    if (bytes !== this.viewOf) {
      this.viewOf = bytes;
      this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
    }
    const serial = ++this.serial;
    this.members = 0;
    this.valuesId = undefined;
    let timestamp = false;
    let position = 0;
    let i = skipSpaces(bytes, start + 1, limit);
    for (;;) {
      if (i >= limit) return NEED_MORE;
      if (bytes[i] !== QUOTE) return AS_TEXT;
      const key = this.keyAt(bytes, i + 1, limit, position);
      if (key < 0) return key;
      const index = this.order[position] ?? UNKNOWN;
      // members past the last place share it (a record of many nulls): its key is the last found
      if (position < MAX_MEMBERS - 1) position++;
      // `"key":value` without spaces is what answers are; spaces are allowed all the same
      i = bytes[key] === COLON ? key : skipSpaces(bytes, key, limit);
      if (i >= limit) return NEED_MORE;
      if (bytes[i] !== COLON) return AS_TEXT;
      i++;
      if (i < limit && isJsonSpace(bytes[i] ?? 0)) i = skipSpaces(bytes, i, limit);
      if (i >= limit) return NEED_MORE;
      let end: number;
      if (index === TIMESTAMP) {
        if (timestamp) return AS_TEXT;
        timestamp = true;
        end = this.readTimestamp(bytes, i, limit);
      } else if (index === VALUES_ID) {
        if (this.valuesId !== undefined) return AS_TEXT;
        end = this.readValuesId(bytes, i, limit);
      } else {
        if (this.seenIn[index] === serial) return AS_TEXT;
        this.seenIn[index] = serial;
        end = this.readMember(index, bytes, i, limit);
      }
      if (end < 0) return end;
      i = end < limit && isJsonSpace(bytes[end] ?? 0) ? skipSpaces(bytes, end, limit) : end;
      if (i >= limit) return NEED_MORE;
      const c = bytes[i];
      if (c === CLOSE_OBJECT) return timestamp ? i + 1 : AS_TEXT;
      if (c !== COMMA) return AS_TEXT;
      i++;
      if (i < limit && isJsonSpace(bytes[i] ?? 0)) i = skipSpaces(bytes, i, limit);
    }
  }

  /**
   * The key whose text starts at `i`: sets {@link order} at `position` to its index and returns
   * the offset after its closing quote (or NEED_MORE, or AS_TEXT for a key not requested).
   */
  private keyAt(bytes: Buffer, i: number, limit: number, position: number): number {
    const predicted = this.order[position] ?? UNKNOWN;
    if (predicted !== UNKNOWN) {
      const after = matchKeyWords(bytes, this.view, i, limit, this.keyBytes(predicted));
      if (after >= 0) return after;
      if (after === NEED_MORE) return NEED_MORE;
    }
    // the key's text: plain characters up to the closing quote
    let j = i;
    for (; j < limit; j++) {
      const c = bytes[j] ?? 0;
      if (c === QUOTE) break;
      if (c === BACKSLASH || c < 0x20) return AS_TEXT;
    }
    if (j >= limit) return NEED_MORE;
    const length = j - i;
    for (let k = VALUES_ID; k < this.keys.length; k++) {
      const key = this.keyBytes(k).bytes;
      if (key.length === length && matchKey(bytes, i, limit, key) === j + 1) {
        this.order[position] = k;
        return j + 1;
      }
    }
    return AS_TEXT;
  }

  private keyBytes(index: number): KeyBytes {
    if (index === TIMESTAMP) return TIMESTAMP_KEY;
    if (index === VALUES_ID) return VALUES_ID_KEY;
    return this.keys[index] ?? EMPTY;
  }

  /** A member's value at `i`: recorded unless null; returns the offset after it. */
  private readMember(index: number, bytes: Buffer, i: number, limit: number): number {
    const c = bytes[i] ?? 0;
    const m = this.members;
    let end: number;
    if (c === 0x6e) return literal(bytes, i, limit, NULL_BYTES);
    if (c === 0x74) {
      end = literal(bytes, i, limit, TRUE_BYTES);
      this.kind[m] = ValueKind.True;
    } else if (c === 0x66) {
      end = literal(bytes, i, limit, FALSE_BYTES);
      this.kind[m] = ValueKind.False;
    } else if (c === QUOTE) {
      end = plainString(bytes, i + 1, limit);
      this.kind[m] = ValueKind.String;
    } else {
      end = this.readNumber(m, bytes, i, limit);
    }
    if (end < 0) return end;
    this.key[m] = index;
    this.start[m] = i;
    this.end[m] = end;
    if (m < MAX_MEMBERS - 1) this.members = m + 1;
    else return AS_TEXT;
    return end;
  }

  /**
   * A JSON number at `i`: its bytes are its field value when they are its shortest form, else
   * `String(Number(text))` is kept; one out of a double's range is the reference path's.
   */
  private readNumber(m: number, bytes: Buffer, i: number, limit: number): number {
    const end = numberEnd(bytes, i, limit);
    if (end < 0) return end;
    if (numberIsShortest) {
      this.kind[m] = ValueKind.Number;
      return end;
    }
    const value = Number(bytes.toString("latin1", i, end));
    if (!Number.isFinite(value)) return AS_TEXT;
    this.kind[m] = ValueKind.NumberText;
    this.numberText[m] = String(value);
    return end;
  }

  /** `"YYYY-MM-DDTHH:MM:SS"` naming a real second; anything else is the reference path's. */
  private readTimestamp(bytes: Buffer, i: number, limit: number): number {
    if (bytes[i] !== QUOTE) return AS_TEXT;
    const end = plainString(bytes, i + 1, limit);
    if (end < 0) return end;
    if (end !== i + 21) return AS_TEXT;
    const last = this.lastTimestamp;
    let same = true;
    for (let k = 18; k >= 0; k--) {
      if (last[k] !== bytes[i + 1 + k]) {
        same = false;
        break;
      }
    }
    if (!same) {
      const seconds = timestampSeconds(bytes, i + 1);
      if (seconds === undefined) return AS_TEXT;
      bytes.copy(last, 0, i + 1, i + 20);
      this.lastTimestampS = seconds;
    }
    this.timestampS = this.lastTimestampS;
    return i + 21;
  }

  /** The `values_id` member: any scalar (it becomes a tag). */
  private readValuesId(bytes: Buffer, i: number, limit: number): number {
    const c = bytes[i] ?? 0;
    let end: number;
    if (c === 0x6e) end = literal(bytes, i, limit, NULL_BYTES);
    else if (c === 0x74) end = literal(bytes, i, limit, TRUE_BYTES);
    else if (c === 0x66) end = literal(bytes, i, limit, FALSE_BYTES);
    else if (c === QUOTE) end = plainString(bytes, i + 1, limit);
    else end = numberEnd(bytes, i, limit);
    if (end < 0) return end;
    // one byte is one digit (the only scalar that short), the usual readout number: no string
    if (end === i + 1) this.valuesId = (bytes[i] ?? 0) - ZERO;
    else {
      const value: unknown = JSON.parse(bytes.toString("utf8", i, end));
      if (typeof value === "number" && !Number.isFinite(value)) return AS_TEXT;
      this.valuesId = value as number | string | boolean | null;
    }
    return end;
  }
}

const TIMESTAMP_KEY = keyBytes("timestamp");
const VALUES_ID_KEY = keyBytes("values_id");
const EMPTY = keyBytes("");
const NO_VIEW: DataView = new DataView(new ArrayBuffer(0));
