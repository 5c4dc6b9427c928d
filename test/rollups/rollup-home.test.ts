/**
 * Where the rollups live (ROLLUP_BUCKET): with `<database>/rollups` (a retention policy with
 * shard groups of 52 weeks, made with InfluxQL on the tests' influxd) a sync writes its rollups
 * there and none into the default policy, where the raw points stay; without it they go beside
 * the raw points as before. The oracle of the placement is the same sync beside the raw points:
 * one simulator, one fixed clock, two databases; the rollups must be the same points, elsewhere.
 * Real parts: the simulator over HTTP, the tests' influxd, SQLite state files.
 */
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import { runSync } from "../../src/pipeline/sync.js";
import { runRollups } from "../../src/rollups/rollup-run.js";
import type { Simulator } from "../../src/simulator/server.js";
import { type Fields, type StoredPoint, sortPoints } from "../support/expected-points.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { influxql } from "../support/influxd.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";

const HOUR_MS = 3_600_000;
/** The simulator's clock and the pipelines': fixed, 25 minutes into an hour. */
const NOW_MS = Date.UTC(2026, 2, 10, 12, 25);
const FROM_MS = NOW_MS - 6 * HOUR_MS;

let sim: Simulator;
/** The rollups in retention policy "rollups" (ROLLUP_BUCKET). */
let own: TestInfluxDb;
/** The rollups beside the raw points (no ROLLUP_BUCKET). */
let beside: TestInfluxDb;
const pipelines: Pipeline[] = [];

/** A pipeline on `db`, as the CLI wires it, on the fixed clock. */
async function open(db: TestInfluxDb, extra: Record<string, string> = {}): Promise<Pipeline> {
  const env = pipelineEnv(sim, db, tempStateDb(), {
    SYNC_START: new Date(FROM_MS).toISOString(),
    ROLLUP_TIME_ZONES: "UTC,Europe/Berlin",
    LOG_LEVEL: "info",
    ...extra,
  });
  const { pipeline } = await openTestPipeline(env, () => new Date(NOW_MS));
  pipelines.push(pipeline);
  return pipeline;
}

/**
 * Every point of the measurements matching `measurements` in retention policy `policy`, each as a
 * sorted JSON text (sortPoints), `measurement` first.
 */
async function pointsIn(db: TestInfluxDb, policy: string, measurements: string): Promise<string[]> {
  const points: StoredPoint[] = [];
  for (const s of await db.series(`SELECT * FROM "${policy}"./${measurements}/ GROUP BY *`)) {
    for (const row of s.values) {
      const fields: Fields = {};
      s.columns.forEach((column, i) => {
        const v = row[i];
        if (column !== "time" && v !== null && v !== undefined) {
          fields[column] = v as number | string;
        }
      });
      const tags = Object.fromEntries(Object.entries(s.tags ?? {}).filter(([, v]) => v !== ""));
      points.push({ measurement: s.name, tags, fields, time: row[0] as number });
    }
  }
  return sortPoints(points);
}

/** The measurements that hold points in `policy` (1.x lists measurements per database). */
async function measurementsIn(db: TestInfluxDb, policy: string): Promise<string[]> {
  const found = await db.series(`SELECT count(*) FROM "${policy}"./.*/`);
  return found.map((s) => s.name).sort();
}

const ROLLUPS = "^rollup_(hour|day)$";

beforeAll(async () => {
  sim = await startTestSimulator({ now: () => NOW_MS, resolutionS: 300 });
  own = await createTestInfluxDb("rollup_home");
  await influxql(
    own.rawUrl,
    own.bucket,
    `CREATE RETENTION POLICY "rollups" ON "${own.bucket}" DURATION INF REPLICATION 1 SHARD DURATION 52w`,
  );
  beside = await createTestInfluxDb("rollup_beside");
  for (const pipeline of [
    await open(own, { ROLLUP_BUCKET: `${own.bucket}/rollups` }),
    await open(beside),
  ]) {
    const sync = await runSync(pipeline);
    expect(sync.errors).toBe(0);
    expect(pipeline.store.rollups.pending()).toEqual([]);
  }
});

