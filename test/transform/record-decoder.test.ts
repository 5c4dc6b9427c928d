/**
 * The reference path for one element of a GET /data answer (src/transform/record-decoder.ts): a
 * record of the wrong shape is one invalid row, and a bad member is set aside from its record,
 * each with a message naming the request, what is wrong and how the text starts.
 */
import { decodeElement } from "../../src/transform/record-decoder.js";

const SOURCE = { endpoint: "GET /data/d/all_data", status: 200 };

describe("decodeElement", () => {
  it("says why an element of the wrong shape is no record", () => {
    const text = '{"timestamp":"yesterday","values_id":1}';
    const decoded = decodeElement(text, new Set(["x"]), [], SOURCE);
    expect("invalid" in decoded && decoded.invalid).toMatch(
      /^GET \/data\/d\/all_data answered HTTP 200 with an unexpected record \(timestamp: .*\); record starts: \{"timestamp":"yesterday"/,
    );
  });

  it("keeps a record's good members and sets its bad ones aside, each saying why", () => {
    const A = "e_03_01_00_000_total_solar_power";
    const B = "e_03_01_00_000_total_load_power";
    const text = `{"timestamp":"2026-06-15T00:00:00","values_id":1,"${A}":1e400,"${B}":7}`;
    const decoded = decodeElement(text, new Set([A, B]), [], SOURCE);
    expect(decoded).toEqual({
      record: { timestamp: "2026-06-15T00:00:00", values_id: 1, [B]: 7 },
      badMembers: [
        {
          valueId: A,
          error:
            `GET /data/d/all_data answered HTTP 200 with an invalid member (${A}: must be a ` +
            `finite number, a string, a boolean or null; got Infinity, out of a double's range); ` +
            `record starts: ${text}`,
        },
      ],
    });
  });
});
