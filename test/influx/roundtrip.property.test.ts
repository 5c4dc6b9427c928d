import fc from "fast-check";
import type { DataRecord, RecordMember } from "../../src/records/data-record.js";
import { formatRecordTime } from "../../src/records/data-record.js";
import { lineBatch } from "../../src/transform/line-protocol.js";
import { RecordEncoder } from "../../src/transform/record-encoder.js";
import { ValueIdDecoder } from "../../src/transform/value-id.js";
import { expectedPoints, sortPoints, storedPoints } from "../support/expected-points.js";
import { createTestInfluxDb, INFLUX_PATHS } from "../support/influx-db.js";
import { writerFor } from "../support/influx-writer.js";

const pad = (width: number) => (n: number) => String(n).padStart(width, "0");
/** Characters that line protocol treats specially, mixed with any unicode grapheme. */
const charArb = fc.oneof(
  fc.constantFrom(
    ",",
    "=",
    " ",
    '"',
    "\\",
    "\n",
    "\r",
    "\t",
    "#",
    "'",
    "_",
    "e",
    "0",
    "7",
    ".",
    "-",
  ),
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 1 }),
);
const textArb = fc.string({ unit: charArb, maxLength: 12 });
const idArb = fc.oneof(
  fc.constantFrom("protocol_id", "alarm_index", "alarm_name", "e_03_07_04_000_total_solar_energy"),
  fc
    .tuple(
      fc.integer({ min: 0, max: 99 }).map(pad(2)),
      fc.integer({ min: 0, max: 40 }).map(pad(2)),
      fc.integer({ min: 0, max: 9 }).map(pad(2)),
      fc.integer({ min: 0, max: 999 }).map(pad(3)),
      fc.string({ unit: charArb, minLength: 1, maxLength: 12 }),
    )
    .map(([p, u, t, v, name]) => `e_${p}_${u}_${t}_${v}_${name}`),
  textArb,
);
const memberArb: fc.Arbitrary<RecordMember> = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  textArb,
  fc.double({ noNaN: true, noDefaultInfinity: true }).map(String),
  fc.boolean(),
  fc.constant(null),
);
const recordArb: fc.Arbitrary<DataRecord> = fc
  .record({
    time: fc.integer({ min: 946_684_800, max: 4_102_444_799 }),
    valuesId: fc.oneof(fc.nat(2000), textArb, fc.constant(null)),
    members: fc.dictionary(
      idArb.filter((id) => id !== "timestamp" && id !== "values_id"),
      memberArb,
      { maxKeys: 6 },
    ),
  })
  .map(({ time, valuesId, members }) => ({
    ...members,
    timestamp: formatRecordTime(new Date(time * 1000)),
    values_id: valuesId,
  }));
const nameArb = fc.string({ unit: charArb, minLength: 1, maxLength: 10 });

describe.each(INFLUX_PATHS)(
  "records -> line protocol -> influxd -> InfluxQL (property, $name)",
  (path) => {
    it("influxd accepts every point and returns equal measurement, tags, fields and time", async () => {
      await fc.assert(
        fc.asyncProperty(
          nameArb,
          nameArb,
          fc.array(recordArb, { minLength: 1, maxLength: 5 }),
          async (device, resource, records) => {
            const db = path.target(await createTestInfluxDb("roundtrip"));
            const lines: string[] = [];
            new RecordEncoder(new ValueIdDecoder(), device, resource).encode(records, lines);
            await writerFor(db).writer.write(lineBatch(lines));
            const stored = await storedPoints(db);
            expect(sortPoints(stored)).toEqual(
              sortPoints(expectedPoints(device, resource, records)),
            );
          },
        ),
        { numRuns: 60, seed: 20261121 },
      );
    });
  },
);
