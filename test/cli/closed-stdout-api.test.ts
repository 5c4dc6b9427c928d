/**
 * `energy-etl <command> | head -1` for the commands that talk to the API and InfluxDB (#35; the
 * offline ones: closed-stdout.test.ts): the built CLI as a child process against one simulator
 * on loopback and the run's influxd, its stdout closed after its first line, 20 runs a command
 * (5 of a second form of one: `sync` beside `sync -o -`, `--json` beside the table), 8 at a
 * time. Every run exits 0 with no stack trace on stderr, and a command that started a process of
 * its own (demo's simulator) leaves none behind.
 *
 * Each run starts from its own copy of a state database that a backfill and a sync filled, so
 * that runs of one command do not wait on each other's jobs and audit finds the days whole.
 * `run` is not here: it prints nothing on stdout (its logs go to stderr, its status to /healthz),
 * so a reader of its stdout never sees a line to close after; the last test shows it prints none
 * (and that `status` beside it names it: its pid and host).
 * `simulate`, the other server, stops on SIGTERM sent once its first line is read.
 */
import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import type { Simulator } from "../../src/simulator/server.js";
import { DEFAULT_SIM_USERS } from "../../src/util/demo-defaults.js";
import { dropTestDb } from "../support/bad-data.js";
import { builtCli, killCliChildren, spawnCli } from "../support/cli-child.js";
import {
  type HeadOneOptions,
  type HeadOneRun,
  headOne,
  inBatches,
  looksLikeStackTrace,
} from "../support/head-one.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { freePort } from "../support/influxd.js";
import { pipelineEnv } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";
import { tempDir } from "../support/temp-dir.js";
import { waitUntil } from "../support/wait.js";

const RUNS = 20;
const PARALLEL = 8;
const SITE = "hybrid-site-01";
const dir = tempDir("energy-etl-closed-stdout-api-");
const seedDb = join(dir, "seed", "state.db");

/** A command of the test: its arguments and environment for run `i` in `runDir`. */
interface Case {
  readonly name: string;
  readonly args: (runDir: string) => readonly string[];
  readonly env?: (i: number) => Record<string, string>;
  readonly options?: HeadOneOptions;
  /** Runs: 20 for each command; fewer for a second form of one (CI's time). */
  readonly runs?: number;
}

/** Runs of a second form of a command already run 20 times. */
const VARIANT_RUNS = 5;

const CASES: readonly Case[] = [
  { name: "devices", args: () => ["devices"] },
  { name: "devices --json", args: () => ["devices", "--json"], runs: VARIANT_RUNS },
  { name: "resources", args: () => ["resources", SITE] },
  { name: "values", args: () => ["values", SITE, "all_data"] },
  { name: "sync", args: () => ["sync", "--device", SITE], runs: VARIANT_RUNS },
  { name: "sync -o -", args: () => ["sync", "--device", SITE, "-o", "-"] },
  {
    name: "backfill",
    args: () => ["backfill", "--device", SITE, "--from", "-2d"],
    runs: VARIANT_RUNS,
  },
  { name: "backfill -o -", args: () => ["backfill", "--device", SITE, "--from", "-2d", "-o", "-"] },
  {
    name: "backfill --dry-run",
    args: () => ["backfill", "--all", "--from", "-2d", "--dry-run"],
    runs: VARIANT_RUNS,
  },
  { name: "audit", args: () => ["audit", "--device", SITE, "--from", "-1d"] },
  {
    name: "audit --json",
    args: () => ["audit", "--device", SITE, "--from", "-1d", "--json"],
    runs: VARIANT_RUNS,
  },
  {
    name: "audit --rollups",
    args: () => ["audit", "--rollups", "--device", SITE, "--from", "-1d"],
  },
  { name: "rollups", args: () => ["rollups", "--device", SITE, "--from", "-1d"] },
  {
    name: "rollups --json",
    args: () => ["rollups", "--device", SITE, "--from", "-1d", "--json"],
    runs: VARIANT_RUNS,
  },
  { name: "doctor", args: () => ["doctor"] },
  { name: "dead-letters --retry", args: () => ["dead-letters", "--retry"] },
  {
    name: "set-password",
    args: () => ["set-password"],
    // a user of its own for each run: a one-time password is used up
    env: (i) => ({
      ENERGY_API_USER: `new-user-${i}`,
      ENERGY_API_OTP: `otp-${i}`,
      ENERGY_API_PASSWORD: `a-new-password-${i}`,
    }),
  },
  { name: "init", args: (runDir) => ["init", "--env-path", join(runDir, "energy.env")] },
  {
    // a server: it stops on EPIPE when a startup line finds the pipe closed, else keeps serving
    // (as `simulate | head -1` in a shell does) until SIGTERM, sent after the first line
    name: "simulate",
    args: () => ["simulate", "--port", "0", "--host", "127.0.0.1"],
    options: { signalAfterFirstLine: "SIGTERM" },
  },
  // its files go to demo/ next to STATE_DB (the run's own); line protocol without INFLUX_URL
  { name: "demo", args: () => ["demo"], env: () => ({ INFLUX_URL: "" }) },
];