afterAll(async () => {
  for (const pipeline of pipelines) await pipeline.close();
  await sim?.close();
});

describe("ROLLUP_BUCKET=<database>/rollups", () => {
  it("a sync writes its rollups into that retention policy and none into the default one", async () => {
    expect(await measurementsIn(own, "rollups")).toEqual(["rollup_day", "rollup_hour"]);
    const defaults = await measurementsIn(own, "autogen");
    expect(defaults.filter((m) => m.startsWith("rollup_"))).toEqual([]);
    // the raw points (and the run's own) stay in the default policy
    expect(defaults).toEqual(expect.arrayContaining(["etl_lag", "etl_run"]));
    expect(defaults.length).toBeGreaterThan(10);
    const days = await own.series(`SELECT count("increase") FROM "rollups"."rollup_day"`);
    expect(Number(days[0]?.values[0]?.[1])).toBeGreaterThan(0);
  });

  it("they are the points the same sync writes beside the raw points, the raw points unchanged", async () => {
    const rollups = await pointsIn(own, "rollups", ROLLUPS);
    expect(rollups.length).toBeGreaterThan(100);
    const zones = (await own.series(`SHOW TAG VALUES FROM "rollups"."rollup_day" WITH KEY = "tz"`))
      .flatMap((s) => s.values.map((row) => row[1]))
      .sort();
    expect(zones).toEqual(["Europe/Berlin", "UTC"]);
    expect(rollups).toEqual(await pointsIn(beside, "autogen", ROLLUPS));
    // the data points (the runs' own, etl_*, carry their durations)
    const data = async (db: TestInfluxDb) =>
      (await pointsIn(db, "autogen", ".*")).filter((p) => !/^\["(etl|rollup)_/.test(p));
    const written = await data(own);
    expect(written.length).toBeGreaterThan(1000);
    expect(written).toEqual(await data(beside));
  });

  it("reads them back there: recomputed, the days (sums of the stored hours) come out the same", async () => {
    const [pipeline] = pipelines;
    const rollups = pipeline?.rollups;
    if (pipeline === undefined || rollups === undefined) throw new Error("no rollups");
    expect(rollups.home).toEqual({ retentionPolicy: "rollups" });
    const before = await pointsIn(own, "rollups", ROLLUPS);
    await influxql(own.rawUrl, own.bucket, 'DELETE FROM "rollup_day"');
    expect(await pointsIn(own, "rollups", "^rollup_day$")).toEqual([]);
    for (const deviceId of sim.fleet.deviceIds()) {
      for (const { resourceId } of pipeline.store.catalog.device(deviceId).resources) {
        pipeline.store.rollups.mark(deviceId, resourceId, FROM_MS / 1000, NOW_MS / 1000);
      }
    }
    expect(await runRollups(rollups)).toMatchObject({ failed: 0 });
    expect(await pointsIn(own, "rollups", ROLLUPS)).toEqual(before);
  });
});

describe("without ROLLUP_BUCKET", () => {
  it("the rollups go beside the raw points, as before", async () => {
    expect(pipelines[1]?.rollups?.home).toEqual({});
    const defaults = await measurementsIn(beside, "autogen");
    expect(defaults).toEqual(expect.arrayContaining(["rollup_day", "rollup_hour", "etl_run"]));
  });
});

describe("the start-up check of ROLLUP_BUCKET", () => {
  it("a retention policy that does not exist stops the start, naming ROLLUP_BUCKET", async () => {
    await expect(open(own, { ROLLUP_BUCKET: `${own.bucket}/nope` })).rejects.toThrow(
      `InfluxDB has no bucket ${own.bucket}/nope (HTTP 500: retention policy not found: nope): ` +
        "create it or fix ROLLUP_BUCKET and INFLUX_ORG (on InfluxDB 1.8: " +
        "database[/retention-policy])",
    );
  });

  it("with ROLLUPS=false it is neither checked nor written", async () => {
    const pipeline = await open(own, { ROLLUP_BUCKET: `${own.bucket}/nope`, ROLLUPS: "false" });
    expect(pipeline.rollups).toBeUndefined();
  });
});
