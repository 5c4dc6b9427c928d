import type { ApiClient } from "../../src/api/api-client.js";
import type { DataRecord } from "../../src/records/data-record.js";
import type { Simulator } from "../../src/simulator/server.js";
import { lineBatch } from "../../src/transform/line-protocol.js";
import { RecordEncoder } from "../../src/transform/record-encoder.js";
import { ValueIdDecoder } from "../../src/transform/value-id.js";
import { answerRecords } from "../support/data-answers.js";
import { expectedPoints, sortPoints, storedPoints } from "../support/expected-points.js";
import { createTestInfluxDb, INFLUX_PATHS } from "../support/influx-db.js";
import { writerFor } from "../support/influx-writer.js";
import { clientFor, startTestSimulator } from "../support/simulator.js";

const NOW = Date.UTC(2026, 5, 15, 12);
const DAY_MS = 86_400_000;

describe.each(INFLUX_PATHS)("simulator records -> encoder -> writer -> influxd ($name)", (path) => {
  let sim: Simulator;
  let client: ApiClient;
  beforeAll(async () => {
    sim = await startTestSimulator({ now: () => NOW });
    client = clientFor(sim).client;
  });
  afterAll(() => sim.close());

  async function fetchRecords(device: string, count: number): Promise<DataRecord[]> {
    const values = (await client.listValues(device, "all_data")).value.values.filter(
      (v) => v !== "values_id",
    );
    const records: DataRecord[] = [];
    for (let i = 0; i < Math.min(values.length, count); i += 20) {
      records.push(
        ...(await answerRecords(client, {
          deviceId: device,
          resourceId: "all_data",
          values: values.slice(i, Math.min(i + 20, count)),
          from: new Date(NOW - DAY_MS),
          to: new Date(NOW),
        })),
      );
    }
    return records;
  }

  it.each(["hybrid-site-01", "site A+1", "audit-box-03"])(
    "%s: InfluxDB holds exactly the simulator's values; a replay leaves the count unchanged",
    async (device) => {
      const db = path.target(await createTestInfluxDb("sim"));
      const records = await fetchRecords(device, 40);
      const lines: string[] = [];
      const stats = new RecordEncoder(new ValueIdDecoder(), device, "all_data").encode(
        records,
        lines,
      );
      expect(stats.collisions).toBe(0);
      const { writer } = writerFor(db);
      await expect(writer.write(lineBatch(lines))).resolves.toEqual({
        written: lines.length,
        rejected: [],
      });
      await writer.flush();

      const expected = expectedPoints(device, "all_data", records);
      const stored = await storedPoints(db);
      expect(stored.length).toBe(expected.length);
      expect(sortPoints(stored)).toEqual(sortPoints(expected));
      const members = records.reduce(
        (n, r) =>
          n +
          Object.entries(r).filter(([k, v]) => k !== "timestamp" && k !== "values_id" && v !== null)
            .length,
        0,
      );
      const storedFields = stored.reduce((n, p) => n + Object.keys(p.fields).length, 0);
      expect(storedFields).toBe(members);

      await writer.write(lineBatch(lines));
      expect(sortPoints(await storedPoints(db))).toEqual(sortPoints(expected));
    },
  );
});