describe("API and InfluxDB commands with stdout closed after the first line (| head -1)", () => {
  let sim: Simulator;
  let db: TestInfluxDb;
  let env: Record<string, string>;

  beforeAll(async () => {
    const users = Array.from({ length: RUNS }, (_, i) => ({
      user: `new-user-${i}`,
      otp: `otp-${i}`,
    }));
    sim = await startTestSimulator({ resolutionS: 900, users: [...DEFAULT_SIM_USERS, ...users] });
    db = await createTestInfluxDb("closed_stdout_api");
    env = pipelineEnv(sim, db, seedDb, { LOG_LEVEL: "warn", LOG_FORMAT: "json" });
    mkdirSync(join(dir, "seed"));
    // the state every run copies: the last 2 days backfilled and synced, rollups written
    for (const args of [
      ["backfill", "--device", SITE, "--from", "-2d"],
      ["sync", "--device", SITE],
    ]) {
      const child = spawnCli(args, { ...env, SYNC_START: "-2d" });
      const exit = await child.wait(60_000, args.join(" "));
      expect({ args, code: exit.code, stderr: child.stderr() }).toEqual({
        args,
        code: 0,
        stderr: "",
      });
    }
  }, 120_000);
  afterAll(async () => {
    await sim.close();
    await dropTestDb(db);
  });
  afterEach(() => killCliChildren());

  /** Run `i` of `c` in a directory of its own with a copy of the seeded state. */
  function runOnce(c: Case, i: number): Promise<HeadOneRun> {
    const runDir = join(dir, `${c.name.replace(/\W+/g, "-")}-${i}`);
    mkdirSync(runDir);
    const stateDb = join(runDir, "state.db");
    copyFileSync(seedDb, stateDb);
    if (existsSync(`${seedDb}-wal`)) copyFileSync(`${seedDb}-wal`, `${stateDb}-wal`);
    const runEnv = { ...process.env, ...env, STATE_DB: stateDb, ...c.env?.(i) };
    return headOne(builtCli(), c.args(runDir), runEnv, runDir, c.options);
  }

  it.each(CASES.map((c) => [c.name, c] as const))(
    "%s: exits 0 with no stack trace, 20 runs (5 for a second form)",
    async (_name, c) => {
      const runs = c.runs ?? RUNS;
      const results = await inBatches(runs, PARALLEL, (i) => runOnce(c, i));
      expect(results).toHaveLength(runs);
      for (const { code, signal, stderr, seen } of results) {
        expect({ code, signal, stackTrace: looksLikeStackTrace(stderr), stderr }).toEqual({
          code: 0,
          signal: null,
          stackTrace: false,
          stderr: expect.not.stringMatching(/"level":(50|60)/),
        });
        expect(seen).toMatch(/\n/);
      }
      if (c.name !== "demo") return;
      // the demo's simulator (its first line names its pid) does not outlive the demo
      const pids = results.map(({ seen }) => Number(/\(pid (\d+)\)/.exec(seen)?.[1]));
      expect(pids.every((pid) => pid > 0)).toBe(true);
      const gone = await waitUntil(() => pids.every((pid) => !alive(pid)), "demo simulators", {
        timeoutMs: 10_000,
        intervalMs: 50,
      });
      expect({ gone, alive: pids.filter(alive) }).toEqual({ gone: true, alive: [] });
    },
    120_000,
  );

  it("run prints nothing on stdout (its logs go to stderr): no line for a reader to close after; status names it, pid and host", async () => {
    const runDir = join(dir, "run");
    mkdirSync(runDir);
    const stateDb = join(runDir, "state.db");
    copyFileSync(seedDb, stateDb);
    const child = spawnCli(["run"], {
      ...env,
      STATE_DB: stateDb,
      HTTP_HOST: "127.0.0.1",
      HTTP_PORT: String(await freePort()),
      LOG_LEVEL: "info",
    });
    await child.waitForLog("sync finished", 30_000);
    // and status, beside it, names it as the service holding the state (#35)
    const status = spawnCli(["status"], { ...env, STATE_DB: stateDb });
    expect((await status.wait(30_000, "status")).code).toBe(0);
    expect(status.stdout()).toMatch(
      new RegExp(
        `^service: energy-etl run holds the state \\(pid ${child.pid} on ${hostname()}, since \\S+, heartbeat \\d+ s ago\\)$`,
        "m",
      ),
    );
    child.child.kill("SIGTERM");
    const exit = await child.wait(30_000, "run after SIGTERM");
    expect({ code: exit.code, stdout: child.stdout() }).toEqual({ code: 0, stdout: "" });
  });
});

/** Whether a process with `pid` still runs. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
