/**
 * Inputs at the edges (#33, item 8): every time, range, cron, duration, name, host, secret and
 * config-file value a user can get wrong is refused by the built CLI as a child process with
 * exit 2 and ONE line naming the flag or setting (a flag's usage error adds only where its help
 * is, `(see energy-etl backfill --help)`), no stack trace, and nothing requested or written: the
 * API is a counting simulator, InfluxDB a counting stand-in, and each case's STATE_DB must not
 * exist afterwards. The cases run in parallel, once, in beforeAll; each test reads its own.
 */
import { existsSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Simulator } from "../../src/simulator/server.js";
import { openDatabase } from "../../src/state/database.js";
import { listMigrations, MIGRATIONS_DIR } from "../../src/state/migrator.js";
import { killCliChildren, spawnCli } from "../support/cli-child.js";
import { startTestSimulator } from "../support/simulator.js";
import { tempDir } from "../support/temp-dir.js";

const EXIT_MS = 20_000;
const PARALLEL = 8;
const dir = tempDir("energy-etl-input-bounds-");
const EARLIEST = "1970-01-01T00:00:00Z, the earliest time energy-etl takes";

/** A JSON config file of `text` in the test's directory. */
function configFile(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}
const protoFile = configFile("proto.json", '{"__proto__": {"api": {"concurrency": 9}}}');
const nestedProtoFile = configFile("nested-proto.json", '{"api": {"__proto__": {"x": 1}}}');
const stringNumberFile = configFile("string-number.json", '{"api": {"concurrency": "4"}}');
const stringBoolFile = configFile("string-bool.json", '{"influx": {"gzip": "true"}}');
/** A state database with a migration this energy-etl does not have (made in beforeAll). */
const newerDb = join(dir, "newer", "state.db");
const lastMigration = listMigrations(MIGRATIONS_DIR).at(-1)?.file ?? "none";
const newerSchema =
  `state database ${newerDb} (STATE_DB) has a newer schema than this energy-etl: it has ` +
  `migration(s) 099_future, this one knows up to ${lastMigration}; use the energy-etl that ` +
  "wrote it (or a newer one), or point STATE_DB at another file";
/** A secret with a line break, as an env file or a paste can make it. */
const BROKEN_SECRET = "s3cret-7f3a\r\nX-Injected: 1";

const setting = (env: string, name: string, from: string, problem: string): string =>
  `invalid configuration: ${env} (${name}, from ${from}): ${problem}`;
const fromEnv = (env: string, name: string, problem: string): string =>
  setting(env, name, `environment ${env}`, problem);

interface Case {
  /** The item of #33 it belongs to, and what it is. */
  readonly name: string;
  readonly args: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  /** The one line after `energy-etl: error: `. */
  readonly line: string | RegExp;
  /** The command whose help the line points at (a flag's usage error), if it does. */
  readonly help?: string;
  /** Text that must not be on stderr (a secret). */
  readonly hidden?: string;
  /** STATE_DB of the case when it is not its own fresh path. */
  readonly stateDb?: string;
}

