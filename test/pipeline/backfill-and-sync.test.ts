import { formatQueryTime } from "../../src/api/time-format.js";
import { runBackfillJob } from "../../src/pipeline/backfill-job.js";
import { planBackfill } from "../../src/pipeline/backfill-plan.js";
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import { runSync } from "../../src/pipeline/sync.js";
import type { Simulator } from "../../src/simulator/server.js";
import { queueJob } from "../support/backfill-jobs.js";
import {
  expectedPoints,
  simulatorRecords as recordsOf,
  sortPoints,
  storedPoints,
} from "../support/expected-points.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { openTestPipeline, pipelineEnv, tempStateDb, testRun } from "../support/pipeline.js";
import { requestCount } from "../support/schema-oracle.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

const DAY_S = 86_400;
const NOW_MS = Date.UTC(2026, 5, 15, 12);
const DEVICE = "hybrid-site-01";

/** The simulator's own records of the device's resource over [fromS, toS]. */
const simulatorRecords = (sim: Simulator, resourceId: string, fromS: number, toS: number) =>
  recordsOf(sim.fleet, DEVICE, resourceId, fromS, toS);

describe("90-day backfill, then an incremental sync (simulator, influxd, SQLite)", () => {
  let sim: Simulator;
  let db: TestInfluxDb;
  let pipeline: Pipeline;
  const clock = new ManualClock(NOW_MS);
  const fromS = NOW_MS / 1000 - 90 * DAY_S;
  const toS = NOW_MS / 1000;

  beforeAll(async () => {
    sim = await startTestSimulator({ now: clock.now, resolutionS: 3600 });
    db = await createTestInfluxDb("backfill90");
    ({ pipeline } = await openTestPipeline(
      pipelineEnv(sim, db, tempStateDb()),
      () => new Date(clock.now()),
    ));
  });
  afterAll(async () => {
    await pipeline.close();
    await sim.close();
  });

  it("issues exactly the planned (minimum) number of data requests and InfluxDB holds exactly the simulator's data", async () => {
    const { jobs: plan } = await planBackfill(pipeline, { devices: [DEVICE], fromS, toS });
    const resources = plan.map((p) => p.spec.resourceId).sort();
    expect(resources).toEqual(["all_data", "battery_bank"]);
    const theoretical = plan.reduce(
      (n, p) => n + Math.ceil(p.spec.valueIds.length / 20) * Math.ceil((toS - fromS) / (7 * DAY_S)),
      0,
    );
    const planned = plan.reduce((n, p) => n + p.chunks, 0);
    expect(planned).toBe(theoretical);
    expect(
      plan.find((p) => p.spec.resourceId === "all_data")?.spec.valueIds.length,
    ).toBeGreaterThan(40);

    sim.resetLog();
    for (const p of plan) {
      const { job } = queueJob(pipeline.store.jobs, p.spec, p.chunks, pipeline.now());
      const done = await runBackfillJob(pipeline, testRun(pipeline), job);
      expect(done).toMatchObject({ status: "done", chunksDone: p.chunks, chunksTotal: p.chunks });
    }
    expect(sim.count("data")).toBe(planned);
    expect(sim.count("data", 200)).toBe(planned);

    expect(await db.series('SELECT * FROM "etl_run" WHERE "kind" = \'sync\'')).toEqual([]);
    const expected = [
      ...expectedPoints(DEVICE, "all_data", simulatorRecords(sim, "all_data", fromS, toS)),
      ...expectedPoints(DEVICE, "battery_bank", simulatorRecords(sim, "battery_bank", fromS, toS)),
    ];
    const stored = await storedPoints(db);
    expect(stored.length).toBe(expected.length);
    expect(sortPoints(stored)).toEqual(sortPoints(expected));
    expect(pipeline.store.cursors.get(DEVICE, "all_data")?.newestRecordS).toBe(toS);
  });

  it("an incremental sync right after fetches only the lookback and the new time", async () => {
    clock.advance(30 * 60_000);
    sim.resetLog();
    const result = await runSync(pipeline, { deviceIds: [DEVICE] });
    expect(result.status).toBe("ok");
    const data = sim.requests.filter((r) => r.endpoint === "data");
    const valueCounts = (sim.fleet.valueIds(DEVICE, "all_data")?.length ?? 0) - 1;
    expect(data).toHaveLength(requestCount(valueCounts, 0, 0) + 1);
    const expectedFrom = formatQueryTime(new Date((toS + 1 - 3600) * 1000));
    const expectedTo = formatQueryTime(new Date(clock.now()));
    for (const r of data) expect([r.query.from, r.query.to]).toEqual([expectedFrom, expectedTo]);
    // the cursor follows the data: records are hourly, so the newest one is still 12:00
    const cursor = pipeline.store.cursors.get(DEVICE, "all_data");
    expect(cursor?.newestRecordS).toBe(toS);
    expect(cursor?.fetchedUntilS).toBe(clock.now() / 1000);
    expect(pipeline.store.runs.last("sync")).toMatchObject({ status: "ok", devices: 1, errors: 0 });
  });

  it("every run leaves an etl_run point and the lag per device in InfluxDB", async () => {
    const runs = await db.series(
      'SELECT "requests", "points", "errors", "ok" FROM "etl_run" GROUP BY "kind", "status"',
    );
    const sync = runs.find((r) => r.tags?.kind === "sync");
    expect(sync?.tags?.status).toBe("ok");
    expect(sync?.values[0]?.slice(1)).toEqual([expect.any(Number), expect.any(Number), 0, 1]);
    expect(sync?.values[0]?.[2]).toBeGreaterThan(0);
    const lags = await db.series(
      'SELECT last("lag_s") FROM "etl_lag" GROUP BY "device_id", "resource_id"',
    );
    // lag is now minus the newest record: hourly records, 30 minutes after the last one
    expect(lags.map((l) => [l.tags?.device_id, l.tags?.resource_id, l.values[0]?.[1]])).toEqual([
      [DEVICE, "all_data", 1800],
      [DEVICE, "battery_bank", 1800],
    ]);
  });
});
