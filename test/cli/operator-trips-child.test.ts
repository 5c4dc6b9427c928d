/**
 * What an operator trips over (#18 items 4, 5, 6 and 8), as an operator meets it: the built CLI
 * as a child process, against the simulator over loopback, the test's influxd and a state file.
 * The same behaviours are tested in depth in process (test/pipeline/audit-unsynced.test.ts,
 * test/cli/dead-letters.test.ts, doctor.test.ts, errors.test.ts); here each is seen from outside.
 */
import { spawnSync } from "node:child_process";
import type { Simulator } from "../../src/simulator/server.js";
import { dropTestDb } from "../support/bad-data.js";
import { builtCli, killCliChildren, spawnCli } from "../support/cli-child.js";
import { NO_ENV_DIR } from "../support/cli-io.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { freePort } from "../support/influxd.js";
import { pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";

const SITE = "hybrid-site-01";
const EXIT_MS = 30_000;
const DAY_MS = 86_400_000;

describe("the CLI as a child process: what an operator trips over", () => {
  let sim: Simulator;
  /** A simulator that poisons about one row in 14 (a member sent as 1e400): dead letters. */
  let poisoning: Simulator;
  let db: TestInfluxDb;
  let poisonedDb: TestInfluxDb;
  let env: Record<string, string>;
  let poisonedEnv: Record<string, string>;
  /** What the first sync of each printed. */
  let synced: { code: number | null; out: string };
  let poisonedSync: { code: number | null; out: string };

  async function cli(args: string[], extra: Record<string, string> = {}, base = env) {
    const child = spawnCli(args, { ...base, ...extra });
    const exit = await child.wait(EXIT_MS, args.join(" "));
    return { code: exit.code, out: child.stdout(), err: child.stderr() };
  }

  beforeAll(async () => {
    sim = await startTestSimulator({ resolutionS: 900 });
    poisoning = await startTestSimulator({ resolutionS: 900, dataFaults: { poisonRate: 0.07 } });
    db = await createTestInfluxDb("operator_trips");
    poisonedDb = await createTestInfluxDb("operator_trips_poisoned");
    // from the UTC midnight two days back: the days audit lists are synced whole
    const twoDaysBack = new Date(Math.floor(Date.now() / DAY_MS - 2) * DAY_MS);
    env = pipelineEnv(sim, db, tempStateDb(), {
      SYNC_START: twoDaysBack.toISOString().slice(0, 10),
      LOG_LEVEL: "warn",
    });
    // SYNC_START in --from's grammar (item 8): -2d
    poisonedEnv = pipelineEnv(poisoning, poisonedDb, tempStateDb(), {
      SYNC_START: "-2d",
      LOG_LEVEL: "warn",
    });
    synced = await cli(["sync", "--device", SITE]);
    poisonedSync = await cli(["sync", "--device", SITE], {}, poisonedEnv);
  });
  afterAll(async () => {
    await sim.close();
    await poisoning.close();
    await dropTestDb(db);
    await dropTestDb(poisonedDb);
  });
  afterEach(() => killCliChildren());

  it("item 5: a sync names the dead letters it made (and SYNC_START=-2d, --from's grammar, is taken: item 8)", () => {
    expect(poisonedSync.code).toBe(0);
    expect(poisonedSync.out).toMatch(
      /^sync ok: 1 device, .*; \d+ new dead letters? \(see energy-etl dead-letters\)$/m,
    );
  });

  it("item 4: audit right after a sync finds no hole and exits 0; its days are the calendar days it lists", async () => {
    const { code, out, err } = await cli(["audit", "--device", SITE, "--from", "-2d", "--json"]);
    expect(synced.code).toBe(0);
    expect(synced.out).not.toContain("dead letter");
    expect({ code, err }).toEqual({ code: 0, err: "" });
    const report = JSON.parse(out) as { holes: unknown[]; days: number; from: string; to: string };
    expect(report.holes).toEqual([]);
    // -2d .. now: three calendar days (four if the audit ran across a UTC midnight)
    const dayOf = (iso: string) => Math.floor(Date.parse(iso) / DAY_MS);
    expect(report.days).toBe(dayOf(report.to) - dayOf(report.from) + 1);
    expect(report.days).toBeGreaterThanOrEqual(3);
  });

  it("item 5: dead-letters on a terminal 140 columns wide: no line longer, the member named", () => {
    // a pseudo-terminal (util-linux `script`) of 140 columns, as an operator's
    const command = `stty cols 140 rows 50; exec "${process.execPath}" "${builtCli()}" dead-letters`;
    const shown = spawnSync("script", ["-qec", command, "/dev/null"], {
      cwd: NO_ENV_DIR,
      env: { ...process.env, ...poisonedEnv, NO_COLOR: "1" },
      encoding: "utf8",
      timeout: EXIT_MS,
    });
    if (shown.error) {
      throw new Error(
        `util-linux script(1) is needed for a pseudo-terminal: ${shown.error.message}`,
      );
    }
    expect(shown.status).toBe(0);
    const lines = shown.stdout.replace(/\r/g, "").split("\n");
    expect(lines.filter((line) => [...line].length > 140)).toEqual([]);
    // the error's useful part, the member that was bad, not the request
    expect(shown.stdout).toMatch(/e_\w+:/);
    // a summary by default (#42), the rows a command away
    expect(shown.stdout).toContain("each one: energy-etl dead-letters --list");
  });

  it("item 6: doctor against influxd 1.6 directly (no /api/v2/write) writes on /write (v1)", async () => {
    // #42: what was "upgrade InfluxDB to 1.8" is now written through 1.x's own /write
    const { code, out } = await cli(["doctor"], { INFLUX_URL: db.rawUrl });
    expect(out).toMatch(/version 1\.[0-7]\.\S+, writes with \/write \(v1\)/);
    expect(out).toMatch(/ok {2,}InfluxDB write: .*v1/);
    expect(out).not.toMatch(/upgrade|no v2 write API|no bucket/);
    expect(code).toBe(0);
  });

  it("item 8: a refused connection to the API says to check ENERGY_API_URL", async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const { code, err } = await cli(["devices"], { ENERGY_API_URL: url });
    expect(code).toBe(1);
    expect(err).toContain(`check ENERGY_API_URL (is the API reachable at ${url}?)`);
  });

  it("item 8: backfill --dry-run writes nothing and says it writes nothing", async () => {
    const { code, out, err } = await cli(
      ["backfill", "--device", SITE, "--from", "-1d", "--dry-run"],
      { LOG_LEVEL: "info", INFLUX_URL: "", OUTPUT_FILE: "" },
    );
    expect(code).toBe(0);
    expect(out).toMatch(/\(dry run: nothing fetched\)/);
    expect(err).not.toMatch(/writing line protocol/);
  });
});
