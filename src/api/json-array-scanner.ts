/**
 * Frames a JSON array that arrives in byte pieces into its elements, so that a large `GET /data`
 * body is read element by element without ever being one string. It tracks strings, escapes and
 * nesting; it does not validate the elements: an {@link ElementReader} reads each one, either
 * whole in one pass (the fast path of the transform) or as text framed here.
 */

import { JSON_BYTES } from "../util/json-bytes.js";

/**
 * A body that is not a JSON array; `truncated` when it looks cut off (worth retrying), `tooLong`
 * when one element is longer than the scanner's cap.
 */
export class JsonArrayError extends SyntaxError {
  constructor(
    message: string,
    readonly truncated = false,
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

/** Reads the elements a {@link JsonArrayScanner} finds. */
export interface ElementReader {
  /**
   * Reads the element that starts at `start` (its first byte, not a space) of `bytes`, whose known
   * bytes end at `limit`, without taking it yet: returns the offset just after it, NEED_MORE when
   * its end lies beyond `limit`, or AS_TEXT to have it framed here and handed to {@link text}.
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

const { QUOTE, BACKSLASH, COMMA, OPEN_ARRAY, CLOSE_ARRAY, OPEN_OBJECT, CLOSE_OBJECT } = JSON_BYTES;

/** True for the four bytes JSON allows between tokens. */
export function isJsonSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/**
 * The framing of one JSON array read in byte pieces: `[`, elements separated by `,`, `]`, nothing
 * but spaces after it. The bytes of an element not read whole yet are kept (at most
 * `maxElementBytes`) until the next piece comes.
 */
export class JsonArrayScanner {
  private state = State.BeforeArray;
  /** Bytes of an unfinished element (from its start), carried to the next piece. */
  private carry: Buffer | undefined;
  /** The carried element is framed generically (the reader gave it up). */
  private asText = false;

  /**
   * @param reader reads the elements
   * @param maxElementBytes longest element accepted (default: no limit)
   */
  constructor(
    private readonly reader: ElementReader,
    private readonly maxElementBytes = Number.POSITIVE_INFINITY,
  ) {}

  /**
   * Reads a piece of the body from `from` (a new piece from 0): the reader is called for every
   * element it completes. Returns where it stopped: the piece's length once all of it is read
   * (or carried on to the next piece), less when the reader paused: call again from there.
   */
  push(piece: Buffer, from = 0): number {
    const carry = from === 0 ? this.carry : undefined;
    if (carry) {
      // the carried element ends somewhere in this piece: join only as much of it as it takes
      // (copying every piece whole behind the carry cost more than reading it)
      this.carry = undefined;
      let take = Math.min(piece.length, carry.length + 4096);
      for (;;) {
        const joint = Buffer.concat([carry, piece.subarray(0, take)]);
        const end = this.scan(joint, 0, true);
        if (end !== NEED_MORE) {
          from = end - carry.length;
          break;
        }
        if (take === piece.length) return piece.length; // all of it is carried on
        this.carry = undefined;
        take = Math.min(piece.length, take * 2);
      }
    }
    return this.scan(piece, from, false);
  }

  /**
   * Reads `bytes` from `from`; returns where it stopped (see {@link push}). With `firstOnly`,
   * stops after the first element and returns where it ended, or NEED_MORE (keeping the
   * unfinished element) when the bytes end first.
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
          if (c === COMMA) this.state = State.Next;
          else if (c === CLOSE_ARRAY) this.state = State.Ended;
          else throw new JsonArrayError("unexpected text between elements");
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
      true,
    );
  }

  /**
   * The element starting at `start`: read by the reader when it can, framed here otherwise.
   * Returns where it ends (at the `,` or `]` after it, or after spaces before them) or NEED_MORE.
   */
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
    const end = frameElement(bytes, start, n);
    if (end === NEED_MORE) {
      this.asText = true;
      return NEED_MORE;
    }
    this.asText = false;
    this.checkLength(end - start);
    this.reader.text(bytes.toString("utf8", start, end).trim());
    return end;
  }

  private keep(rest: Buffer): void {
    this.checkLength(rest.length);
    // a copy: the piece it came in is not ours to keep
    this.carry = Buffer.from(rest);
  }

  private checkLength(bytes: number): void {
    if (bytes > this.maxElementBytes) {
      throw new JsonArrayError(`an element over ${this.maxElementBytes} bytes`, false, true);
    }
  }
}

/** The first byte of a body that is not `[`: JSON of another kind (final), or not JSON at all. */
function notAnArray(c: number): JsonArrayError {
  // something that is not JSON at all (an HTML error page from a proxy, a cut transfer) may
  // pass, so it is worth a retry
  const json = /[{"\-0-9tfn]/.test(String.fromCharCode(c));
  return new JsonArrayError(json ? "a JSON value that is not an array" : "not JSON", !json);
}

/**
 * The end of the element starting at `start`: the offset of the `,` or `]` that ends it at depth
 * 0, strings and nesting tracked; NEED_MORE when it is not in the bytes yet.
 */
function frameElement(bytes: Buffer, start: number, n: number): number {
  let depth = 0;
  for (let i = start; i < n; i++) {
    const c = bytes[i];
    if (c === QUOTE) {
      i = stringEnd(bytes, i + 1, n);
      if (i === NEED_MORE) return NEED_MORE;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) depth++;
    else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      if (depth === 0) {
        if (c === CLOSE_OBJECT) throw new JsonArrayError("unbalanced }");
        return i;
      }
      depth--;
    } else if (c === COMMA && depth === 0) return i;
  }
  return NEED_MORE;
}

/** The offset of the quote that closes a string whose text starts at `i`; NEED_MORE without it. */
function stringEnd(bytes: Buffer, i: number, n: number): number {
  for (let j = i; j < n; j++) {
    const c = bytes[j];
    if (c === QUOTE) return j;
    if (c === BACKSLASH) j++;
  }
  return NEED_MORE;
}