const CASES: readonly Case[] = [
  // 1: times and ranges
  {
    name: "1 backfill --from 0000-01-01",
    args: ["backfill", "--all", "--from", "0000-01-01", "--dry-run"],
    line: `--from 0000-01-01 is before ${EARLIEST}`,
    help: "backfill",
  },
  {
    name: "1 backfill --from 1969-12-31",
    args: ["backfill", "--device", "hybrid-site-01", "--from", "1969-12-31", "--dry-run"],
    line: `--from 1969-12-31 is before ${EARLIEST}`,
    help: "backfill",
  },
  {
    // before 1970 until 2070; a range of more than 10 years after that: refused either way
    name: "1 backfill --from P100Y (the dry run that planned 1,163,349 requests)",
    args: ["backfill", "--all", "--from", "P100Y", "--dry-run"],
    line: /^--from P100Y \(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\) is before 1970-01-01T00:00:00Z, the earliest time energy-etl takes$|^--from .* is (99\.9|100\.0) years, more than 10: give a shorter range, or add --yes to go ahead$/,
    help: "backfill",
  },
  {
    name: "1 backfill --from P20Y: more than 10 years without --yes",
    args: ["backfill", "--all", "--from", "P20Y", "--dry-run"],
    line: /^--from \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ to --to \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ is 20\.0 years, more than 10: give a shorter range, or add --yes to go ahead$/,
    help: "backfill",
  },
  {
    name: "1 backfill --to far after now",
    args: ["backfill", "--all", "--from", "-1d", "--to", "2999-01-01", "--dry-run"],
    line:
      "--to 2999-01-01 is more than a day after now: there is no data after now (a --to up to " +
      "a day ahead stops at now)",
    help: "backfill",
  },
  {
    name: "1 audit --from 1969-12-31 (printed nothing for 60 s)",
    args: ["audit", "--from", "1969-12-31"],
    line: `--from 1969-12-31 is before ${EARLIEST}`,
    help: "audit",
  },
  {
    name: "1 audit --from 0000-01-01 (failed at the API with exit 1)",
    args: ["audit", "--from", "0000-01-01"],
    line: `--from 0000-01-01 is before ${EARLIEST}`,
    help: "audit",
  },
  {
    name: "1 audit over 20 years without --yes",
    args: ["audit", "--from", "2000-01-01", "--to", "2020-01-01"],
    line:
      "--from 2000-01-01T00:00:00Z to --to 2020-01-01T00:00:00Z is 20.0 years, more than 10: " +
      "give a shorter range, or add --yes to go ahead",
    help: "audit",
  },
  {
    name: "1 rollups --from in the future",
    args: ["rollups", "--from", "2999-01-01"],
    line: "--from 2999-01-01 is in the future: there is no data after now",
    help: "rollups",
  },
  {
    name: "1 SYNC_START before 1970",
    args: ["sync"],
    env: { SYNC_START: "1969-12-31" },
    line: fromEnv(
      "SYNC_START",
      "sync.start",
      "must not be before 1970-01-01T00:00:00Z (1969-12-31T00:00:00Z)",
    ),
  },
  {
    name: "1 SYNC_START P100Y",
    args: ["sync"],
    env: { SYNC_START: "P100Y" },
    line: fromEnv("SYNC_START", "sync.start", "must be at most P10Y before now, not P100Y"),
  },
  // 2: empty names
  {
    name: "2 sync --device '' (was exit 1)",
    args: ["sync", "--device", ""],
    line: "--device must not be empty: give a device id",
    help: "sync",
  },
  {
    name: "2 status --state-db '' (used the default)",
    args: ["status", "--state-db", ""],
    line: setting(
      "STATE_DB",
      "state.db",
      "flag --state-db",
      "must not be empty (leave the flag out for the default)",
    ),
  },
  {
    name: "2 sync --influx-url ''",
    args: ["sync", "--influx-url", ""],
    line: setting(
      "INFLUX_URL",
      "influx.url",
      "flag --influx-url",
      "must not be empty (leave the flag out for the default)",
    ),
  },
  {
    name: "2 STATE_DB of spaces",
    args: ["status"],
    env: { STATE_DB: "   " },
    line: fromEnv("STATE_DB", "state.db", "must not be empty"),
  },
  {
    name: "2 backfill --output ''",
    args: ["backfill", "--all", "--from", "-1d", "--output", ""],
    line: "--output must not be empty: give a file, or - for stdout",
    help: "backfill",
  },
  {
    name: "2 backfill --values ','",
    args: ["backfill", "--all", "--from", "-1d", "--values", ","],
    line: "--values must name a value id",
    help: "backfill",
  },
  {
    name: "2 --config ''",
    args: ["--config", "", "sync"],
    line: "--config must not be empty: give a JSON config file",
  },
  {
    name: "2 resources ''",
    args: ["resources", ""],
    line: "the device id must not be empty",
    help: "resources",
  },
  {
    name: "2 dead-letters --device ''",
    args: ["dead-letters", "--device", ""],
    line: "--device must not be empty: give a device id",
    help: "dead-letters",
  },
  // 3: the config file
  {
    name: "3 a __proto__ key",
    args: ["--config", protoFile, "sync"],
    line: `config file ${protoFile}: "__proto__" is not a setting (a key that names an object's prototype)`,
  },
  {
    name: "3 a __proto__ key in a section",
    args: ["--config", nestedProtoFile, "sync"],
    line: `config file ${nestedProtoFile}: "api.__proto__" is not a setting (a key that names an object's prototype)`,
  },
  {
    name: '3 "4" where a number belongs',
    args: ["--config", stringNumberFile, "sync"],
    line: setting(
      "API_CONCURRENCY",
      "api.concurrency",
      `config file ${stringNumberFile}`,
      'must be a JSON number, not a string (write 4, not "4")',
    ),
  },
  {
    name: '3 "true" where a boolean belongs',
    args: ["--config", stringBoolFile, "sync"],
    line: setting(
      "INFLUX_GZIP",
      "influx.gzip",
      `config file ${stringBoolFile}`,
      'must be a JSON boolean, not a string (write true, not "true")',
    ),
  },
  // 4: SYNC_CRON, with the command that schedules (it would serve and tick if it started)
  {
    name: "4 SYNC_CRON every second",
    args: ["run"],
    env: { SYNC_CRON: "* * * * * *" },
    line: fromEnv(
      "SYNC_CRON",
      "sync.cron",
      "has 6 fields: a seconds field is not taken (a sync runs at most once a minute); give 5: " +
        "minute hour day-of-month month day-of-week, such as */5 * * * *",
    ),
  },
  {
    name: "4 SYNC_CRON */1000",
    args: ["run"],
    env: { SYNC_CRON: "*/1000 * * * *" },
    line: fromEnv(
      "SYNC_CRON",
      "sync.cron",
      '"*/1000" in the minute field: the step must be from 1 to 59',
    ),
  },
  {
    name: "4 SYNC_CRON 5-1",
    args: ["run", "--sync-cron", "5-1 * * * *"],
    line: setting(
      "SYNC_CRON",
      "sync.cron",
      "flag --sync-cron",
      '"5-1" in the minute field is a range that goes down: write it from low to high',
    ),
  },
  {
    name: "4 SYNC_CRON hour 24",
    args: ["run"],
    env: { SYNC_CRON: "0 24 * * *" },
    line: fromEnv("SYNC_CRON", "sync.cron", '"24" in the hour field is outside 0 to 23'),
  },
  // 5: durations
  ...(
    [
      ["SYNC_LOOKBACK", "sync.lookback", "P1000000Y", "PT0S to P30D"],
      ["LATE_DATA_HORIZON", "sync.lateDataHorizon", "PT0S", "PT1H to P1Y"],
      ["CATALOG_REFRESH", "sync.catalogRefresh", "P1000000Y", "PT1M to P7D"],
      ["SILENT_AFTER", "sync.silentAfter", "PT0S", "PT1M to P30D"],
      ["FAILURE_BACKOFF_MAX", "failures.backoffMax", "P1000000Y", "PT0S to P7D"],
      ["API_RETRY_AFTER_MAX", "api.retryAfterMax", "P1000000Y", "PT0S to P1D"],
      ["READY_MAX_LAG", "service.readyMaxLag", "P1000000Y", "PT1M to P30D"],
    ] as const
  ).map(
    ([env, name, value, bounds]): Case => ({
      name: `5 ${env}=${value}`,
      args: ["sync"],
      env: { [env]: value },
      line: fromEnv(env, name, `must be from ${bounds}, not ${value}`),
    }),
  ),
  // 6: HTTP_HOST
  {
    name: "6 HTTP_HOST 'a b' (config)",
    args: ["config"],
    env: { HTTP_HOST: "a b" },
    line: fromEnv(
      "HTTP_HOST",
      "http.host",
      "must be a host name or an IP address such as 127.0.0.1, 0.0.0.0 or ::1",
    ),
  },
  {
    name: "6 run --http-host 'a b'",
    args: ["run", "--http-host", "a b"],
    line: setting(
      "HTTP_HOST",
      "http.host",
      "flag --http-host",
      "must be a host name or an IP address such as 127.0.0.1, 0.0.0.0 or ::1",
    ),
  },
  // 7: secrets and header values
  {
    name: "7 INFLUX_TOKEN with CR/LF (was retried as a network error)",
    args: ["sync"],
    env: { INFLUX_TOKEN: BROKEN_SECRET },
    line: fromEnv(
      "INFLUX_TOKEN",
      "influx.token",
      "holds a control character (a line break, a tab or the like); the value is not shown",
    ),
    hidden: "s3cret-7f3a",
  },
  {
    name: "7 ENERGY_API_KEY with a line break",
    args: ["devices"],
    env: { ENERGY_API_KEY: BROKEN_SECRET },
    line: fromEnv(
      "ENERGY_API_KEY",
      "api.key",
      "holds a control character (a line break, a tab or the like); the value is not shown",
    ),
    hidden: "s3cret-7f3a",
  },
  {
    name: "7 ENERGY_API_PASSWORD with a control character",
    args: ["devices"],
    env: { ENERGY_API_PASSWORD: "pa55\u0007word-e1" },
    line: fromEnv(
      "ENERGY_API_PASSWORD",
      "api.password",
      "holds a control character (a line break, a tab or the like); the value is not shown",
    ),
    hidden: "pa55",
  },
  {
    name: "7 INFLUX_TOKEN beyond Latin-1",
    args: ["sync"],
    env: { INFLUX_TOKEN: "t0ken-\u20ac-9b" },
    line: fromEnv(
      "INFLUX_TOKEN",
      "influx.token",
      "holds a character an HTTP header cannot carry (a line break, a control character or " +
        "one beyond Latin-1); the value is not shown",
    ),
    hidden: "t0ken",
  },
  // 8: a state database of a newer energy-etl
  { name: "8 status, newer schema", args: ["status"], line: newerSchema, stateDb: newerDb },
  {
    name: "8 sync, newer schema",
    args: ["sync", "--output", "-"],
    line: newerSchema,
    stateDb: newerDb,
  },
];

