import { GrowingBytes } from "../util/growing-bytes.js";
import { JSON_BYTES } from "../util/json-bytes.js";

/** A body that is not a JSON array; `tooLong` when one element is longer than the scanner's cap. */
export class JsonArrayError extends SyntaxError {
  constructor(
    message: string,
    readonly tooLong = false,
  ) {
    super(message);
    this.name = "JsonArrayError";
  }
}

/** {@link ElementReader.read}: the element's end is not in the bytes yet. */
export const NEED_MORE = -1;
/** {@link ElementReader.read}: frame the element generically and hand it over as text. */
export const AS_TEXT = -2;

export interface ElementReader {
  /**
   * Reads the element that starts at `start` of `bytes` (known up to `limit`) without taking it:
   * the offset just after it, NEED_MORE, or AS_TEXT to have it framed here for {@link text}.
   */
  read(bytes: Buffer, start: number, limit: number): number;
  /** The element {@link read} just read, confirmed whole (a `,` or `]` follows it): take it. */
  accept(): void;
  /** An element framed here (trimmed; as it came, in UTF-8). */
  text(text: string): void;
  /** True while the reader wants no further element now (its output is full). */
  paused(): boolean;
}

enum State {
  BeforeArray,
  /** After `[`: an element or `]`. */
  First,
  /** After `,`: an element. */
  Next,
  /** After an element: `,` or `]`. */
  After,
  Ended,
}

/** The carry's buffer is kept for the next element unless it grew beyond this. */
const KEEP_CARRY_BYTES = 1 << 20;

const { QUOTE, BACKSLASH, COMMA, OPEN_ARRAY, CLOSE_ARRAY, OPEN_OBJECT, CLOSE_OBJECT } = JSON_BYTES;

/** True for the four bytes JSON allows between tokens. */
export function isJsonSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/**
 * Frames a JSON array that arrives in byte pieces into its elements (`[`, elements separated by
 * `,`, `]`), so that a large GET /data body is never one string; an {@link ElementReader} reads
 * each element, whole in one pass (the fast path) or as text framed here. The bytes of an element
 * not read whole yet are copied aside (at most `maxElementBytes`) until the piece that ends it
 * comes; each piece is framed once, where the last one stopped.
 */
export class JsonArrayScanner {
  private state = State.BeforeArray;
  /** The bytes of an unfinished element (from its start), kept until the piece that ends it. */
  private readonly carry = new GrowingBytes(KEEP_CARRY_BYTES);
  /** Where the carried element's framing stands (strings, escapes, nesting). */
  private readonly framer = new ElementFramer();
  /** The carried element is framed generically (the reader gave it up). */
  private asText = false;

  constructor(
    private readonly reader: ElementReader,
    private readonly maxElementBytes = Number.POSITIVE_INFINITY,
  ) {}

  /**
   * Reads a piece of the body from `from` (a new piece from 0), the reader called for every
   * element it completes: returns where it stopped (less than its length when the reader paused).
   */
  push(piece: Buffer, from = 0): number {
    // (a carried element is always ended by a new piece: push() returns inside a piece only
    // when the reader paused, and then nothing is carried)
    if (this.carry.length > 0) {
      // only the new bytes are framed: is the carried element's end in this piece?
      const end = this.framer.advance(piece, 0);
      if (end === NEED_MORE) {
        this.carryOn(piece);
        return piece.length;
      }
      // whole now, with the `,` or `]` after it: read once where it was kept (its length checked)
      this.carry.append(piece.subarray(0, end + 1));
      // the reader reads it, or asks for more and keep() finds it whole: a reader's bug, thrown
      this.scan(this.carry.view(), 0, true);
      this.carry.clear();
      from = end;
    }
    return this.scan(piece, from, false);
  }

  /**
   * Reads `bytes` from `from`; with `firstOnly`, only the first element (its end, or NEED_MORE).
   */
  private scan(bytes: Buffer, from: number, firstOnly: boolean): number {
    const n = bytes.length;
    let i = from;
    while (i < n) {
      const c = bytes[i] ?? 0;
      if (isJsonSpace(c)) {
        i++;
        continue;
      }
      switch (this.state) {
        case State.BeforeArray:
          if (c !== OPEN_ARRAY) throw notAnArray(c);
          this.state = State.First;
          i++;
          break;
        case State.After:
          // an element ends where its `,` or `]` is (element())
          this.state = c === COMMA ? State.Next : State.Ended;
          i++;
          break;
        case State.Ended:
          throw new JsonArrayError("text after the end of the array");
        default: {
          if (c === CLOSE_ARRAY || c === COMMA) {
            if (this.state === State.Next || c === COMMA) {
              throw new JsonArrayError("empty array element");
            }
            this.state = State.Ended;
            i++;
            break;
          }
          if (!firstOnly && this.reader.paused()) return i;
          const end = this.element(bytes, i, n);
          if (end === NEED_MORE) {
            this.keep(bytes.subarray(i));
            return firstOnly ? NEED_MORE : n;
          }
          this.state = State.After;
          if (firstOnly) return end;
          i = end;
        }
      }
    }
    return n;
  }

