import fc from "fast-check";
import {
  AS_TEXT,
  type ElementReader,
  JsonArrayError,
  JsonArrayScanner,
  NEED_MORE,
} from "../../src/transform/json-array-scanner.js";
import { propertyRuns } from "../support/property-runs.js";

/** A reader that has every element framed by the scanner and keeps its text. */
class TextReader implements ElementReader {
  readonly texts: string[] = [];
  read(_bytes: Buffer, _start: number, _limit: number): number {
    return AS_TEXT;
  }
  accept(): void {}
  text(text: string): void {
    this.texts.push(text);
  }
  paused(): boolean {
    return false;
  }
}

/**
 * A reader that reads numbers itself (up to the first byte that is not a digit) and leaves the
 * rest to the scanner; it pauses after each element it took, so the scanner resumes mid-piece.
 */
class NumberReader extends TextReader {
  private pending = "";
  private holding = false;
  override read(bytes: Buffer, start: number, limit: number): number {
    let i = start;
    while (i < limit && (bytes[i] ?? 0) >= 0x30 && (bytes[i] ?? 0) <= 0x39) i++;
    if (i === start) return AS_TEXT;
    if (i >= limit) return NEED_MORE;
    this.pending = bytes.toString("latin1", start, i);
    return i;
  }
  override accept(): void {
    this.texts.push(`#${this.pending}`);
    this.holding = true;
  }
  override paused(): boolean {
    const was = this.holding;
    this.holding = false;
    return was;
  }
}

/** Frames `text` fed in byte pieces of the given sizes; returns the element texts. */
function split(
  text: string,
  sizes: readonly number[] = [Buffer.byteLength(text)],
  reader: TextReader = new TextReader(),
  scannerOf = (r: TextReader) => new JsonArrayScanner(r),
): string[] {
  const scanner = scannerOf(reader);
  const bytes = Buffer.from(text, "utf8");
  const feed = (piece: Buffer) => {
    for (let from = 0; from < piece.length || from === 0; ) {
      from = scanner.push(piece, from);
      if (piece.length === 0) break;
    }
  };
  let at = 0;
  for (const size of sizes) {
    feed(bytes.subarray(at, at + size));
    at += size;
  }
  feed(bytes.subarray(at));
  scanner.end();
  return reader.texts;
}

/** The JsonArrayError `run` throws: its name and whether it says the element was too long. */
function thrown(run: () => unknown) {
  try {
    run();
  } catch (error) {
    if (error instanceof JsonArrayError) return { name: error.name, tooLong: error.tooLong };
    throw error;
  }
  throw new Error("nothing thrown");
}

