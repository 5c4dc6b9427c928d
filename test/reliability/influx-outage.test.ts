import { setTimeout as sleep } from "node:timers/promises";
import { runBackfillJobs } from "../../src/pipeline/backfill.js";
import { planBackfill } from "../../src/pipeline/backfill-plan.js";
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import { runSync } from "../../src/pipeline/sync.js";
import type { Simulator } from "../../src/simulator/server.js";
import { queueJob } from "../support/backfill-jobs.js";
import {
  expectedPoints,
  rawPoints,
  simulatorRecords as recordsOf,
  type StoredPoint,
  sortPoints,
} from "../support/expected-points.js";
import type { TestInfluxDb } from "../support/influx-db.js";
import { influxql, TEST_INFLUX_ORG, TEST_INFLUX_TOKEN, TestInfluxd } from "../support/influxd.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { requestsFor } from "../support/schema-oracle.js";
import { startTestSimulator } from "../support/simulator.js";
import { waitUntil, withDeadline } from "../support/wait.js";

const DEVICE = "hybrid-site-01";
const NOW_MS = Date.UTC(2026, 5, 15, 12);
const DAY_S = 86_400;
const TO_S = NOW_MS / 1000;
const FROM_S = TO_S - 21 * DAY_S;
/** A run that takes longer fails the test. */
const RUN_DEADLINE_MS = 30_000;
/** Slow answers and two requests at a time, so that the outage lands in the middle of the run. */
const LATENCY_MS = 120;
const CONCURRENCY = "2";

const influxd = new TestInfluxd();

/** A database on the private influxd. */
async function privateDb(name: string): Promise<TestInfluxDb> {
  await influxql(influxd.rawUrl, "", `CREATE DATABASE "${name}"`);
  return {
    url: influxd.url,
    rawUrl: influxd.rawUrl,
    token: TEST_INFLUX_TOKEN,
    org: TEST_INFLUX_ORG,
    bucket: name,
    series: async (q) =>
      (await influxql(influxd.rawUrl, name, q)).results?.flatMap((r) => r.series ?? []) ?? [],
  };
}

/** The simulator's own records of the device's resource over [fromS, toS]. */
const simulatorRecords = (sim: Simulator, resourceId: string, fromS: number, toS: number) =>
  recordsOf(sim.fleet, DEVICE, resourceId, fromS, toS);

/** What every resource of the device should hold over [fromS, toS of each resource]. */
function expectedData(sim: Simulator, fromS: number, toS: (resourceId: string) => number) {
  return (sim.fleet.resourceIds(DEVICE) ?? []).flatMap((r) =>
    expectedPoints(DEVICE, r, simulatorRecords(sim, r, fromS, toS(r))),
  );
}

/** True when influxd answers /ping (within 1 s). */
async function influxdAnswers(): Promise<boolean> {
  try {
    const res = await fetch(`${influxd.rawUrl}/ping`, { signal: AbortSignal.timeout(1000) });
    return res.status === 204;
  } catch {
    return false;
  }
}

const dataPoints = async (db: TestInfluxDb): Promise<StoredPoint[]> => rawPoints(db);

/**
 * Stops influxd once the simulator has answered `afterDataRequests` data requests; with
 * `restartAfterMs`, starts it again that long after it stopped.
 */
async function outage(
  sim: Simulator,
  afterDataRequests: number,
  restartAfterMs?: number,
): Promise<{ dataRequestsAtStop: number }> {
  // Counted, not timed: from the afterDataRequests-th data request on, answers wait 1 s, so the
  // requests that come while influxd stops are answered only after it is down and the outage
  // lands in the middle of the run however fast the run goes and however long influxd takes.
  Object.defineProperty(sim, "latencyMs", {
    configurable: true,
    get: () => (sim.count("data") >= afterDataRequests ? 1_000 : LATENCY_MS),
    set: () => undefined,
  });
  await waitUntil(
    () => sim.count("data") >= afterDataRequests,
    `${afterDataRequests} data requests`,
    { timeoutMs: RUN_DEADLINE_MS },
  );
  try {
    await withDeadline(influxd.stopInfluxd(), 15_000, "stopping influxd");
  } finally {
    Object.defineProperty(sim, "latencyMs", {
      configurable: true,
      writable: true,
      value: LATENCY_MS,
    });
  }
  const dataRequestsAtStop = sim.count("data");
  if (restartAfterMs !== undefined) {
    await sleep(restartAfterMs);
    await withDeadline(influxd.start(), 25_000, "starting influxd again");
  }
  return { dataRequestsAtStop };
}

