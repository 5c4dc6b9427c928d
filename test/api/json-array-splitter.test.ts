import fc from "fast-check";
import { JsonArraySplitter } from "../../src/api/json-array-splitter.js";

/** Splits `text` fed in pieces of the given sizes; returns the element texts. */
function split(text: string, sizes: readonly number[] = [text.length]): string[] {
  const splitter = new JsonArraySplitter();
  const out: string[] = [];
  let at = 0;
  for (const size of sizes) {
    out.push(...splitter.push(text.slice(at, at + size)));
    at += size;
  }
  out.push(...splitter.push(text.slice(at)));
  splitter.end();
  return out;
}

describe("JsonArraySplitter", () => {
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
  });

  it("gives the same elements as JSON.parse, however the text is cut (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.jsonValue(), { maxLength: 8 }),
        fc.array(fc.nat(20), { maxLength: 30 }),
        (values, sizes) => {
          const text = JSON.stringify(values, null, sizes.length % 2 ? 1 : undefined);
          const elements = split(text, sizes).map((e) => JSON.parse(e) as unknown);
          expect(elements).toEqual(JSON.parse(text));
        },
      ),
      { seed: 7, numRuns: 300 },
    );
  });
});