interface Outcome {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly stateDb: string;
}

/** An HTTP server that counts what reaches it and answers 503: InfluxDB that must not be asked. */
async function countingServer(): Promise<{ server: Server; url: string; count: () => number }> {
  let requests = 0;
  const server = createServer((_req, res) => {
    requests += 1;
    res.writeHead(503).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}`, count: () => requests };
}

/** Runs `work` over `items`, at most `parallel` at a time, keeping the order of the results. */
async function pooled<T, R>(
  items: readonly T[],
  parallel: number,
  work: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < items.length; i = next++) {
      const item = items[i];
      if (item !== undefined) results[i] = await work(item, i);
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return results;
}

describe("inputs at the edges: exit 2, one line, nothing requested or written", () => {
  let sim: Simulator;
  let influx: Awaited<ReturnType<typeof countingServer>>;
  let outcomes: Outcome[] = [];

  beforeAll(async () => {
    sim = await startTestSimulator();
    influx = await countingServer();
    const { db } = openDatabase(newerDb);
    db.prepare("INSERT INTO schema_migrations VALUES (99, 'future', 'x')").run();
    db.close();
    const base = {
      ENERGY_API_URL: sim.url,
      ENERGY_API_KEY: sim.apiKey,
      ENERGY_API_USER: "demo",
      ENERGY_API_PASSWORD: "demo-password",
      INFLUX_URL: influx.url,
      INFLUX_TOKEN: "test-token",
      INFLUX_ORG: "test-org",
      HTTP_PORT: "0",
      API_RETRIES: "0",
      LOG_LEVEL: "warn",
    };
    outcomes = await pooled(CASES, PARALLEL, async (c, i) => {
      const stateDb = c.stateDb ?? join(dir, `case-${i}`, "state.db");
      const child = spawnCli(c.args, { ...base, STATE_DB: stateDb, ...c.env });
      const exit = await child.wait(EXIT_MS, c.name);
      return { code: exit.code, stdout: child.stdout(), stderr: child.stderr(), stateDb };
    });
  }, 120_000);
  afterAll(async () => {
    await killCliChildren();
    await sim.close();
    await new Promise<void>((resolve) => influx.server.close(() => resolve()));
  });

  it.each(CASES.map((c, i) => [c.name, c, i] as const))("%s", (_name, c, i) => {
    const outcome = outcomes[i];
    if (outcome === undefined) throw new Error(`${c.name} did not run`);
    const lines = outcome.stderr.split("\n");
    expect(lines.pop()).toBe("");
    const [first = "", ...rest] = lines;
    expect({ code: outcome.code, stdout: outcome.stdout, rest }).toEqual({
      code: 2,
      stdout: "",
      rest: c.help === undefined ? [] : [`(see energy-etl ${c.help} --help)`],
    });
    const prefix = "energy-etl: error: ";
    expect(first.startsWith(prefix)).toBe(true);
    const line = first.slice(prefix.length);
    if (typeof c.line === "string") expect(line).toBe(c.line);
    else expect(line).toMatch(c.line);
    if (c.hidden !== undefined) expect(outcome.stderr).not.toContain(c.hidden);
    if (c.stateDb === undefined) expect(existsSync(outcome.stateDb)).toBe(false);
  });

  it("none of them made a request, to the API or to InfluxDB", () => {
    expect(outcomes).toHaveLength(CASES.length);
    expect({ api: sim.count(), influx: influx.count() }).toEqual({ api: 0, influx: 0 });
  });

  it("--yes takes a range of more than 10 years (a dry run plans it)", async () => {
    const child = spawnCli(
      [
        "backfill",
        "--device",
        "hybrid-site-01",
        "--from",
        "2000-01-01",
        "--to",
        "2020-01-01",
      ].concat(["--dry-run", "--json", "--yes"]),
      {
        ENERGY_API_URL: sim.url,
        ENERGY_API_KEY: sim.apiKey,
        ENERGY_API_USER: "demo",
        ENERGY_API_PASSWORD: "demo-password",
        STATE_DB: join(dir, "yes", "state.db"),
        LOG_LEVEL: "warn",
      },
    );
    const exit = await child.wait(EXIT_MS, "backfill --yes --dry-run");
    expect({ code: exit.code, stderr: child.stderr() }).toEqual({ code: 0, stderr: "" });
    const plan = JSON.parse(child.stdout()) as { requests: number }[];
    // 20 years of 7-day windows: 1,044 per group of values
    expect(plan.length).toBeGreaterThan(0);
    for (const p of plan) expect(p.requests % 1044).toBe(0);
  });
});