describe("InfluxDB stopped in the middle of a run", () => {
  const open: { pipeline: Pipeline; sim: Simulator }[] = [];
  beforeAll(() => influxd.start());
  afterEach(async () => {
    // a failed test may leave influxd down: the next one needs it
    if (!(await influxdAnswers())) await influxd.start();
    for (const { pipeline, sim } of open.splice(0)) {
      await pipeline.close();
      await sim.close();
    }
  });
  afterAll(() => influxd.stop());

  async function setUp(dbName: string, extra: Record<string, string>) {
    const sim = await startTestSimulator({
      now: () => NOW_MS,
      resolutionS: 3600,
      latencyMs: LATENCY_MS,
    });
    const db = await privateDb(dbName);
    const env = pipelineEnv(sim, db, tempStateDb(), {
      API_CONCURRENCY: CONCURRENCY,
      INFLUX_TIMEOUT_MS: "5000",
      // the clock stands still here: a failed resource is retried by the very next sync
      FAILURE_BACKOFF: "PT0S",
      ...extra,
    });
    const { pipeline, logLines } = await openTestPipeline(env, () => new Date(NOW_MS));
    open.push({ pipeline, sim });
    return { sim, db, pipeline, logLines };
  }

  it("a sync without write retries fails cleanly; the next sync fills every gap", async () => {
    const { sim, db, pipeline } = await setUp("outage_sync", {
      SYNC_START: "P21D",
      INFLUX_RETRIES: "0",
    });
    const [failed, stopped] = await withDeadline(
      // all_data's first window (4 chunks) is written before the outage, the rest is not
      Promise.all([runSync(pipeline, { deviceIds: [DEVICE] }), outage(sim, 7)]),
      RUN_DEADLINE_MS,
      "the sync during the outage",
    );
    const planned = 15;
    expect(stopped.dataRequestsAtStop).toBeLessThan(planned);
    expect(failed.status).toBe("failed");
    expect(failed.devices[0]?.error).toMatch(/InfluxDB write failed after 1 attempt \(/);
    // the device, and the rollups of what it wrote before the outage (their marks stay)
    expect(pipeline.store.runs.last("sync")).toMatchObject({ status: "failed", errors: 2 });
    expect(failed.rollups?.failed).toBeGreaterThan(0);
    expect(pipeline.store.rollups.count()).toBeGreaterThan(0);
    const watermarks = (sim.fleet.resourceIds(DEVICE) ?? []).map((r) => ({
      resourceId: r,
      watermark: pipeline.store.cursors.get(DEVICE, r)?.newestRecordS,
    }));
    // something was not written, so some watermark stayed behind now; one moved before the outage
    expect(watermarks.some((w) => w.watermark === undefined || w.watermark < TO_S)).toBe(true);
    expect(watermarks.some((w) => w.watermark !== undefined)).toBe(true);

    await withDeadline(influxd.start(), 25_000, "starting influxd");
    // the watermark is not past what InfluxDB holds: everything up to it is there
    const stored = await dataPoints(db);
    for (const { resourceId, watermark } of watermarks) {
      if (watermark === undefined) continue;
      const upToWatermark = stored.filter(
        (p) => p.tags.resource_id === resourceId && p.time <= watermark,
      );
      const expected = expectedPoints(
        DEVICE,
        resourceId,
        simulatorRecords(sim, resourceId, FROM_S, watermark),
      );
      expect(sortPoints(upToWatermark)).toEqual(sortPoints(expected));
    }

    const next = await withDeadline(
      runSync(pipeline, { deviceIds: [DEVICE] }),
      RUN_DEADLINE_MS,
      "the sync after the outage",
    );
    expect(next).toMatchObject({ status: "ok", errors: 0 });
    // and the rollups the outage left due
    expect(pipeline.store.rollups.count()).toBe(0);
    for (const { resourceId } of watermarks) {
      expect(pipeline.store.cursors.get(DEVICE, resourceId)?.newestRecordS).toBe(TO_S);
    }
    const expected = expectedData(sim, FROM_S, () => TO_S);
    const after = await dataPoints(db);
    expect(after.length).toBe(expected.length);
    expect(sortPoints(after)).toEqual(sortPoints(expected));
  });

  it("a backfill whose writes are retried rides out a short outage and ends done", async () => {
    const { sim, db, pipeline, logLines } = await setUp("outage_retry", { INFLUX_RETRIES: "5" });
    const { jobs: plan } = await planBackfill(pipeline, {
      devices: [DEVICE],
      fromS: FROM_S,
      toS: TO_S,
    });
    const jobs = plan.map(
      (p) => queueJob(pipeline.store.jobs, p.spec, p.chunks, pipeline.now()).job,
    );
    const [result] = await withDeadline(
      Promise.all([runBackfillJobs(pipeline, jobs), outage(sim, 4, 300)]),
      RUN_DEADLINE_MS,
      "the backfill during the outage",
    );
    // the outage was hit: writes failed and were retried
    expect(logLines.some((l) => l.includes('"msg":"write failed, retrying"'))).toBe(true);
    expect(result.status).toBe("ok");
    for (const job of result.jobs) {
      expect(job).toMatchObject({ status: "done", chunksDone: job.chunksTotal });
      expect(pipeline.store.jobs.completedChunks(job.id).size).toBe(job.chunksTotal);
      expect(pipeline.store.cursors.get(DEVICE, job.resourceId)?.newestRecordS).toBe(TO_S);
    }
    // no chunk was fetched twice: the writes were retried, not the chunks
    expect(sim.count("data")).toBe(plan.reduce((n, p) => n + p.chunks, 0));
    const expected = expectedData(sim, FROM_S, () => TO_S);
    expect(sortPoints(await dataPoints(db))).toEqual(sortPoints(expected));
  });

  it("a backfill without write retries fails cleanly; the same backfill again completes it", async () => {
    const { sim, db, pipeline } = await setUp("outage_backfill", { INFLUX_RETRIES: "0" });
    const { jobs: plan } = await planBackfill(pipeline, {
      devices: [DEVICE],
      fromS: FROM_S,
      toS: TO_S,
    });
    const planned = plan.reduce((n, p) => n + p.chunks, 0);
    expect(planned).toBe(15);
    const jobs = plan.map(
      (p) => queueJob(pipeline.store.jobs, p.spec, p.chunks, pipeline.now()).job,
    );
    const [failed] = await withDeadline(
      Promise.all([runBackfillJobs(pipeline, jobs), outage(sim, 4)]),
      RUN_DEADLINE_MS,
      "the backfill during the outage",
    );
    expect(failed.status).toBe("failed");
    expect(pipeline.store.runs.last("backfill")).toMatchObject({ status: "failed" });
    let doneBefore = 0;
    const doneChunks = new Map<number, Set<number>>();
    for (const job of failed.jobs) {
      expect(job.status).toBe("failed");
      expect(job.lastError).toMatch(/InfluxDB write failed after 1 attempt \(/);
      const done = pipeline.store.jobs.completedChunks(job.id);
      expect(done.size).toBe(job.chunksDone);
      expect(done.size).toBeLessThan(job.chunksTotal);
      doneChunks.set(job.id, done);
      doneBefore += done.size;
      // a failed job never moves the watermark
      expect(pipeline.store.cursors.get(DEVICE, job.resourceId)?.newestRecordS).toBeUndefined();
    }

    // the chunks answered before the outage were written and recorded
    expect(doneBefore).toBeGreaterThan(0);
    await withDeadline(influxd.start(), 25_000, "starting influxd");
    // every chunk recorded done is in InfluxDB
    const stored = new Set(sortPoints(await dataPoints(db)));
    for (const job of failed.jobs) {
      for (const chunk of requestsFor(job.valueIds, job.fromS, job.toS)) {
        if (!doneChunks.get(job.id)?.has(chunk.index)) continue;
        const records = sim.fleet.records(
          DEVICE,
          job.resourceId,
          chunk.values,
          chunk.fromS,
          chunk.toS,
        );
        for (const point of sortPoints(expectedPoints(DEVICE, job.resourceId, records))) {
          expect(stored.has(point)).toBe(true);
        }
      }
    }

    // the same backfill again: it continues the jobs and fetches only what is not done
    sim.resetLog();
    const { jobs: again } = await planBackfill(pipeline, {
      devices: [DEVICE],
      fromS: FROM_S,
      toS: TO_S,
    });
    const resumed = again.map((p) =>
      queueJob(pipeline.store.jobs, p.spec, p.chunks, pipeline.now()),
    );
    expect(resumed.map((r) => r.resumed)).toEqual(again.map(() => true));
    const result = await withDeadline(
      runBackfillJobs(
        pipeline,
        resumed.map((r) => r.job),
      ),
      RUN_DEADLINE_MS,
      "the backfill after the outage",
    );
    expect(result.status).toBe("ok");
    expect(sim.count("data")).toBe(planned - doneBefore);
    for (const job of result.jobs) {
      expect(job).toMatchObject({ status: "done", chunksDone: job.chunksTotal, lastError: null });
      expect(pipeline.store.cursors.get(DEVICE, job.resourceId)?.newestRecordS).toBe(TO_S);
    }
    const expected = expectedData(sim, FROM_S, () => TO_S);
    const after = await dataPoints(db);
    expect(after.length).toBe(expected.length);
    expect(sortPoints(after)).toEqual(sortPoints(expected));
  });
});
