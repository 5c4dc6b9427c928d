/**
 * `rollups` and `audit --rollups` from the command line, on a real influxd and simulator: the
 * rollups of a zone added after the data was written (ROLLUP_TIME_ZONES grew), a dry run that
 * writes nothing, a run that continues where an earlier one stopped, and the audit finding a
 * wrong daily rollup and fixing it.
 */
import { z } from "zod";
import { rollupRequest } from "../../src/cli/commands/rollups.js";
import { runCli } from "../../src/cli.js";
import type { Simulator } from "../../src/simulator/server.js";
import { StateStore } from "../../src/state/state-store.js";
import { bufferIo } from "../support/cli-io.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";

/** `audit --rollups --json`. */
const auditSchema = z.object({
  resources: z.number(),
  checked: z.number(),
  zones: z.array(z.string()),
  mismatches: z.array(
    z.object({
      deviceId: z.string(),
      zone: z.string(),
      day: z.string(),
      measurement: z.string(),
      fromRaw: z.number().nullable(),
      stored: z.number().nullable(),
    }),
  ),
  fixedDays: z.number().optional(),
  remaining: z.number().optional(),
});

// Berlin moves to summer time on 29 March 2026: one of the days has 23 hours.
const FROM = "2026-03-27T00:00:00Z";
const TO = "2026-03-30T23:59:59Z";
const ZONES = "UTC,Europe/Berlin";

