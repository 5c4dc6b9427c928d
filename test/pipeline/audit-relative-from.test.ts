/**
 * `audit --from -2d` right after `backfill --from -2d` (#35): both resolve the relative --from to
 * an instant, and audit checks the first day from that instant on, so it finds no hole where
 * backfill never fetched (the first day before the instant). An audit from that day's 00:00 still
 * finds what is missing there: exactly the records before the backfill's start. The simulator
 * runs on real time, as the CLI resolves `-2d` from it; the sink is the run's influxd.
 */
import { z } from "zod";
import { runCli } from "../../src/cli.js";
import type { Simulator } from "../../src/simulator/server.js";
import { DAY_S } from "../../src/util/utc-time.js";
import { dropTestDb, recordsByResource, truthAnswers } from "../support/bad-data.js";
import { bufferIo } from "../support/cli-io.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";

const SITE = "hybrid-site-01";
const RESOLUTION_S = 900;

const auditSchema = z.object({
  from: z.string(),
  to: z.string(),
  days: z.number(),
  holes: z.array(
    z.object({
      resourceId: z.string(),
      day: z.string(),
      valueId: z.string(),
      apiRecords: z.number(),
      stored: z.number(),
    }),
  ),
  notSynced: z.array(z.unknown()),
});

describe("audit and backfill given the same relative --from", () => {
  let sim: Simulator;
  let db: TestInfluxDb;
  let env: Record<string, string>;
  /** Bounds of the instant backfill's `-2d` resolved to (epoch s). */
  let backfillFrom: { min: number; max: number };

  async function cli(...argv: string[]) {
    const io = bufferIo(env);
    const code = await runCli(argv, io);
    return { code, out: io.out(), err: io.err() };
  }

  async function audit(from: string) {
    const { code, out, err } = await cli("audit", "--device", SITE, "--from", from, "--json");
    if (out === "") throw new Error(`audit printed nothing (exit ${code}): ${err}`);
    return { code, result: auditSchema.parse(JSON.parse(out)), err };
  }

  beforeAll(async () => {
    sim = await startTestSimulator({ resolutionS: RESOLUTION_S });
    db = await createTestInfluxDb("audit_relative_from");
    env = pipelineEnv(sim, db, tempStateDb(), { LOG_LEVEL: "warn", SYNC_START: "-2d" });
    const before = Math.floor(Date.now() / 1000) - 2 * DAY_S;
    const backfilled = await cli("backfill", "--device", SITE, "--from", "-2d");
    backfillFrom = { min: before, max: Math.ceil(Date.now() / 1000) - 2 * DAY_S };
    expect(backfilled).toMatchObject({ code: 0, err: "" });
    // audit compares up to each resource's last sync
    expect(await cli("sync", "--device", SITE)).toMatchObject({ code: 0, err: "" });
  });
  afterAll(async () => {
    await sim.close();
    await dropTestDb(db);
  });

  it("audit --from -2d finds no hole, its first day checked from the instant on (partial, said so)", async () => {
    const { code, result } = await audit("-2d");
    expect({ code, holes: result.holes }).toEqual({ code: 0, holes: [] });
    const fromS = Date.parse(result.from) / 1000;
    expect(fromS).toBeGreaterThanOrEqual(backfillFrom.min);
    // its first day started before the instant: the day is partial, and counted as a day
    expect(fromS % DAY_S).not.toBe(0);
    const dayOf = (s: number) => Math.floor(s / DAY_S);
    expect(result.days).toBe(dayOf(Date.parse(result.to) / 1000) - dayOf(fromS) + 1);
    // the text says from when
    const text = await cli("audit", "--device", SITE, "--from", "-2d");
    expect(text.code).toBe(0);
    expect(text.out).toMatch(
      /^audit \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \.\. \d{4}-\d\d-\d\d: .*no holes$/m,
    );
  });

  it("audit from that day's 00:00 finds the first day's records before the backfill's start missing, and no other day", async () => {
    const firstDayS = Math.floor(backfillFrom.min / DAY_S) * DAY_S;
    const firstDay = new Date(firstDayS * 1000).toISOString().slice(0, 10);
    const { code, result } = await audit(firstDay);
    expect(code).toBe(1);
    expect(new Set(result.holes.map((h) => h.day))).toEqual(new Set([firstDay]));
    // the oracle: the simulator's records of each sampled value from 00:00 up to the backfill's
    // start are all missing, and the rest of the day is stored whole
    const truth = recordsByResource(truthAnswers(sim, SITE, firstDayS, firstDayS + DAY_S - 1));
    for (const hole of result.holes) {
      const records = (truth.get(hole.resourceId) ?? []).filter(
        (r) => r[hole.valueId] !== undefined && r[hole.valueId] !== null,
      );
      const atS = (r: { timestamp: string }) => Date.parse(`${r.timestamp}Z`) / 1000;
      const before = records.filter((r) => atS(r) < backfillFrom.min).length;
      const maybe = records.filter(
        (r) => atS(r) >= backfillFrom.min && atS(r) < backfillFrom.max,
      ).length;
      expect(hole.apiRecords).toBe(records.length);
      expect(records.length - hole.stored).toBeGreaterThanOrEqual(before);
      expect(records.length - hole.stored).toBeLessThanOrEqual(before + maybe);
    }
  });
});
