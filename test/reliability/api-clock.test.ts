/**
 * Issue 40 item 3: an API whose clock says 1970 (its `Date` header; the simulator over real HTTP
 * with its clock at the epoch) makes `sync` fail with a clear error naming that header, not an
 * internal one; nothing is planned by that clock, nothing written, and no cursor moves.
 */
import { runCli } from "../../src/cli.js";
import type { Simulator } from "../../src/simulator/server.js";
import { StateStore } from "../../src/state/state-store.js";
import { dropTestDb } from "../support/bad-data.js";
import { bufferIo } from "../support/cli-io.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";

let sim: Simulator;
let db: TestInfluxDb;
beforeAll(async () => {
  // the API's clock (and so every answer's Date header) at 1970-01-01T00:00:05Z
  sim = await startTestSimulator({ now: () => 5_000, devices: 1, resolutionS: 900 });
  db = await createTestInfluxDb("api_clock");
});
afterAll(async () => {
  await sim.close();
  await dropTestDb(db);
});

it("an API Date header of 1970: sync exits 1 naming the Date header; no cursor, no data point", async () => {
  const stateDb = tempStateDb();
  const io = bufferIo(pipelineEnv(sim, db, stateDb, { LOG_LEVEL: "error" }));
  const code = await runCli(["sync"], io);
  expect(code).toBe(1);
  const said = `${io.out()}\n${io.err()}`;
  expect(said).toMatch(/Date header says "Thu, 01 Jan 1970 00:00:05 GMT", before 2000-01-01/);
  expect(said).not.toMatch(/internal error|must be an integer/i);
  const store = StateStore.open(stateDb);
  try {
    expect(store.cursors.list()).toEqual([]);
  } finally {
    store.close();
  }
  // only the run's own health (etl_run) is written: no data point
  const measurements = (await db.series("SHOW MEASUREMENTS")).flatMap((s) =>
    s.values.map((row) => String(row[0])),
  );
  expect(measurements.filter((m) => !m.startsWith("etl_"))).toEqual([]);
});
