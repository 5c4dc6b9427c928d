/**
 * The rollups of many device resources share InfluxDB requests (rollup-run.ts, recompute.ts): a
 * steady tick's rollups cost a few requests per batch of device resources, not four per device
 * resource, and write the same points. Real parts: the simulator over HTTP, the tests' influxd,
 * a SQLite state file; the requests are counted by wrapping the pipeline's own InfluxDB query
 * client and sink (they still do the work).
 */
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import { runSync } from "../../src/pipeline/sync.js";
import { countersOf, runRollups } from "../../src/rollups/rollup-run.js";
import type { Simulator } from "../../src/simulator/server.js";
import { sortPoints, storedPoints } from "../support/expected-points.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";

const HOUR_MS = 3_600_000;
/** The simulator's clock and the pipeline's: fixed, 25 minutes into an hour. */
const NOW_MS = Math.floor(Date.now() / HOUR_MS) * HOUR_MS - 35 * 60_000;

let sim: Simulator;
let db: TestInfluxDb;
let pipeline: Pipeline;

beforeAll(async () => {
  sim = await startTestSimulator({ now: () => NOW_MS, resolutionS: 300 });
  db = await createTestInfluxDb("rollup_batches");
  ({ pipeline } = await openTestPipeline(
    pipelineEnv(sim, db, tempStateDb(), {
      SYNC_START: new Date(NOW_MS - 6 * HOUR_MS).toISOString(),
      ROLLUP_TIME_ZONES: "UTC,Europe/Berlin",
      LOG_LEVEL: "info",
    }),
    () => new Date(NOW_MS),
  ));
});

afterAll(async () => {
  await pipeline?.close();
  await sim?.close();
});

const rollupPoints = async () =>
  sortPoints((await storedPoints(db)).filter((p) => p.measurement.startsWith("rollup_")));

it("a tick's rollups of every device resource take a few InfluxDB requests, and rewrite the same points", async () => {
  const sync = await runSync(pipeline);
  expect(sync.errors).toBe(0);
  const parts = pipeline.rollups;
  if (parts === undefined) throw new Error("the pipeline has no rollups (INFLUX_URL unset?)");
  expect(parts.marks.pending()).toEqual([]);
  const written = await rollupPoints();
  expect(written.length).toBeGreaterThan(100);

  // the last hour of every device resource with counters marked again, as a steady tick does
  const targets = [...sim.fleet.deviceIds()].flatMap((deviceId) =>
    pipeline.store.catalog
      .device(deviceId)
      .resources.map(({ resourceId }) => ({ deviceId, resourceId }))
      .filter(({ resourceId }) => countersOf(parts, deviceId, resourceId).length > 0),
  );
  expect(targets.length).toBeGreaterThanOrEqual(4);
  const toS = NOW_MS / 1000;
  for (const t of targets) pipeline.store.rollups.mark(t.deviceId, t.resourceId, toS - 3600, toS);

  let queries = 0;
  let writes = 0;
  const counted = {
    ...parts,
    query: {
      query: (statements: readonly string[]) => {
        queries++;
        return parts.query.query(statements);
      },
    },
    sink: {
      write: (batch: Parameters<typeof parts.sink.write>[0]) => {
        writes++;
        return parts.sink.write(batch);
      },
      flush: () => parts.sink.flush(),
    },
  };
  const result = await runRollups(counted);
  expect(result).toMatchObject({ resources: targets.length, failed: 0 });
  expect(parts.marks.pending()).toEqual([]);
  // one device resource alone takes 2 queries and 2 writes; together they share them
  expect(queries).toBeLessThan(targets.length);
  expect(writes).toBeLessThan(targets.length);
  process.stdout.write(
    `rollups of ${targets.length} device resources: ${queries} queries, ${writes} writes\n`,
  );
  expect(await rollupPoints()).toEqual(written);
});