describe("rollups and audit --rollups from the command line", () => {
  let sim: Simulator;
  let db: TestInfluxDb;
  let env: Record<string, string>;
  let stateDb: string;

  beforeAll(async () => {
    sim = await startTestSimulator({ resolutionS: 900 });
    db = await createTestInfluxDb("cli_rollups");
    stateDb = tempStateDb();
    env = pipelineEnv(sim, db, stateDb, { LOG_LEVEL: "warn", ROLLUP_TIME_ZONES: "UTC" });
  });
  afterAll(() => sim.close());

  async function run(extra: Record<string, string>, ...argv: string[]) {
    const io = bufferIo({ ...env, ...extra });
    const code = await runCli(argv, io);
    return { code, out: io.out(), err: io.err() };
  }
  const audit = async (...argv: string[]) => {
    const { code, out } = await run(
      { ROLLUP_TIME_ZONES: ZONES },
      "audit",
      "--rollups",
      "--from",
      FROM,
      "--to",
      TO,
      "--sample-days",
      "4",
      "--json",
      ...argv,
    );
    return { code, result: auditSchema.parse(JSON.parse(out)) };
  };
  const berlinDays = async (): Promise<number> =>
    (await db.series(`SELECT count("increase") FROM "rollup_day" WHERE "tz" = 'Europe/Berlin'`))
      .map((s) => Number(s.values[0]?.[1]))
      .reduce((a, b) => a + b, 0);
  const pendingMarks = (): number => {
    const store = StateStore.open(stateDb);
    try {
      return store.rollups.count();
    } finally {
      store.close();
    }
  };

  it("a zone added later: the audit finds its days missing, a dry run writes nothing, the command writes them, the audit then passes", async () => {
    const backfill = await run({}, "backfill", "--all", "--from", FROM, "--to", TO);
    expect(backfill.code).toBe(0);
    expect(pendingMarks()).toBe(0);

    const before = await audit();
    expect(before.code).toBe(1);
    expect(before.result.zones).toEqual(["UTC", "Europe/Berlin"]);
    expect(before.result.mismatches.length).toBeGreaterThan(0);
    // the UTC days are there and right; every Berlin day is missing
    expect(new Set(before.result.mismatches.map((m) => m.zone))).toEqual(
      new Set(["Europe/Berlin"]),
    );
    expect(before.result.mismatches.every((m) => m.stored === null && m.fromRaw !== null)).toBe(
      true,
    );

    const dry = await run(
      { ROLLUP_TIME_ZONES: ZONES },
      "rollups",
      "--from",
      FROM,
      "--to",
      TO,
      "--dry-run",
    );
    expect(dry.code).toBe(0);
    expect(dry.out).toMatch(
      /would write the rollups of \d+ device resources .* 4 days .*nothing written/,
    );
    expect(await berlinDays()).toBe(0);
    expect(pendingMarks()).toBe(0);

    const written = await run({ ROLLUP_TIME_ZONES: ZONES }, "rollups", "--from", FROM, "--to", TO);
    expect([written.code, written.err]).toEqual([0, ""]);
    expect(written.out).toMatch(/rollups: 4 devices, \d+ points written/);
    expect(pendingMarks()).toBe(0);
    expect(await berlinDays()).toBeGreaterThan(0);

    const after = await audit();
    expect(after.result.mismatches).toEqual([]);
    expect(after.code).toBe(0);
    // 4 days x 2 zones of every counter series
    expect(after.result.checked).toBeGreaterThanOrEqual(8 * after.result.resources);
  });

  it("the same command again continues the days an earlier run left, not the whole range", async () => {
    const fromS = Date.parse(FROM) / 1000;
    const toS = Date.parse(TO) / 1000;
    // what an earlier run that stopped after the first devices left: one device's last day
    const store = StateStore.open(stateDb);
    try {
      store.rollups.mark(
        "hybrid-site-01",
        "all_data",
        toS - 86_399,
        toS,
        rollupRequest(fromS, toS),
      );
    } finally {
      store.close();
    }
    const again = await run({ ROLLUP_TIME_ZONES: ZONES }, "rollups", "--from", FROM, "--to", TO);
    expect(again.code).toBe(0);
    expect(again.out).toMatch(/continuing: 1 day an earlier run of this command left/);
    expect(again.out).toMatch(/rollups: 1 device, \d+ points written/);
    expect(pendingMarks()).toBe(0);
  });

  it("a request is its range by UTC day and its devices: `--from -365d` again later the same day continues it", () => {
    const fromS = Date.parse("2026-03-27T10:15:00Z") / 1000;
    const toS = Date.parse("2026-03-30T10:15:00Z") / 1000;
    expect(rollupRequest(fromS + 3600, toS + 7200)).toBe(rollupRequest(fromS, toS));
    expect(rollupRequest(fromS + 86_400, toS + 86_400)).not.toBe(rollupRequest(fromS, toS));
    expect(rollupRequest(fromS, toS, ["b", "a"])).toBe(rollupRequest(fromS, toS, ["a", "b"]));
    expect(rollupRequest(fromS, toS, ["a"])).not.toBe(rollupRequest(fromS, toS));
  });

  it("audit --rollups finds a wrong daily rollup and --fix recomputes it from the raw readings", async () => {
    const [stored] = await db.series(
      `SELECT * FROM "rollup_day" WHERE "tz" = 'Europe/Berlin' AND "device_id" = 'hybrid-site-01' AND "measurement" = 'total_solar_energy' AND time >= '2026-03-29T00:00:00+01:00' LIMIT 1`,
    );
    const columns = stored?.columns ?? [];
    const row = stored?.values[0] ?? [];
    // the same point, its increase changed: the same tags, the same month and year fields (a
    // solar point's kwp and kwh_per_kwp stay as they are: a point's fields merge)
    const fields = ["time", "increase", "month", "year", "kwp", "kwh_per_kwp"];
    const tags = columns
      .map((c, i) => [c, row[i]] as const)
      .filter(([c]) => !fields.includes(c))
      .map(([c, v]) => `${c}=${String(v).replaceAll(" ", "\\ ")}`)
      .join(",");
    const field = (c: string) => JSON.stringify(row[columns.indexOf(c)]);
    const res = await fetch(`${db.rawUrl}/write?db=${db.bucket}&precision=s`, {
      method: "POST",
      body: `rollup_day,${tags} increase=12345,month=${field("month")},year=${field("year")} ${Number(row[0])}`,
    });
    expect(res.status).toBe(204);

    const found = await audit();
    expect(found.code).toBe(1);
    expect(found.result.mismatches).toEqual([
      expect.objectContaining({
        deviceId: "hybrid-site-01",
        zone: "Europe/Berlin",
        measurement: "total_solar_energy",
        stored: 12345,
      }),
    ]);
    const fixed = await audit("--fix");
    expect([fixed.code, fixed.result.fixedDays, fixed.result.remaining]).toEqual([0, 1, 0]);
    expect((await audit()).result.mismatches).toEqual([]);
  });
});
