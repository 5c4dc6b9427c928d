/**
 * Rollups exact on every counter (see falling-source.ts for the scenario and the oracle): every
 * hourly and daily rollup is what the counter rule, written again in the test, makes of the
 * simulator's readings; and `audit --rollups` on that data.
 */
import { runCli } from "../../src/cli.js";
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import type { Simulator } from "../../src/simulator/server.js";
import { bufferIo } from "../support/cli-io.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { ManualClock } from "../support/simulator.js";
import { expectExact, fallingSource, ingest, SYNCED_FROM_S, ZONES } from "./falling-source.js";

describe("rollups exact on every counter", () => {
  const clock = new ManualClock(SYNCED_FROM_S * 1000);
  let sim: Simulator;
  let db: TestInfluxDb;
  let pipeline: Pipeline;
  let env: Record<string, string>;

  beforeAll(async () => {
    sim = await fallingSource(clock, false);
    db = await createTestInfluxDb("rollups");
    env = pipelineEnv(sim, db, tempStateDb(), {
      ROLLUP_TIME_ZONES: ZONES.join(","),
      SYNC_START: new Date(SYNCED_FROM_S * 1000).toISOString(),
      LOG_LEVEL: "warn",
    });
    ({ pipeline } = await openTestPipeline(env, () => new Date(clock.now())));
  });
  afterAll(async () => {
    await pipeline?.close();
    await sim?.close();
  });

  it("every hourly and daily increase is the rule's, after newer-then-older backfills, a replay, a late backlog and counters that fall", async () => {
    await ingest(sim, pipeline, clock);
    const coverage = await expectExact(sim, db);
    // what was checked: falls of every kind, in many hours, on both sides of an hour's end
    expect(coverage.shallowDips).toBeGreaterThan(500);
    expect(coverage.deepFalls).toBeGreaterThan(200);
    expect(coverage.zeros).toBeGreaterThan(50);
    expect(coverage.hoursWithTwoFalls).toBeGreaterThan(500);
    expect(coverage.dipAtHourEnd).toBeGreaterThan(100);
    expect(coverage.dailyStartsAboveZero).toBeGreaterThan(60);
  }, 300_000);

  it("audit --rollups finds them equal, names a point overwritten by hand, and --fix repairs it", async () => {
    const audit = async (...extra: string[]) => {
      const io = bufferIo({ ...env, LOG_LEVEL: "error" });
      const code = await runCli(
        [
          "audit",
          "--rollups",
          "--from",
          "2026-03-14",
          "--to",
          "2026-04-12",
          "--sample-days",
          "10",
          "--json",
          ...extra,
        ],
        io,
      );
      return {
        code,
        report: JSON.parse(io.out()) as {
          checked: number;
          mismatches: { deviceId: string; day: string; zone: string; measurement: string }[];
        },
      };
    };
    const clean = await audit();
    expect(clean.code).toBe(0);
    expect(clean.report.checked).toBeGreaterThan(500);
    // one Berlin day (24 March, sampled) of the hybrid's solar counter, by hand
    const [point] = await db.series(
      `SELECT "increase", "device_id" FROM "rollup_day" WHERE "tz" = 'Europe/Berlin' AND "device_id" = 'hybrid-site-01' AND "values_id" = '001' AND time >= '2026-03-23T23:00:00Z' GROUP BY * LIMIT 1`,
    );
    const tags = point?.tags ?? {};
    const [time] = point?.values[0] ?? [];
    const line = `rollup_day,${Object.entries(tags)
      .map(([k, v]) => `${k}=${v.replace(/[ ,=]/g, "\\$&")}`)
      .join(",")} increase=12345.5 ${time}`;
    const res = await fetch(`${db.rawUrl}/write?db=${db.bucket}&precision=s`, {
      method: "POST",
      body: line,
    });
    expect(res.status).toBe(204);
    const broken = await audit();
    expect(broken.code).toBe(1);
    expect(broken.report.mismatches).toEqual([
      expect.objectContaining({
        deviceId: "hybrid-site-01",
        zone: "Europe/Berlin",
        measurement: tags.measurement,
      }),
    ]);
    const fixed = await audit("--fix");
    expect(fixed.code).toBe(0);
    expect((await audit()).code).toBe(0);
    await expectExact(sim, db);
  }, 300_000);
});