  /** Throws unless the array was closed (a truncated body). */
  end(): void {
    if (this.state === State.Ended) return;
    throw new JsonArrayError(
      this.state === State.BeforeArray ? "empty body" : "the array is not closed (truncated?)",
    );
  }

  /** An element, read by the reader or framed here: where it ends (at `,`/`]`), or NEED_MORE. */
  private element(bytes: Buffer, start: number, n: number): number {
    if (!this.asText) {
      const end = this.reader.read(bytes, start, n);
      if (end === NEED_MORE) return NEED_MORE;
      if (end !== AS_TEXT) {
        let j = end;
        while (j < n && isJsonSpace(bytes[j] ?? 0)) j++;
        if (j >= n) return NEED_MORE;
        const next = bytes[j];
        if (next === COMMA || next === CLOSE_ARRAY) {
          this.checkLength(j - start);
          this.reader.accept();
          return j;
        }
        // more text follows the value: the element is that whole text (not valid JSON)
      }
    }
    const end = new ElementFramer().advance(bytes, start);
    if (end === NEED_MORE) {
      this.asText = true;
      return NEED_MORE;
    }
    this.asText = false;
    this.checkLength(end - start);
    this.reader.text(bytes.toString("utf8", start, end).trim());
    return end;
  }

  /**
   * The start of an element whose end is not in this piece: framed once, kept for the next. The
   * framer stands where it ended the element before (outside strings, at depth 0), or is new.
   */
  private keep(rest: Buffer): void {
    if (this.framer.advance(rest, 0) !== NEED_MORE) {
      throw new JsonArrayError("an element the reader could not end was whole");
    }
    this.carryOn(rest);
  }

  private carryOn(bytes: Buffer): void {
    this.checkLength(this.carry.length + bytes.length);
    this.carry.append(bytes);
  }

  private checkLength(bytes: number): void {
    if (bytes > this.maxElementBytes) {
      throw new JsonArrayError(`an element over ${this.maxElementBytes} bytes`, true);
    }
  }
}

/** The first byte of a body that is not `[`: JSON of another kind, or not JSON at all. */
function notAnArray(c: number): JsonArrayError {
  const json = /[{"\-0-9tfn]/.test(String.fromCharCode(c));
  return new JsonArrayError(json ? "a JSON value that is not an array" : "not JSON");
}

/**
 * The framing of one element read piece by piece: where it stands (nesting depth, inside a
 * string, after a backslash) is kept between pieces, so each byte is looked at once.
 */
class ElementFramer {
  private depth = 0;
  private inString = false;
  private escaped = false;

  /** The offset of the `,` or `]` ending the element at depth 0, or NEED_MORE (state kept). */
  advance(bytes: Buffer, from: number): number {
    const n = bytes.length;
    for (let i = from; i < n; i++) {
      if (this.inString) {
        // at the closing quote, or at n when the string goes on (the loop ends: NEED_MORE)
        i = this.stringEnd(bytes, i, n);
        continue;
      }
      const c = bytes[i];
      if (c === QUOTE) this.inString = true;
      else if (c === OPEN_OBJECT || c === OPEN_ARRAY) this.depth++;
      else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
        if (this.depth === 0) {
          if (c === CLOSE_OBJECT) throw new JsonArrayError("unbalanced }");
          return i;
        }
        this.depth--;
      } else if (c === COMMA && this.depth === 0) return i;
    }
    return NEED_MORE;
  }

  /**
   * Inside a string from `i`: the offset of its closing quote, or `n` when it goes on past the
   * bytes. Quotes are found by the platform's search (a long string costs little): one is the end
   * unless an odd run of backslashes stands before it.
   */
  private stringEnd(bytes: Buffer, i: number, n: number): number {
    let from = i;
    if (this.escaped) {
      // the byte after a backslash that ended the bytes before
      this.escaped = false;
      from++;
    }
    for (;;) {
      let q = bytes.indexOf(QUOTE, from);
      if (q < 0) q = n;
      let run = 0;
      while (q - run - 1 >= from && bytes[q - run - 1] === BACKSLASH) run++;
      if (q === n) {
        this.escaped = run % 2 === 1;
        return n;
      }
      if (run % 2 === 0) {
        this.inString = false;
        return q;
      }
      from = q + 1;
    }
  }
}
