/**
 * The rollups of many device resources share InfluxDB requests (rollup-run.ts, recompute.ts): a
 * tick's rollups cost a few requests per batch of device resources, not four per device
 * resource, and write what each would alone; a device resource whose rollups keep failing keeps
 * its marks without holding back the others of its batch. Real parts: the simulator over HTTP,
 * the tests' influxd, a SQLite state file; requests are counted (or one device's refused) by
 * wrapping the pipeline's own InfluxDB query client and sink, which still do the work.
 */
import type { InfluxqlSeries } from "../../src/influx/influx-query.js";
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import { runSync } from "../../src/pipeline/sync.js";
import { countersOf, type RollupParts, runRollups } from "../../src/rollups/rollup-run.js";
import type { Simulator } from "../../src/simulator/server.js";
import { sortPoints, storedPoints } from "../support/expected-points.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { influxql } from "../support/influxd.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";

const HOUR_MS = 3_600_000;
/**
 * The simulator's clock and the pipeline's: fixed, 25 minutes into an hour, its 6 hours inside one
 * day in UTC and in Berlin (a window across midnight takes a day's queries more: the test failed
 * from 00:35 to 06:35 UTC when it followed the wall clock).
 */
const NOW_MS = Date.UTC(2026, 5, 15, 12, 25);
const FROM_MS = NOW_MS - 6 * HOUR_MS;

let sim: Simulator;
let db: TestInfluxDb;
let pipeline: Pipeline;
let parts: RollupParts;
/** Every device resource with counters, after the first sync. */
let targets: { deviceId: string; resourceId: string }[] = [];

beforeAll(async () => {
  sim = await startTestSimulator({ now: () => NOW_MS, resolutionS: 300 });
  db = await createTestInfluxDb("rollup_batches");
  ({ pipeline } = await openTestPipeline(
    pipelineEnv(sim, db, tempStateDb(), {
      SYNC_START: new Date(FROM_MS).toISOString(),
      ROLLUP_TIME_ZONES: "UTC,Europe/Berlin",
      LOG_LEVEL: "info",
    }),
    () => new Date(NOW_MS),
  ));
  const sync = await runSync(pipeline);
  expect(sync.errors).toBe(0);
  const rollups = pipeline.rollups;
  if (rollups === undefined) throw new Error("the pipeline has no rollups (INFLUX_URL unset?)");
  parts = rollups;
  expect(parts.marks.pending()).toEqual([]);
  targets = [...sim.fleet.deviceIds()].flatMap((deviceId) =>
    pipeline.store.catalog
      .device(deviceId)
      .resources.map(({ resourceId }) => ({ deviceId, resourceId }))
      .filter(({ resourceId }) => countersOf(parts, deviceId, resourceId).length > 0),
  );
  expect(targets.length).toBeGreaterThanOrEqual(4);
});

afterAll(async () => {
  await pipeline?.close();
  await sim?.close();
});

const rollupPoints = async () =>
  sortPoints((await storedPoints(db)).filter((p) => p.measurement.startsWith("rollup_")));

/** Marks the synced window of every target again, as new data there would. */
function markAll(): void {
  for (const t of targets) {
    pipeline.store.rollups.mark(t.deviceId, t.resourceId, FROM_MS / 1000, NOW_MS / 1000);
  }
}

/** The pipeline's query client and sink, counted; statements matching `refuse` fail. */
function wrapped(refuse?: RegExp) {
  const count = { queries: 0, writes: 0 };
  const wrappedParts: RollupParts = {
    ...parts,
    query: {
      query: (statements: readonly string[]): Promise<InfluxqlSeries[][]> => {
        count.queries++;
        if (refuse && statements.some((s) => refuse.test(s))) {
          return Promise.reject(new Error("refused by the test"));
        }
        return parts.query.query(statements);
      },
    },
    sink: {
      write: (...args: Parameters<RollupParts["sink"]["write"]>) => {
        count.writes++;
        return parts.sink.write(...args);
      },
    },
  };
  return { count, parts: wrappedParts };
}

it("the rollups of every device resource take a few InfluxDB requests, and rewrite every point", async () => {
  const written = await rollupPoints();
  expect(written.length).toBeGreaterThan(100);
  // gone, so that only what this run writes is there to compare
  await influxql(
    db.rawUrl,
    db.bucket,
    'DROP MEASUREMENT "rollup_hour"; DROP MEASUREMENT "rollup_day"',
  );
  expect(await rollupPoints()).toEqual([]);
  markAll();
  const { count, parts: counted } = wrapped();
  const result = await runRollups(counted);
  expect(result).toMatchObject({ resources: targets.length, failed: 0 });
  expect(result.points).toBe(written.length);
  expect(parts.marks.pending()).toEqual([]);
  // one device resource alone takes 2 queries and 2 writes at least; together they share them
  expect(count.queries).toBeLessThan(targets.length);
  expect(count.writes).toBeLessThan(targets.length);
  process.stdout.write(
    `rollups of ${targets.length} device resources over 6 h: ${count.queries} queries, ${count.writes} writes\n`,
  );
  expect(await rollupPoints()).toEqual(written);
});

it("a device resource whose queries fail keeps its marks; the others of its batch are written", async () => {
  const failing = targets[0];
  if (failing === undefined) throw new Error("no target");
  markAll();
  const refuse = new RegExp(
    `"device_id" = '${failing.deviceId}' AND "resource_id" = '${failing.resourceId}'`,
  );
  const result = await runRollups(wrapped(refuse).parts);
  expect(result).toMatchObject({ resources: targets.length - 1, failed: 1 });
  expect([...new Set(parts.marks.pending().map((m) => `${m.deviceId}/${m.resourceId}`))]).toEqual([
    `${failing.deviceId}/${failing.resourceId}`,
  ]);
  // the next run, with InfluxDB answering again, writes it and forgets the marks
  expect(await runRollups(parts)).toMatchObject({ resources: 1, failed: 0 });
  expect(parts.marks.pending()).toEqual([]);
});
