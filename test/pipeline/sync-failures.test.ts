import { runSync } from "../../src/pipeline/sync.js";
import type { Simulator } from "../../src/simulator/server.js";
import { storedJobs } from "../support/backfill-jobs.js";
import { createTestInfluxDb } from "../support/influx-db.js";
import { influxql, TestInfluxd } from "../support/influxd.js";
import { openTestPipeline, pipelineEnv, tempStateDb, VirtualTimers } from "../support/pipeline.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

const NOW_MS = Date.UTC(2026, 5, 15, 12);
const DEVICE = "site A+1";

describe("sync when InfluxDB fails", () => {
  const influxd = new TestInfluxd();
  let sim: Simulator;
  const clock = new ManualClock(NOW_MS);
  afterAll(async () => {
    await sim.close();
    await influxd.stop();
  });

  it("leaves the cursor where it was; the next sync fills the gap", async () => {
    await influxd.start();
    await influxql(influxd.rawUrl, "", 'CREATE DATABASE "outage"');
    sim = await startTestSimulator({ now: clock.now });
    const target = { url: influxd.url, token: "test-influx-token", org: "o", bucket: "outage" };
    const env = pipelineEnv(sim, target, tempStateDb(), {
      SYNC_START: "PT6H",
      INFLUX_RETRIES: "1",
    });
    const { pipeline } = await openTestPipeline(env, () => new Date(clock.now()));
    try {
      expect((await runSync(pipeline, { deviceIds: [DEVICE] })).status).toBe("ok");
      const newest = pipeline.store.cursors.get(DEVICE, "all_data")?.newestRecordS;
      expect(newest).toBe(NOW_MS / 1000);

      await influxd.stopInfluxd();
      clock.advance(2 * 3600_000);
      const failed = await runSync(pipeline, { deviceIds: [DEVICE] });
      expect(failed.status).toBe("failed");
      expect(failed.devices[0]?.error).toMatch(/InfluxDB write failed after 2 attempts/);
      expect(pipeline.store.cursors.get(DEVICE, "all_data")?.newestRecordS).toBe(newest);
      expect(pipeline.store.runs.last("sync")).toMatchObject({ status: "failed", errors: 1 });

      await influxd.start();
      clock.advance(60_000);
      expect((await runSync(pipeline, { deviceIds: [DEVICE] })).status).toBe("ok");
      expect(pipeline.store.cursors.get(DEVICE, "all_data")?.newestRecordS).toBe(
        clock.now() / 1000,
      );
      const { results } = await influxql(
        influxd.rawUrl,
        "outage",
        'SELECT count("value") FROM "total_load_power"',
      );
      // 6 h before the first sync, then every minute up to now: no hole, no duplicate
      expect(results?.[0]?.series?.[0]?.values?.[0]?.[1]).toBe(6 * 60 + 2 * 60 + 1 + 1);
    } finally {
      await pipeline.close();
    }
  });
});

describe("a new value id on a synced device", () => {
  it("gets its history backfilled from SYNC_START up to the newest record", async () => {
    const clock = new ManualClock(NOW_MS);
    const sim = await startTestSimulator({ now: clock.now });
    const db = await createTestInfluxDb("newvalue");
    // the value lists are read again every 5 minutes here (CATALOG_REFRESH)
    const env = pipelineEnv(sim, db, tempStateDb(), { SYNC_START: "P1D", CATALOG_REFRESH: "PT5M" });
    const { pipeline, state, logLines } = await openTestPipeline(env, () => new Date(clock.now()));
    try {
      await runSync(pipeline, { deviceIds: [DEVICE] });
      const newest = pipeline.store.cursors.get(DEVICE, "all_data")?.newestRecordS ?? 0;
      sim.fleet.addValue(DEVICE, "all_data", "e_03_01_00_007_heat_pump_power");
      clock.advance(5 * 60_000);
      const result = await runSync(pipeline, { deviceIds: [DEVICE] });
      expect(result.devices[0]?.newValues).toBe(1);
      expect(logLines.some((l) => l.includes("new values: history backfill queued"))).toBe(true);

      const job = storedJobs(state).at(-1);
      expect(job).toMatchObject({
        reason: "new_value",
        status: "done",
        valueIds: ["e_03_01_00_007_heat_pump_power"],
        fromS: clock.now() / 1000 - 86_400,
        toS: newest,
      });
      const [series] = await db.series('SELECT count("value") FROM "heat_pump_power"');
      // SYNC_START (one day before now) up to the first newest record, then the second sync's
      // window up to now: every minute once, no hole
      expect(series?.values[0]?.[1]).toBe(24 * 60 + 1);
    } finally {
      await pipeline.close();
      await sim.close();
    }
  });
});

describe("sync against a rate-limited API", () => {
  it("pauses for Retry-After and still fetches everything", async () => {
    // count-based, not real time: every request the simulator sees moves its rate-limit clock by
    // 100 ms (10 per "second", 4 allowed), and the rate gate's 429 pauses and the retries run on
    // a virtual clock whose sleeps take no real time (the gate's spacing at 20/s is p-queue's)
    const clock = new ManualClock(NOW_MS);
    let seen = 0;
    const sim = await startTestSimulator({
      now: clock.now,
      rateLimit: { perSecond: 4 },
      rateClock: () => seen++ * 100,
    });
    const db = await createTestInfluxDb("ratelimit");
    const env = pipelineEnv(sim, db, tempStateDb(), {
      SYNC_START: "P8D",
      API_RATE_LIMIT: "20",
      API_CONCURRENCY: "4",
      API_RETRIES: "20",
    });
    const timers = new VirtualTimers();
    const { pipeline } = await openTestPipeline(env, () => new Date(clock.now()), { timers });
    try {
      const result = await runSync(pipeline, { deviceIds: ["hybrid-site-01", DEVICE] });
      expect(result.status).toBe("ok");
      expect(sim.count(undefined, 429)).toBeGreaterThan(0);
      // no adaptive slow-down (docs/design.md): the rate after the pauses is API_RATE_LIMIT
      expect(pipeline.gate?.currentRatePerSecond).toBe(20);
      // the pauses happened on the virtual clock: at least one Retry-After (1 s) each
      expect(timers.nowMs).toBeGreaterThanOrEqual(1000);
      // every planned chunk answered 200 exactly once: 429s were retried, nothing skipped
      expect(sim.count("data", 200)).toBe(4 * 2 + 1 * 2 + 2 * 2);
    } finally {
      await pipeline.close();
      await sim.close();
    }
  });
});
