/** A counter's increase over a bucket (src/rollups/increase.ts), resets included. */
import { increaseOver, type Reading } from "../../src/rollups/increase.js";

const r = (s: number, value: number): Reading => ({ s, value });

describe("increaseOver", () => {
  it.each<[string, Reading | undefined, Reading[], number | undefined]>([
    ["end reading minus the last one before the start", r(0, 10), [r(5, 12), r(9, 15)], 5],
    ["no reading before: from the bucket's first one", undefined, [r(5, 12), r(9, 15)], 3],
    ["a drop is a reset: counted from zero after it", r(0, 10), [r(5, 12), r(6, 1), r(9, 4)], 6],
    ["a daily reset at the device's midnight, the same", r(0, 30), [r(5, 0.5), r(9, 2)], 2],
    ["no reading in the bucket: nothing rose", r(0, 10), [], 0],
    ["nothing at all: nothing to say", undefined, [], undefined],
    ["a flat counter", r(0, 7), [r(5, 7)], 0],
  ])("%s", (_what, before, readings, expected) => {
    expect(increaseOver(before, readings)).toBe(expected);
  });
});
