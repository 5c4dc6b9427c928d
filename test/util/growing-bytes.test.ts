import fc from "fast-check";
import { GrowingBytes } from "../../src/util/growing-bytes.js";

describe("GrowingBytes", () => {
  it("holds what was appended since the last clear, in order (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.uint8Array({ maxLength: 3000 }), fc.constant("clear" as const))),
        (steps) => {
          const bytes = new GrowingBytes(4096);
          let expected: number[] = [];
          for (const step of steps) {
            if (step === "clear") {
              bytes.clear();
              expected = [];
            } else {
              bytes.append(Buffer.from(step));
              expected.push(...step);
            }
            expect(bytes.length).toBe(expected.length);
          }
          expect([...bytes.view()]).toEqual(expected);
        },
      ),
      { seed: 7, numRuns: 200 },
    );
  });
});
