import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { builtCli } from "../support/cli-child.js";
import { NO_ENV_DIR } from "../support/cli-io.js";
import { tempDir } from "../support/temp-dir.js";

/** Loads every module file it is given, under `--import record-loads.mjs`: the hook's record. */
const RECORDER = resolve("test/support/record-loads.mjs");

/** What must not load for a command that neither talks to the API or InfluxDB nor serves. */
const HEAVY: readonly (readonly [string, RegExp])[] = [
  ["got", /\/node_modules\/got\//],
  ["the InfluxDB client", /\/node_modules\/@influxdata\/influxdb-client\//],
  ["prom-client", /\/node_modules\/prom-client\//],
  ["the simulator", /\/dist\/simulator\//],
];

/** The module URLs `node [node args] …args` loads, and its exit status and output. */
function loadsOf(nodeArgs: readonly string[], env: Record<string, string> = {}) {
  const record = join(tempDir("energy-etl-loads-"), "loads.txt");
  const run = spawnSync(process.execPath, ["--import", RECORDER, ...nodeArgs], {
    cwd: NO_ENV_DIR,
    env: { ...process.env, LOG_LEVEL: "silent", ...env, RECORD_LOADS: record },
    encoding: "utf8",
    timeout: 30_000,
  });
  const loads = readFileSync(record, "utf8").split("\n").filter(Boolean);
  return { status: run.status, stdout: run.stdout, stderr: run.stderr, loads };
}

/** The names of HEAVY among `loads`. */
const heavyIn = (loads: readonly string[]): string[] =>
  HEAVY.filter(([, pattern]) => loads.some((url) => pattern.test(url))).map(([name]) => name);

describe("commands load what they use (#41)", () => {
  let cli = "";
  beforeAll(() => {
    cli = builtCli();
  });

  it("the recorder sees each heavy part when a process does load it", () => {
    // the oracle of the check below: without it, a recorder that saw nothing would pass it
    const script =
      'await import("got"); await import("@influxdata/influxdb-client");' +
      'await import("prom-client"); await import(process.env.SIM_URL);';
    const sim = new URL(`file://${resolve("dist/simulator/server.js")}`).href;
    const { status, loads } = loadsOf(["--input-type=module", "-e", script], { SIM_URL: sim });
    expect(status).toBe(0);
    expect(heavyIn(loads)).toEqual(HEAVY.map(([name]) => name));
  });

  it.each([
    [["--help"], /Usage: energy-etl/],
    [["--version"], /^0\.1\.0\n$/],
    [["config"], /"api"/],
    [["decode", "e_03_07_04_000_total_solar_energy"], /total_solar_energy/],
    [["simulate", "--help"], /--error-rate/],
    [["run", "--help"], /SYNC_CRON/],
  ])("%j loads none of got, the InfluxDB client, prom-client, the simulator", (args, out) => {
    const { status, stdout, stderr, loads } = loadsOf([cli, ...args]);
    expect({ status, stderr }).toEqual({ status: 0, stderr: "" });
    expect(stdout).toMatch(out);
    expect(loads).toContain(new URL(`file://${cli}`).href);
    expect(heavyIn(loads)).toEqual([]);
  });

  // the start-up goal (#41): --help and --version take about what `node -e 0` takes
  const NOT_AT_START: readonly (readonly [string, RegExp])[] = [
    ...HEAVY,
    ["zod", /\/node_modules\/zod\//],
    ["better-sqlite3", /\/node_modules\/better-sqlite3\//],
    ["pino", /\/node_modules\/pino\//],
    ["a command's module", /\/dist\/cli\/commands\//],
  ];
  const startIn = (loads: readonly string[]): string[] =>
    NOT_AT_START.filter(([, pattern]) => loads.some((url) => pattern.test(url))).map(([n]) => n);

  it("the recorder sees zod, better-sqlite3, pino and a command's module when they load", () => {
    const command = new URL(`file://${resolve("dist/cli/commands/decode.js")}`).href;
    const script =
      'await import("zod"); await import("better-sqlite3"); await import("pino");' +
      "await import(process.env.COMMAND_URL);";
    const loads = loadsOf(["--input-type=module", "-e", script], { COMMAND_URL: command });
    expect(loads.status).toBe(0);
    expect(startIn(loads.loads)).toEqual(NOT_AT_START.slice(HEAVY.length).map(([name]) => name));
  });

  it.each([
    [["--help"], /^Usage: energy-etl \[options\] \[command\]\n/],
    [["-h"], /\n {2}--api-url <value> +overrides ENERGY_API_URL/],
    [["help"], /\n {2}backfill \[options\] +fetch the history/],
    [["--version"], /^0\.1\.0\n$/],
    [["-V"], /^0\.1\.0\n$/],
  ])("%j loads no command's module, nor zod, better-sqlite3 or pino", (args, out) => {
    const { status, stdout, stderr, loads } = loadsOf([cli, ...args]);
    expect({ status, stderr }).toEqual({ status: 0, stderr: "" });
    expect(stdout).toMatch(out);
    expect(loads).toContain(new URL(`file://${cli}`).href);
    expect(startIn(loads)).toEqual([]);
  });

  it("status on a state file loads none of them either", () => {
    const db = join(tempDir("energy-etl-lazy-status-"), "state.db");
    expect(loadsOf([cli, "migrate"], { STATE_DB: db }).status).toBe(0);
    const { status, stdout, stderr, loads } = loadsOf([cli, "status"], { STATE_DB: db });
    expect({ status, stderr }).toEqual({ status: 0, stderr: "" });
    expect(stdout).toContain("no device synced yet");
    expect(loads.some((url) => url.endsWith("/dist/cli/commands/status.js"))).toBe(true);
    expect(heavyIn(loads)).toEqual([]);
  });
});
