/**
 * Commands that write points need somewhere to write them: without INFLUX_URL, OUTPUT_FILE or
 * --output they refuse (exit 2) before the state database is opened, so nothing moves. The built
 * CLI as a child process against the simulator over loopback.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { Simulator } from "../../src/simulator/server.js";
import { killCliChildren, spawnCli } from "../support/cli-child.js";
import { startTestSimulator } from "../support/simulator.js";

const NOWHERE =
  "energy-etl: error: nowhere to write the points: set INFLUX_URL (with INFLUX_TOKEN, " +
  "INFLUX_ORG, INFLUX_BUCKET), or OUTPUT_FILE for line protocol in a file (rotated at " +
  "OUTPUT_FILE_MAX_BYTES); sync and backfill also take --output FILE\n";
const DEVICE = "hybrid-site-01";
const EXIT_MS = 20_000;

/** Every row of every table of a state file, as text (sorted): what "nothing moved" compares. */
function dumpState(file: string): string {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .pluck()
      .all()
      .map(String);
    return tables
      .flatMap((table) =>
        db
          .prepare(`SELECT * FROM "${table}"`)
          .all()
          .map((row) => `${table}: ${JSON.stringify(row)}`)
          .sort(),
      )
      .join("\n");
  } finally {
    db.close();
  }
}

describe("sync and backfill without anywhere to write", () => {
  let sim: Simulator;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    sim = await startTestSimulator({ resolutionS: 900 });
  });
  afterAll(() => sim.close());
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "energy-etl-target-"));
    env = {
      ENERGY_API_URL: sim.url,
      ENERGY_API_KEY: sim.apiKey,
      ENERGY_API_USER: "demo",
      ENERGY_API_PASSWORD: "demo-password",
      INFLUX_URL: "",
      OUTPUT_FILE: "",
      STATE_DB: join(dir, "state.db"),
      SYNC_START: "PT2H",
      API_RATE_LIMIT: "1000",
      LOG_LEVEL: "info",
    };
  });
  afterEach(async () => {
    await killCliChildren();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs the CLI in `dir` as its working directory; resolves with its exit and output. */
  async function run(args: string[]) {
    const cli = spawnCli(args, env, { cwd: dir });
    const { code } = await cli.wait(EXIT_MS, `energy-etl ${args.join(" ")}`);
    return { code, out: cli.stdout(), err: cli.stderr() };
  }

  it.each([
    ["sync", ["sync"]],
    ["backfill", ["backfill", "--device", DEVICE, "--from", "-1d"]],
    ["run", ["run"]],
  ])("%s refuses with exit 2 and creates no state file, no line-protocol file", async (_, args) => {
    const requests = sim.count();
    expect(await run(args)).toEqual({ code: 2, out: "", err: NOWHERE });
    expect(existsSync(env.STATE_DB ?? "")).toBe(false);
    expect(existsSync(join(dir, "data"))).toBe(false);
    expect(sim.count()).toBe(requests);
  });

  it("with a state file already there, its cursors, jobs and runs are unchanged", async () => {
    const first = await run(["sync", "--device", DEVICE, "--output", join(dir, "first.lp")]);
    expect(first.code).toBe(0);
    const state = env.STATE_DB ?? "";
    const before = dumpState(state);
    expect(before).toMatch(/^cursors: /m);
    expect(before).toMatch(/^runs: /m);

    expect(await run(["sync"])).toEqual({ code: 2, out: "", err: NOWHERE });
    expect(await run(["backfill", "--all", "--from", "-1d"])).toEqual({
      code: 2,
      out: "",
      err: NOWHERE,
    });
    expect(dumpState(state)).toBe(before);
  });

  it("OUTPUT_FILE is somewhere: sync writes there", async () => {
    const file = join(dir, "points.lp");
    env.OUTPUT_FILE = file;
    const synced = await run(["sync", "--device", DEVICE]);
    expect(synced.code).toBe(0);
    expect(synced.out).toMatch(/sync ok: 1 device, [1-9]\d* points/);
    expect(existsSync(file)).toBe(true);
  });

  it.each([
    ["OUTPUT_FILE", ["sync"]],
    ["--output", ["backfill", "--device", DEVICE, "--from", "-1d", "--output"]],
  ])("%s naming a directory: exit 2 before any request, no state file", async (how, args) => {
    const target = join(dir, "out");
    mkdirSync(target);
    if (how === "OUTPUT_FILE") env.OUTPUT_FILE = target;
    const argv = how === "OUTPUT_FILE" ? args : [...args, target];
    const requests = sim.count();
    expect(await run(argv)).toEqual({
      code: 2,
      out: "",
      err: `energy-etl: error: ${how} ${target}: is a directory: name a file (in it, or elsewhere)\n`,
    });
    expect(sim.count()).toBe(requests);
    expect(existsSync(env.STATE_DB ?? "")).toBe(false);
  });

  it("OUTPUT_FILE under a file (not a directory): exit 2 before any request, saying why", async () => {
    const file = join(dir, "plain");
    writeFileSync(file, "");
    env.OUTPUT_FILE = join(file, "points.lp");
    const requests = sim.count();
    const done = await run(["sync"]);
    expect(done.code).toBe(2);
    expect(done.err).toContain(
      `energy-etl: error: OUTPUT_FILE ${env.OUTPUT_FILE}: cannot be written (`,
    );
    expect(sim.count()).toBe(requests);
  });
});
