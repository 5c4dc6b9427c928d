/**
 * Splits a JSON array that arrives in pieces into the texts of its elements, so that a large
 * `GET /data` body is parsed record by record (with JSON.parse) instead of as one string. It
 * tracks strings, escapes and nesting; it does not validate the elements (JSON.parse does).
 */
/**
 * A body that is not a JSON array; `truncated` when it looks cut off (worth retrying), `tooLong`
 * when one element is longer than the splitter's cap.
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

export class JsonArraySplitter {
  private buf = "";
  private pos = 0;
  private depth = 0;
  private inString = false;
  private escaped = false;
  private started = false;
  private ended = false;
  private elementStart = 0;
  private sawElement = false;

  /** @param maxElementChars longest element accepted (default: no limit) */
  constructor(private readonly maxElementChars = Number.POSITIVE_INFINITY) {}

  /** Feeds the next piece of text; returns the texts of the elements completed by it. */
  push(text: string): string[] {
    if (this.ended) {
      if (text.trim() !== "") throw new JsonArrayError("text after the end of the array");
      return [];
    }
    this.buf += text;
    const elements: string[] = [];
    const buf = this.buf;
    let i = this.pos;
    if (!this.started) {
      while (i < buf.length && isSpace(buf.charCodeAt(i))) i++;
      if (i >= buf.length) {
        this.pos = i;
        return elements;
      }
      const first = buf.charAt(i);
      if (first !== "[") {
        // a JSON value of another kind is final; something that is not JSON at all (an HTML error
        // page from a proxy, a cut transfer) may pass, so it is worth a retry
        const json = /[{"\-0-9tfn]/.test(first);
        throw new JsonArrayError(json ? "a JSON value that is not an array" : "not JSON", !json);
      }
      this.started = true;
      i++;
      this.elementStart = i;
    }
    // the next backslash, searched once and again only when passed (bodies rarely have any)
    let nextSlash = buf.indexOf("\\", i);
    for (; i < buf.length; i++) {
      if (this.inString) {
        if (this.escaped) {
          this.escaped = false;
          continue;
        }
        // jump to the next quote or backslash (native search; most of a body is in strings)
        const quote = buf.indexOf('"', i);
        if (nextSlash >= 0 && nextSlash < i) nextSlash = buf.indexOf("\\", i);
        const slash = nextSlash;
        if (quote < 0 && slash < 0) {
          i = buf.length - 1;
          continue;
        }
        if (slash >= 0 && (quote < 0 || slash < quote)) {
          i = slash;
          this.escaped = true;
        } else {
          i = quote;
          this.inString = false;
        }
        continue;
      }
      const c = buf.charCodeAt(i);
      if (c === 0x22) this.inString = true;
      else if (c === 0x7b || c === 0x5b) this.depth++;
      else if (c === 0x7d || c === 0x5d) {
        if (this.depth === 0) {
          if (c !== 0x5d) throw new JsonArrayError("unbalanced }");
          this.take(buf, i, elements, true);
          this.ended = true;
          if (buf.slice(i + 1).trim() !== "")
            throw new JsonArrayError("text after the end of the array");
          this.buf = "";
          this.pos = 0;
          return elements;
        }
        this.depth--;
      } else if (c === 0x2c && this.depth === 0) {
        this.take(buf, i, elements, false);
        this.elementStart = i + 1;
      }
    }
    this.buf = buf.slice(this.elementStart);
    this.pos = this.buf.length;
    this.elementStart = 0;
    if (this.buf.length > this.maxElementChars) {
      throw new JsonArrayError(`an element over ${this.maxElementChars} characters`, false, true);
    }
    return elements;
  }

  /** Throws unless the array was closed (a truncated body). */
  end(): void {
    if (!this.ended) {
      throw new JsonArrayError(
        this.started ? "the array is not closed (truncated?)" : "empty body",
        true,
      );
    }
  }

  private take(buf: string, at: number, elements: string[], last: boolean): void {
    if (at - this.elementStart > this.maxElementChars) {
      throw new JsonArrayError(`an element over ${this.maxElementChars} characters`, false, true);
    }
    const text = buf.slice(this.elementStart, at).trim();
    if (text !== "") elements.push(text);
    else if (!last || elements.length > 0 || this.sawElement)
      throw new JsonArrayError("empty array element");
    this.sawElement = true;
  }
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}