describe("JsonArrayScanner", () => {
  it.each([
    ["[]", []],
    [" [ ] ", []],
    ['[{"a":1}]', ['{"a":1}']],
    ['[{"a":"x,]}\\"{["},{"b":[1,{"c":2}]}]', ['{"a":"x,]}\\"{["}', '{"b":[1,{"c":2}]}']],
    ["[1, 2 ,3]", ["1", "2", "3"]],
    ['["a\\\\",null]', ['"a\\\\"', "null"]],
  ])("%s", (text, elements) => {
    expect(split(text)).toEqual(elements);
    expect(
      split(
        text,
        [...text].map(() => 1),
      ),
    ).toEqual(elements);
  });

  it("an element read by the reader is taken only once a comma or the end follows it", () => {
    // "1 2" is one element (not JSON): the reader's "1" is not taken, the text goes whole
    expect(split("[1, 2 ,3]", [1, 1, 1, 1, 1], new NumberReader())).toEqual(["#1", "#2", "#3"]);
    expect(split('[12,"a",3 4,5]', [2, 3, 4], new NumberReader())).toEqual([
      "#12",
      '"a"',
      "3 4",
      "#5",
    ]);
  });

  it("an element longer than the cap fails as too long, carried or whole", () => {
    const long = `[${JSON.stringify("x".repeat(100))}]`;
    const scanner = () => new JsonArrayScanner(new TextReader(), 50);
    expect(() => scanner().push(Buffer.from(long))).toThrow(/an element over 50 bytes/);
    const carried = scanner();
    expect(() => carried.push(Buffer.from(long.slice(0, 60)))).toThrow(/over 50 bytes/);
    expect(thrown(() => scanner().push(Buffer.from(long)))).toEqual({
      name: "JsonArrayError",
      tooLong: true,
    });
  });

  it("an element of exactly the cap's bytes is read, carried or whole", () => {
    const element = JSON.stringify("x".repeat(48)); // 50 bytes
    const text = `[${element}, 1]`;
    const scanner = (reader: TextReader) => new JsonArrayScanner(reader, 50);
    expect(split(text, undefined, undefined, scanner)).toEqual([element, "1"]);
    expect(split(text, [20], undefined, scanner)).toEqual([element, "1"]);
    const over = `[${JSON.stringify("x".repeat(49))}]`;
    expect(() => split(over, undefined, undefined, scanner)).toThrow(/an element over 50 bytes/);
    expect(() => split(over, [20], undefined, scanner)).toThrow(/an element over 50 bytes/);
  });

  it("a body cut in two anywhere: strings with escaped quotes and backslashes, nested values", () => {
    const text = String.raw`[ "a\\", "b\"c", {"d":["\\\\"]}, "e\\\"", 7 ]`;
    const elements = (JSON.parse(text) as unknown[]).map((e) => JSON.stringify(e));
    for (let cut = 0; cut <= text.length; cut++) {
      for (const reader of [new TextReader(), new NumberReader()]) {
        const got = split(text, [cut], reader).map((e) => e.replace(/^#/, ""));
        expect([cut, got]).toEqual([cut, elements]);
      }
    }
  });

  it("the cap holds for elements the reader reads, wherever they start", () => {
    const scanner = (reader: TextReader) => new JsonArrayScanner(reader, 5);
    const text = "[1, 22,333 ,4444,  55555]";
    for (const sizes of [undefined, [4], [9, 3]]) {
      const got = split(text, sizes, new NumberReader(), scanner);
      expect([sizes, got]).toEqual([sizes, ["#1", "#22", "#333", "#4444", "#55555"]]);
    }
    expect(() => split("[1,666666]", undefined, new NumberReader(), scanner)).toThrow(/over 5/);
    expect(() => split("[1,666666]", [5], new NumberReader(), scanner)).toThrow(/over 5/);
  });

  it("a body cut in three anywhere: a piece's end after a backslash does not carry over", () => {
    const text = String.raw`["a\"b", ["", "\\"], "", {"c":"\""}, 1]`;
    const elements = (JSON.parse(text) as unknown[]).map((e) => JSON.stringify(e));
    for (let first = 0; first <= text.length; first++) {
      for (let second = first; second <= text.length; second++) {
        const sizes = [first, second - first];
        const got = split(text, sizes, new NumberReader()).map((e) => e.replace(/^#/, ""));
        expect([sizes, got.map((e) => JSON.stringify(JSON.parse(e)))]).toEqual([sizes, elements]);
      }
    }
  });

  it("a reader that asks for more bytes of an element the framing sees whole is a bug, named", () => {
    class NeedyReader extends TextReader {
      override read(): number {
        return NEED_MORE;
      }
    }
    const bug = /an element the reader could not end was whole/;
    expect(() => split("[12,3]", [6], new NeedyReader())).toThrow(bug);
    // the element carried from the piece before, whole in this one
    expect(() => split("[12,3]", [3], new NeedyReader())).toThrow(bug);
  });

  it("an element in many pieces is read twice at most: when it starts and once whole (linear)", () => {
    class CountingReader extends NumberReader {
      calls = 0;
      bytesSeen = 0;
      override read(bytes: Buffer, start: number, limit: number): number {
        this.calls++;
        this.bytesSeen += limit - start;
        return super.read(bytes, start, limit);
      }
    }
    const digits = "7".repeat(10_000);
    const reader = new CountingReader();
    const text = `[${digits},"${digits}"]`;
    const bytes = Array.from({ length: text.length }, () => 1);
    expect(split(text, bytes, reader)).toEqual([`#${digits}`, `"${digits}"`]);
    // the number: read when it starts (one byte known) and once whole; the string: given up at once
    expect(reader.calls).toBe(3);
    expect(reader.bytesSeen).toBeLessThan(10_010);
  });

  it("copies what it keeps of an unfinished element: a piece may be reused once pushed", () => {
    const reader = new TextReader();
    const scanner = new JsonArrayScanner(reader);
    const piece = Buffer.alloc(4);
    for (const text of ['[{"a', '":"b', 'c"},', "2]  "]) {
      piece.write(text, "latin1");
      scanner.push(piece);
      piece.fill(0x78);
    }
    scanner.end();
    expect(reader.texts).toEqual(['{"a":"bc"}', "2"]);
  });

  it.each([
    ["{}", /a JSON value that is not an array/],
    ["<html>", /not JSON/],
    ['[{"a":1}', /not closed/],
    ['[{"a":1},', /not closed/],
    ["", /empty body/],
    ["[1,]", /empty array element/],
    ["[,1]", /empty array element/],
    ["[1] x", /text after the end/],
    ["[1}", /unbalanced/],
  ])("rejects %j", (text, message) => {
    expect(() => split(text)).toThrow(message);
    expect(thrown(() => split(text))).toEqual({ name: "JsonArrayError", tooLong: false });
  });

  it("gives the same elements as JSON.parse, however the bytes are cut (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.jsonValue(), { maxLength: 8 }),
        fc.array(fc.nat(20), { maxLength: 30 }),
        fc.boolean(),
        (values, sizes, numbers) => {
          const text = JSON.stringify(values, null, sizes.length % 2 ? 1 : undefined);
          const reader = numbers ? new NumberReader() : new TextReader();
          const elements = split(text, sizes, reader).map(
            (e) => JSON.parse(e.startsWith("#") ? e.slice(1) : e) as unknown,
          );
          expect(elements).toEqual(JSON.parse(text));
        },
      ),
      { seed: 7, numRuns: propertyRuns(300) },
    );
  });
});
