/**
 * Where a batch of line protocol is cut into lines (src/transform/line-protocol.ts `lineEnds`,
 * `linesOf`, `inBatches`): only at a line break outside a quoted string field.
 */
import { inBatches, lineBatch, lineEnds, linesOf } from "../../src/transform/line-protocol.js";

const lines = [
  "m,device_id=a value=1 10",
  'm,device_id=a text="first\nsecond" 10',
  'm,device_id=q"uote text="a \\"quoted\\"\nline\\\\" 11',
  'alarm,device_id=a alarm_index=3,alarm_name="Grid\nlost, 50 Hz" 12',
  'm\\ x,tag=a\\,b text="😀\n\n" 13',
  'm,device_id=a month="2026-06",year="2026",increase=1 14',
];

describe("lineEnds", () => {
  it("cuts only at line breaks outside quoted strings", () => {
    const bytes = Buffer.from(lines.join("\n"), "utf8");
    const ends = lineEnds(bytes);
    expect(ends).toHaveLength(lines.length);
    expect(linesOf({ bytes, lines: lines.length })).toEqual(lines);
  });

  it.each([
    ["no line break at all", "m value=1 1", [11]],
    [
      "a line break in a tag value is one (tags never hold one: they are written as spaces)",
      "m,t=a\nb value=1 1",
      [5, 17],
    ],
    ["a quote in a tag does not open a string", 'm,t="x value=1 1\nm value=2 2', [16, 28]],
    [
      "a quote that opens the batch (in a measurement) does not open a string",
      '"m value=1 1\nm value=2 2',
      [12, 24],
    ],
    ["an escaped quote stays inside the string", 'm text="a\\"\nb" 1\nm value=1 2', [16, 28]],
    // a quote opens a string only right after a field's `=`
    ["a quote in a field key does not open a string", 'm fi"eld=1 1\nm value=2 2', [12, 24]],
    [
      "a quote in a later field key, after a string field, neither",
      'm text="x",k"ey=1 1\nm value=2 2',
      [19, 31],
    ],
    // the timestamp is no field: a quote after it opens nothing, even after an `=` there
    ["a quote after the timestamp does not open a string", 'm value=1 1="x\nm value=2 2', [14, 26]],
  ])("%s", (_what, text, ends) => {
    expect(lineEnds(Buffer.from(text, "utf8"))).toEqual(ends);
  });

  it("inBatches keeps every line whole", () => {
    const batch = lineBatch(lines);
    for (const size of [1, 2, 4]) {
      const cut = inBatches(batch, size);
      expect(cut.flatMap((b) => linesOf(b))).toEqual(lines);
      expect(cut.every((b) => b.lines <= size)).toBe(true);
      // as few batches as the size allows: none empty, even when the size divides the lines
      expect(cut).toHaveLength(Math.ceil(lines.length / size));
    }
    expect(inBatches(lineBatch(lines), lines.length)).toHaveLength(1);
  });

  it("an empty batch has no lines and cuts into no batches", () => {
    const empty = lineBatch([]);
    expect(empty).toEqual({ bytes: Buffer.alloc(0), lines: 0 });
    expect(linesOf(empty)).toEqual([]);
    expect(inBatches(empty, 3)).toEqual([]);
  });
});
