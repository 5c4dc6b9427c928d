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
  sortPoints,
} from "../support/expected-points.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";
import { withDeadline } from "../support/wait.js";

const SEED = 4242;
const DEVICE = "hybrid-site-01";
const NOW_MS = Date.UTC(2026, 5, 15, 12);
const DAY_S = 86_400;
const TO_S = NOW_MS / 1000;
const FROM_S = TO_S - 28 * DAY_S;
/** A run (backfill or sync) that takes longer fails the test. */
const RUN_DEADLINE_MS = 25_000;

/** The simulator's own records of the device's resource over [fromS, toS]. */
const simulatorRecords = (sim: Simulator, resourceId: string, fromS: number, toS: number) =>
  recordsOf(sim.fleet, DEVICE, resourceId, fromS, toS);

/**
 * Revokes every access token once, when the simulator has answered `afterDataRequests` data
 * requests. The watcher polls at most `maxPolls` times; stop() ends it.
 */
function revokeAfter(sim: Simulator, afterDataRequests: number, maxPolls = 10_000) {
  let polls = 0;
  let revoked = false;
  const timer = setInterval(() => {
    polls++;
    if (!revoked && sim.count("data") >= afterDataRequests) {
      revoked = true;
      sim.revokeTokens();
    }
    if (revoked || polls >= maxPolls) clearInterval(timer);
  }, 2);
  return {
    revoked: () => revoked,
    stop: () => clearInterval(timer),
  };
}

describe("backfill and sync through a chaotic API", () => {
  let sim: Simulator;
  let db: TestInfluxDb;
  let pipeline: Pipeline;
  let logLines: string[];

  beforeAll(async () => {
    // the simulator's rate limit counts real seconds: its clock moves in real time from NOW_MS
    const startedMs = Date.now();
    const clock = () => NOW_MS + (Date.now() - startedMs);
    sim = await startTestSimulator({
      seed: SEED,
      now: clock,
      resolutionS: 3600,
      rateLimit: { perSecond: 8 },
      faults: {
        errorRate: 0.2,
        dropRate: 0.06,
        malformedRate: 0.06,
        delayRate: 0.06,
        // well past API_TIMEOUT_MS: these attempts time out
        delayMs: 800,
      },
    });
    db = await createTestInfluxDb("chaos");
    const env = pipelineEnv(sim, db, tempStateDb(), {
      API_TIMEOUT_MS: "300",
      API_RETRIES: "10",
      API_RETRY_BASE_DELAY_MS: "10",
      API_RETRY_MAX_DELAY_MS: "100",
      API_RATE_LIMIT: "20",
      API_CONCURRENCY: "4",
    });
    ({ pipeline, logLines } = await openTestPipeline(env, () => new Date(clock())));
  });
  afterAll(async () => {
    await pipeline.close();
    await sim.close();
  });

  it("a backfill ends ok with every chunk done although every kind of fault happened", async () => {
    const { jobs: plan } = await withDeadline(
      planBackfill(pipeline, { devices: [DEVICE], fromS: FROM_S, toS: TO_S }),
      RUN_DEADLINE_MS,
      "the backfill plan",
    );
    const planned = plan.reduce((n, p) => n + p.chunks, 0);
    expect(planned).toBe(20);
    const jobs = plan.map(
      (p) => queueJob(pipeline.store.jobs, p.spec, p.chunks, pipeline.now()).job,
    );
    const revocation = revokeAfter(sim, 6);
    try {
      const result = await withDeadline(
        runBackfillJobs(pipeline, jobs),
        RUN_DEADLINE_MS,
        "the backfill",
      );
      expect(result.status).toBe("ok");
      for (const job of result.jobs) {
        expect(job).toMatchObject({ status: "done", chunksDone: job.chunksTotal });
        expect(pipeline.store.jobs.completedChunks(job.id).size).toBe(job.chunksTotal);
      }
    } finally {
      revocation.stop();
    }
    expect(revocation.revoked()).toBe(true);
    // every planned chunk was answered (at least once) in full
    const answered = new Set(
      sim.requests
        .filter((r) => r.endpoint === "data" && r.status === 200)
        .map((r) => `${r.segments.join("/")}|${r.query.values}|${r.query.from}|${r.query.to}`),
    );
    expect(answered.size).toBe(planned);
  });

  it("a sync right after, with the token revoked again mid-run, ends ok too", async () => {
    const revocation = revokeAfter(sim, sim.count("data") + 2);
    try {
      const result = await withDeadline(
        runSync(pipeline, { deviceIds: [DEVICE] }),
        RUN_DEADLINE_MS,
        "the sync",
      );
      expect(result).toMatchObject({ status: "ok", errors: 0 });
    } finally {
      revocation.stop();
    }
    expect(revocation.revoked()).toBe(true);
  });

  it("the faults really happened: 5xx, dropped, 429, 401, timeouts and truncated bodies", () => {
    const status = (test: (s: number) => boolean) =>
      sim.requests.filter((r) => test(r.status)).length;
    expect(status((s) => s >= 500)).toBeGreaterThan(0);
    expect(status((s) => s === 0)).toBeGreaterThan(0);
    expect(status((s) => s === 429)).toBeGreaterThan(0);
    expect(status((s) => s === 401)).toBeGreaterThan(0);
    // each revocation made the client fetch a new token
    expect(sim.count("create_token", 200)).toBeGreaterThanOrEqual(3);
    const retried = (code: string) =>
      logLines.filter((l) => l.includes('"msg":"request failed, retrying"') && l.includes(code))
        .length;
    expect(retried('"code":"timeout"')).toBeGreaterThan(0);
    expect(retried('"code":"invalid_response"')).toBeGreaterThan(0);
    expect(retried('"code":"server_error"')).toBeGreaterThan(0);
    expect(retried('"code":"network"')).toBeGreaterThan(0);
    expect(retried('"code":"rate_limited"')).toBeGreaterThan(0);
    expect(pipeline.store.runs.last("sync")).toMatchObject({ status: "ok", errors: 0 });
    expect(pipeline.store.runs.last("backfill")).toMatchObject({ status: "ok", errors: 0 });
  });

  it("InfluxDB holds exactly the simulator's data, from the backfill's start to the watermark", async () => {
    const expected: ReturnType<typeof expectedPoints> = [];
    for (const resourceId of sim.fleet.resourceIds(DEVICE) ?? []) {
      const watermark = pipeline.store.cursors.get(DEVICE, resourceId)?.newestRecordS;
      expect(watermark).toBeGreaterThanOrEqual(TO_S);
      expected.push(
        ...expectedPoints(
          DEVICE,
          resourceId,
          simulatorRecords(sim, resourceId, FROM_S, watermark ?? TO_S),
        ),
      );
    }
    const stored = await rawPoints(db);
    expect(stored.length).toBe(expected.length);
    expect(sortPoints(stored)).toEqual(sortPoints(expected));
  });
});
