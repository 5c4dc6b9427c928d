/**
 * No secret ever reaches an output: every CLI command, and its failure paths, run with known,
 * distinctive secrets (API key, password, one-time password, InfluxDB token, a 3-character
 * password, the userinfo of a URL) at LOG_LEVEL=trace, in-process and as child processes of the
 * built CLI, also against an upstream that echoes the request's headers in its error answers
 * (401 with `Authorization: Basic base64(user:password)`, 5xx with the Bearer token, 401 with the
 * one-time password's Base64). Neither the secrets nor their JSON-escaped, Base64 or Base64url
 * forms (Basic auth of user:password, Bearer of the one-time password) nor the access tokens the
 * API handed out may appear in stdout, stderr, a log line, an error message or the state DB
 * (every text of every table, and the raw bytes of its files). Every wait is bounded in count
 * and time.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { runCli } from "../../src/cli.js";
import type { FaultOptions, Simulator } from "../../src/simulator/server.js";
import { builtCli } from "../support/cli-child.js";
import { bufferIo, NO_ENV_DIR } from "../support/cli-io.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { freePort, influxql, TEST_INFLUX_TOKEN, TestInfluxd } from "../support/influxd.js";
import { tempStateDb } from "../support/pipeline.js";
import { collect, trackExit } from "../support/reliability-bounds.js";
import { startTestSimulator } from "../support/simulator.js";
import { tempDir } from "../support/temp-dir.js";
import { waitUntil, withDeadline } from "../support/wait.js";

const API_KEY = "SECRET-api-key-7f3a";
const OTP = "SECRET-otp-91c2";
const PASSWORD = "SECRET-password-4b8e";
const WRONG_PASSWORD = "SECRET-wrong-password-0d1e";
const WRONG_API_KEY = "SECRET-wrong-api-key-5e6f";
const WRONG_OTP = "SECRET-wrong-otp-8a9b";
const WRONG_INFLUX_TOKEN = "SECRET-wrong-influx-token-2c3d";
/** The test InfluxDB accepts only its own token: a secret all the same. */
const INFLUX_TOKEN = TEST_INFLUX_TOKEN;
const USERS = { "in-process": "secret-user-a", "child process": "secret-user-b" } as const;
type Mode = keyof typeof USERS;
/** A user whose password is 3 characters (a quote among them: JSON-escaped, it changes). */
const SHORT_USER = "secret-user-c";
const SHORT_PASSWORD = '~"^';
const WRONG_SHORT_PASSWORD = "!*~";
/** An InfluxDB 1.x user (auth-enabled, written on /write with HTTP Basic) and its passwords. */
const V1_USER = "secret-influx-v1-user";
const V1_PASSWORD = "SECRET-influx-v1-password-5a1b";
const WRONG_V1_PASSWORD = "SECRET-wrong-influx-v1-password-9c0d";
/** The userinfo of a URL given as ENERGY_API_URL or INFLUX_URL (refused). */
const URL_USER = "SECRET-url-user-6d4e";
const URL_PASSWORD = "SECRET-url-password-1f7a";

const DEVICE = "hybrid-site-01";
/** One command (in-process or child) that takes longer fails the test. */
const COMMAND_DEADLINE_MS = 20_000;

const base64 = (s: string) => Buffer.from(s).toString("base64");
const base64url = (s: string) => Buffer.from(s).toString("base64url");
const jsonEscaped = (s: string) => JSON.stringify(s).slice(1, -1);

/** Every form of every secret that must never be printed. */
function forbiddenStrings(accessTokens: readonly string[]): string[] {
  const secrets = [
    API_KEY,
    OTP,
    PASSWORD,
    WRONG_PASSWORD,
    WRONG_API_KEY,
    WRONG_OTP,
    WRONG_INFLUX_TOKEN,
    INFLUX_TOKEN,
    SHORT_PASSWORD,
    WRONG_SHORT_PASSWORD,
    URL_USER,
    URL_PASSWORD,
    V1_PASSWORD,
    WRONG_V1_PASSWORD,
    ...accessTokens,
  ];
  const credentials = [
    ...Object.values(USERS).flatMap((user) =>
      [PASSWORD, WRONG_PASSWORD].map((pw) => `${user}:${pw}`),
    ),
    ...[SHORT_PASSWORD, WRONG_SHORT_PASSWORD].map((pw) => `${SHORT_USER}:${pw}`),
    `${URL_USER}:${URL_PASSWORD}`,
    ...[V1_PASSWORD, WRONG_V1_PASSWORD].map((pw) => `${V1_USER}:${pw}`),
  ];
  const forms = [...secrets, ...credentials].flatMap((s) => [
    s,
    jsonEscaped(s),
    jsonEscaped(jsonEscaped(s)),
    base64(s),
    base64url(s),
  ]);
  return [...new Set(forms)];
}

interface Outcome {
  readonly code: number | null;
  readonly out: string;
  readonly err: string;
}

/** What a command printed that must not hold any secret (with the place, for the message). */
function leaks(outcome: Outcome, forbidden: readonly string[]): string[] {
  return textLeaks(
    [
      ["stdout", outcome.out],
      ["stderr", outcome.err],
    ],
    forbidden,
  );
}

/** Each secret (and each Authorization header of any kind) found in the texts, with its place. */
function textLeaks(texts: readonly (readonly [string, string])[], forbidden: readonly string[]) {
  const found: string[] = [];
  for (const [where, text] of texts) {
    for (const secret of forbidden) {
      if (text.includes(secret)) found.push(`${where} holds ${secret}`);
    }
    // an Authorization header of any kind, e.g. a Bearer token issued during the run
    for (const m of text.matchAll(
      /\b(Basic|Bearer|Token)\s+(?!\[REDACTED\])[A-Za-z0-9+/_=-]{8,}/g,
    )) {
      found.push(`${where} holds ${m[0]}`);
    }
  }
  return found;
}

/**
 * Every text of a state DB: each row of each table as `table: {column: value}` (BLOBs as UTF-8),
 * through SQLite, WAL included.
 */
function dumpStateDb(file: string): string {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .pluck()
      .all()
      .map(String);
    const lines: string[] = [];
    for (const table of tables) {
      const rows: unknown[] = db.prepare(`SELECT * FROM "${table.replaceAll('"', '""')}"`).all();
      for (const row of rows) {
        const values = Object.entries(row as Record<string, unknown>).map(
          ([column, value]) =>
            `${column}=${Buffer.isBuffer(value) ? value.toString("utf8") : String(value)}`,
        );
        lines.push(`${table}: ${values.join(" | ")}`);
      }
    }
    return lines.join("\n");
  } finally {
    db.close();
  }
}

/** The raw bytes of a state DB's files (the DB, its WAL, its journal) as Latin-1 text. */
function rawStateFiles(file: string): [string, string][] {
  return [file, `${file}-wal`, `${file}-journal`]
    .filter((f) => existsSync(f))
    .map((f) => [`raw file ${f}`, readFileSync(f).toString("latin1")]);
}

/** Secrets in a state DB: in any text of any table, or anywhere in its files' bytes. */
function stateDbLeaks(file: string, forbidden: readonly string[]): string[] {
  const dump = dumpStateDb(file);
  return textLeaks([[`state DB ${file}`, dump], ...rawStateFiles(file)], forbidden);
}

async function runInProcess(argv: string[], env: Record<string, string>): Promise<Outcome> {
  const io = bufferIo(env);
  const code = await withDeadline(runCli(argv, io), COMMAND_DEADLINE_MS, `energy-etl ${argv[0]}`);
  return { code, out: io.out(), err: io.err() };
}

async function runChild(
  argv: string[],
  env: Record<string, string>,
  options: { cwd?: string } = {},
): Promise<Outcome> {
  const child = spawn(process.execPath, [builtCli(), ...argv], {
    cwd: options.cwd ?? NO_ENV_DIR,
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exit = trackExit(child);
  const out = collect(child.stdout);
  const err = collect(child.stderr);
  const { code } = await exit.wait(COMMAND_DEADLINE_MS, `energy-etl ${argv[0]}`);
  return { code, out: out(), err: err() };
}

describe("secrets never reach stdout, stderr, logs or error messages", () => {
  let sim: Simulator;
  let db: TestInfluxDb;
  const outcomes: { name: string; outcome: Outcome }[] = [];
  /** Every state file the commands wrote, dumped at the end. */
  const stateDbs: string[] = [];

  beforeAll(async () => {
    sim = await startTestSimulator({
      apiKey: API_KEY,
      users: [
        ...Object.values(USERS).map((user) => ({ user, otp: OTP })),
        { user: SHORT_USER, password: SHORT_PASSWORD },
      ],
      // coarse records keep the history up to the real now cheap
      resolutionS: 900,
    });
    db = await createTestInfluxDb("secrets");
  });
  afterAll(async () => {
    await sim.close();
  });

  /** The environment of a mode: every secret set, trace logs, a state file of its own. */
  function envOf(mode: Mode, stateDb: string, extra: Record<string, string> = {}) {
    return {
      ENERGY_API_URL: sim.url,
      ENERGY_API_KEY: API_KEY,
      ENERGY_API_USER: USERS[mode],
      ENERGY_API_PASSWORD: PASSWORD,
      INFLUX_URL: db.url,
      INFLUX_TOKEN: INFLUX_TOKEN,
      INFLUX_ORG: db.org,
      INFLUX_BUCKET: db.bucket,
      STATE_DB: stateDb,
      API_RATE_LIMIT: "1000",
      API_RETRIES: "1",
      API_RETRY_BASE_DELAY_MS: "10",
      API_RETRY_MAX_DELAY_MS: "20",
      INFLUX_RETRIES: "0",
      SYNC_START: "PT2H",
      LOG_LEVEL: "trace",
      ...extra,
    };
  }

  const day = new Date(Date.now() - 86_400_000).toISOString().slice(0, 19);

  /**
   * The 5xx of errorRate cycle 503 (text), 502 (empty), 500 (JSON), one per request of the
   * faulted endpoints. Sends requests to `endpoint` until a 500 came back: the command's
   * first faulted request then gets the 503 whose text body lists the headers.
   */
  async function nextErrorIsText(endpoint: "devices" | "data" | "set_password") {
    const [method, path] =
      endpoint === "devices"
        ? ["GET", "/devices"]
        : endpoint === "data"
          ? ["GET", `/data/${DEVICE}/all_data`]
          : ["POST", "/set_password"];
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${sim.url}${path}`, {
        method,
        signal: AbortSignal.timeout(5_000),
      });
      await res.arrayBuffer();
      if (res.status === 500) return;
    }
    throw new Error(`no 500 from ${endpoint} in 3 requests: is errorRate 1 on it?`);
  }

  describe.each(["child process", "in-process"] as const)("%s", (mode) => {
    const run = (argv: string[], env: Record<string, string>) =>
      mode === "in-process" ? runInProcess(argv, env) : runChild(argv, env);
    const stateDb = tempStateDb();
    /** The state files of this mode's commands (`stateDbs` holds every mode's). */
    const modeDbs: string[] = [stateDb];
    stateDbs.push(stateDb);
    /** Keeps the outcome for the final check, and checks it now (with the tokens issued so far). */
    const record = (name: string, outcome: Outcome) => {
      outcomes.push({ name: `${mode}: ${name}`, outcome });
      expect(leaks(outcome, forbiddenStrings(sim.issuedTokens()))).toEqual([]);
      return outcome;
    };

    it("set-password with a wrong one-time password fails without printing it", async () => {
      const env = envOf(mode, stateDb, { ENERGY_API_OTP: WRONG_OTP });
      const outcome = record(
        "set-password (wrong otp)",
        await run(["set-password", "--user", USERS[mode]], env),
      );
      expect(outcome.code).toBe(1);
      expect(outcome.err).toMatch(/refused the credentials \(HTTP 401\)/);
    });

    it("set-password (ENERGY_API_OTP, ENERGY_API_PASSWORD) sets it", async () => {
      const outcome = await run(
        ["set-password", "--user", USERS[mode]],
        envOf(mode, stateDb, { ENERGY_API_OTP: OTP }),
      );
      record("set-password", outcome);
      expect(outcome).toMatchObject({ code: 0 });
      expect(outcome.out).toMatch(/Password set for /);
    });

    it.each([
      ["devices", ["devices"], /hybrid-site-01/],
      ["devices --json", ["devices", "--json"], /"device_ids"/],
      ["resources", ["resources", DEVICE], /all_data/],
      ["values", ["values", DEVICE], /total_solar_power/],
      ["values --json", ["values", DEVICE, "battery_bank", "--json"], /"values"/],
      ["migrate", ["migrate"], /./],
      ["sync", ["sync", "--device", DEVICE], /hybrid-site-01/],
      [
        "backfill --dry-run",
        ["backfill", "--device", DEVICE, "--from", day, "--dry-run"],
        /total: /,
      ],
      ["backfill", ["backfill", "--device", DEVICE, "--from", day], /jobs done/],
      ["status", ["status"], /hybrid-site-01/],
      ["status --json", ["status", "--json"], /"cursors"/],
      ["config", ["config"], /\[set\]/],
      ["decode", ["decode", "e_03_07_04_000_total_solar_energy"], /kWh/],
    ])("%s", async (name, argv, stdout) => {
      const outcome = record(name, await run(argv, envOf(mode, stateDb)));
      expect({ code: outcome.code, err: outcome.code === 0 ? "" : outcome.err }).toEqual({
        code: 0,
        err: "",
      });
      expect(outcome.out).toMatch(stdout);
    });

    it.each([
      [
        "wrong password",
        ["devices"],
        { ENERGY_API_PASSWORD: WRONG_PASSWORD },
        1,
        /refused the credentials \(HTTP 401\)/,
      ],
      [
        "wrong API key",
        ["devices"],
        { ENERGY_API_KEY: WRONG_API_KEY },
        1,
        /refused the credentials \(HTTP 403\)/,
      ],
      [
        "wrong InfluxDB token",
        ["sync", "--device", DEVICE],
        { INFLUX_TOKEN: WRONG_INFLUX_TOKEN },
        1,
        /InfluxDB refused the token/,
      ],
      ["an invalid setting", ["sync"], { SYNC_CRON: "every tuesday" }, 2, /SYNC_CRON/],
      [
        "an invalid secret-bearing config file",
        ["devices", "--config", "CONFIG_FILE"],
        {},
        2,
        /unknown setting api\.passwrd/,
      ],
    ])("%s: fails with a clear message and no secret", async (name, argv, extra, code, message) => {
      const file = join(tempDir("secrets-"), "config.json");
      // a config file with secrets in it and one setting that does not exist
      writeFileSync(
        file,
        JSON.stringify({
          api: { key: API_KEY, password: PASSWORD, passwrd: WRONG_PASSWORD },
          influx: { token: INFLUX_TOKEN },
        }),
      );
      const args = argv.map((a) => (a === "CONFIG_FILE" ? file : a));
      const outcome = record(name, await run(args, envOf(mode, stateDb, extra)));
      expect(outcome.code).toBe(code);
      expect(outcome.err).toMatch(message);
    });

    it.each([
      ["ENERGY_API_URL", /ENERGY_API_USER and ENERGY_API_PASSWORD/],
      ["INFLUX_URL", /INFLUX_TOKEN/],
    ])("%s with user:password@ is refused (exit 2) without printing them", async (name, where) => {
      const url = `http://${URL_USER}:${URL_PASSWORD}@127.0.0.1:1/base`;
      const outcome = record(
        `config with userinfo in ${name}`,
        await run(["config"], envOf(mode, stateDb, { [name]: url })),
      );
      expect(outcome.code).toBe(2);
      expect(outcome.out).toBe("");
      expect(outcome.err).toMatch(new RegExp(`${name} .*must not hold credentials`));
      expect(outcome.err).toContain("http://***@127.0.0.1:1");
      expect(outcome.err).toMatch(where);
      expect(outcome.err.trim().split("\n")).toHaveLength(1);
      expect(outcome.err).not.toContain(url);
    });

    describe("against an upstream that echoes the request headers in its error answers", () => {
      afterEach(() => {
        sim.faults = {};
      });
      /** A 5xx of errorRate ends a request at once: every kind of error body is reported. */
      const noRetry = { API_RETRIES: "0" };
      const shortUser = { ENERGY_API_USER: SHORT_USER, ENERGY_API_PASSWORD: SHORT_PASSWORD };
      const data5xx: FaultOptions = { errorRate: 1, endpoints: ["data"] };

      interface Hostile {
        readonly argv: string[];
        readonly env?: Record<string, string>;
        readonly faults?: FaultOptions;
        /** Runs of the command (each on the next kind of 5xx); default 1. */
        readonly runs?: number;
        /** A state file of its own (a sync or backfill that failed waits before it retries). */
        readonly freshState?: boolean;
        readonly message: RegExp;
      }
      const cases: [string, Hostile][] = [
        [
          "a wrong password: create_token 401 echoes Authorization: Basic base64(user:password)",
          { argv: ["devices"], env: { ENERGY_API_PASSWORD: WRONG_PASSWORD }, message: /HTTP 401/ },
        ],
        [
          "a wrong API key: 403 echoes x-api-key",
          { argv: ["devices"], env: { ENERGY_API_KEY: WRONG_API_KEY }, message: /HTTP 403/ },
        ],
        [
          "5xx answers (text, empty, JSON) echo the Bearer token",
          {
            argv: ["devices"],
            env: noRetry,
            faults: { errorRate: 1, endpoints: ["devices"] },
            runs: 3,
            message: /HTTP 50[023]/,
          },
        ],
        [
          "a sync whose data requests answer 5xx echoing the Bearer token",
          {
            argv: ["sync", "--device", DEVICE],
            env: noRetry,
            faults: data5xx,
            freshState: true,
            message: /HTTP 503/,
          },
        ],
        [
          "a backfill whose data requests answer 5xx echoing the Bearer token",
          {
            argv: ["backfill", "--device", DEVICE, "--from", day],
            env: noRetry,
            faults: data5xx,
            freshState: true,
            message: /HTTP 503/,
          },
        ],
        [
          "set-password: a wrong one-time password answered 401 echoing its Base64",
          {
            argv: ["set-password", "--user", USERS[mode]],
            env: { ENERGY_API_OTP: WRONG_OTP },
            message: /HTTP 401/,
          },
        ],
        [
          "set-password answered 5xx echoing the one-time password's Base64",
          {
            argv: ["set-password", "--user", USERS[mode]],
            env: { ENERGY_API_OTP: OTP, ...noRetry },
            faults: { errorRate: 1, endpoints: ["set_password"] },
            runs: 3,
            message: /HTTP 50[023]/,
          },
        ],
        [
          "a wrong 3-character password: 401 echoes its Basic credential",
          {
            argv: ["devices"],
            env: { ...shortUser, ENERGY_API_PASSWORD: WRONG_SHORT_PASSWORD },
            message: /HTTP 401/,
          },
        ],
        [
          "a 3-character password: a token, then 5xx echoing it",
          {
            argv: ["devices"],
            env: { ...shortUser, ...noRetry },
            faults: { errorRate: 1, endpoints: ["devices"] },
            runs: 3,
            message: /HTTP 50[023]/,
          },
        ],
        [
          "a 3-character password: a sync through 5xx echoing the token",
          {
            argv: ["sync", "--device", DEVICE],
            env: { ...shortUser, ...noRetry },
            faults: data5xx,
            freshState: true,
            message: /HTTP 503/,
          },
        ],
      ];

      it.each(cases)("%s: exit 1, no secret", async (name, hostile) => {
        sim.faults = { ...hostile.faults, echoHeaders: true };
        const faulted = hostile.faults?.endpoints?.[0];
        if (faulted === "devices" || faulted === "data" || faulted === "set_password") {
          await nextErrorIsText(faulted);
        }
        const db = hostile.freshState ? tempStateDb() : stateDb;
        if (db !== stateDb) {
          modeDbs.push(db);
          stateDbs.push(db);
        }
        const errors: string[] = [];
        for (let i = 0; i < (hostile.runs ?? 1); i++) {
          const before = sim.count();
          const outcome = record(
            `echoing upstream: ${name} (${i + 1})`,
            await run(hostile.argv, envOf(mode, db, hostile.env)),
          );
          // the upstream did answer, with the headers in its error bodies
          expect(sim.count()).toBeGreaterThan(before);
          expect(outcome.code).toBe(1);
          errors.push(outcome.err);
        }
        expect(errors.join("\n")).toMatch(hostile.message);
        if (hostile.runs === 3) {
          // each kind of 5xx body was the answer of one run
          for (const status of [500, 502, 503])
            expect(errors.join("\n")).toContain(`HTTP ${status}`);
        }
      });
    });

    it("the state DBs hold no secret in any table, nor in their files", () => {
      const forbidden = forbiddenStrings(sim.issuedTokens());
      // the failures above were recorded (runs with their detail), so the dump means something
      expect(dumpStateDb(stateDb)).toMatch(/runs: /);
      expect(modeDbs.length).toBeGreaterThan(1);
      expect(modeDbs.flatMap((db) => stateDbLeaks(db, forbidden))).toEqual([]);
    });

    if (mode === "child process") {
      it("run: the service syncs, answers /healthz, /readyz and /metrics, stops on SIGTERM", async () => {
        const port = await freePort();
        const runDb = tempStateDb();
        stateDbs.push(runDb);
        const child = spawn(process.execPath, [builtCli(), "run"], {
          cwd: NO_ENV_DIR,
          env: {
            PATH: process.env.PATH ?? "",
            ...envOf(mode, runDb, { HTTP_PORT: String(port), SYNC_CRON: "0 0 1 1 *" }),
          },
          stdio: ["ignore", "pipe", "pipe"],
        });
        const exit = trackExit(child);
        const out = collect(child.stdout);
        const err = collect(child.stderr);
        let bodies = "";
        try {
          await waitUntil(() => err().includes('"msg":"sync finished"'), "the first sync of run", {
            timeoutMs: COMMAND_DEADLINE_MS,
            intervalMs: 20,
            stopIf: exit.exited,
          });
          for (const path of ["/healthz", "/readyz", "/metrics"]) {
            const res = await fetch(`http://127.0.0.1:${port}${path}`, {
              signal: AbortSignal.timeout(5_000),
            });
            bodies += `${path} ${res.status}\n${await res.text()}\n`;
          }
        } finally {
          child.kill("SIGTERM");
        }
        const { code } = await exit.wait(COMMAND_DEADLINE_MS, "energy-etl run after SIGTERM");
        const outcome = record("run", { code, out: `${out()}\n${bodies}`, err: err() });
        expect(outcome.code).toBe(0);
        expect(bodies).toMatch(/\/readyz 200/);
        // (/metrics is scanned too, whatever it answers)
      });

      it("run against an upstream echoing the headers in its 5xx: logs, /readyz, state DB", async () => {
        const port = await freePort();
        const runDb = tempStateDb();
        stateDbs.push(runDb);
        sim.faults = { errorRate: 1, endpoints: ["data"], echoHeaders: true };
        await nextErrorIsText("data");
        const child = spawn(process.execPath, [builtCli(), "run"], {
          cwd: NO_ENV_DIR,
          env: {
            PATH: process.env.PATH ?? "",
            ...envOf(mode, runDb, {
              HTTP_PORT: String(port),
              SYNC_CRON: "0 0 1 1 *",
              API_RETRIES: "0",
              READY_FAILED_SYNCS: "1",
            }),
          },
          stdio: ["ignore", "pipe", "pipe"],
        });
        const exit = trackExit(child);
        const out = collect(child.stdout);
        const err = collect(child.stderr);
        let bodies = "";
        try {
          await waitUntil(() => err().includes('"msg":"sync finished"'), "the first sync of run", {
            timeoutMs: COMMAND_DEADLINE_MS,
            intervalMs: 20,
            stopIf: exit.exited,
          });
          for (const path of ["/healthz", "/readyz", "/metrics"]) {
            const res = await fetch(`http://127.0.0.1:${port}${path}`, {
              signal: AbortSignal.timeout(5_000),
            });
            bodies += `${path} ${res.status}\n${await res.text()}\n`;
          }
        } finally {
          child.kill("SIGTERM");
          sim.faults = {};
        }
        const { code } = await exit.wait(COMMAND_DEADLINE_MS, "energy-etl run after SIGTERM");
        const outcome = record("run (echoing upstream)", {
          code,
          out: `${out()}\n${bodies}`,
          err: err(),
        });
        expect(outcome.code).toBe(0);
        // the data requests failed with the echoing 5xx, and said so
        expect(sim.count("data", 500) + sim.count("data", 503)).toBeGreaterThan(0);
        expect(outcome.err).toMatch(/HTTP 50\d/);
        expect(stateDbLeaks(runDb, forbiddenStrings(sim.issuedTokens()))).toEqual([]);
      });

      it("demo (in a directory of its own, line protocol)", async () => {
        const cwd = tempDir("secrets-demo-");
        const outcome = record(
          "demo",
          await runChild(["demo"], envOf(mode, tempStateDb(), { INFLUX_URL: "" }), { cwd }),
        );
        expect(outcome.code).toBe(0);
        expect(outcome.out).toMatch(/demo finished/);
      });
    }
  });

  it("the simulator's echoHeaders fault echoes the request headers in error answers", async () => {
    sim.faults = { echoHeaders: true };
    try {
      const headers = { "x-api-key": API_KEY, authorization: `Basic ${base64("nobody:nothing")}` };
      const refused = await fetch(`${sim.url}/create_token`, {
        method: "POST",
        headers,
        signal: AbortSignal.timeout(5_000),
      });
      expect(refused.status).toBe(401);
      expect(await refused.json()).toMatchObject({
        error: "invalid username or password",
        request_headers: headers,
      });
      sim.faults = { echoHeaders: true, errorRate: 1, endpoints: ["devices"] };
      const bodies: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${sim.url}/devices`, {
          headers: { authorization: "Bearer some-token-4e1" },
          signal: AbortSignal.timeout(5_000),
        });
        expect(res.status).toBeGreaterThanOrEqual(500);
        bodies.push(await res.text());
      }
      // the JSON 500 and the text 503 echo the header; the empty 502 stays empty
      expect(bodies.filter((b) => b.includes("Bearer some-token-4e1"))).toHaveLength(2);
      expect(bodies).toContain("");
      // endpoints limit the echo: an error of another endpoint is sent as it is
      const ok = await fetch(`${sim.url}/x/y/z/w`, { signal: AbortSignal.timeout(5_000) });
      expect(ok.status).toBe(404);
      expect(await ok.text()).not.toContain("request_headers");
    } finally {
      sim.faults = {};
    }
    const tokens = sim.issuedTokens();
    expect(tokens.length).toBeGreaterThan(0);
    expect(new Set(tokens).size).toBe(tokens.length);
  });

  it("energy-etl simulate --echo-headers switches it on", async () => {
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [builtCli(), "simulate", "--port", String(port), "--echo-headers"],
      {
        cwd: NO_ENV_DIR,
        env: { PATH: process.env.PATH ?? "" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    const exit = trackExit(child);
    const out = collect(child.stdout);
    let body = "";
    try {
      await waitUntil(() => out().includes("devices:"), "the simulator's start", {
        timeoutMs: COMMAND_DEADLINE_MS,
        intervalMs: 20,
        stopIf: exit.exited,
      });
      const res = await fetch(`http://127.0.0.1:${port}/devices`, {
        headers: { authorization: "Bearer not-a-token-8c3" },
        signal: AbortSignal.timeout(5_000),
      });
      expect(res.status).toBe(401);
      body = await res.text();
    } finally {
      child.kill("SIGTERM");
    }
    await exit.wait(COMMAND_DEADLINE_MS, "energy-etl simulate after SIGTERM");
    expect(out()).toMatch(/error answers echo the request headers/);
    expect(JSON.parse(body)).toMatchObject({
      error: "invalid token",
      request_headers: { authorization: "Bearer not-a-token-8c3" },
    });
  });

  describe("InfluxDB 1.x with auth-enabled: INFLUX_USERNAME and INFLUX_PASSWORD as HTTP Basic", () => {
    const influxd = new TestInfluxd({ authEnabled: true });
    const admin = { username: V1_USER, password: V1_PASSWORD };
    beforeAll(async () => {
      await influxd.start();
      await influxql(
        influxd.rawUrl,
        "",
        `CREATE USER "${V1_USER}" WITH PASSWORD '${V1_PASSWORD}' WITH ALL PRIVILEGES`,
      );
      await influxql(influxd.rawUrl, "", 'CREATE DATABASE "secrets_v1"', admin);
    });
    afterAll(() => influxd.stop());

    it.each([
      ["child process", "a wrong", WRONG_V1_PASSWORD, 1],
      ["in-process", "a wrong", WRONG_V1_PASSWORD, 1],
      ["child process", "the right", V1_PASSWORD, 0],
      ["in-process", "the right", V1_PASSWORD, 0],
    ] as const)(
      "%s: sync on v1 with %s password prints no credential",
      async (mode, _which, pw, code) => {
        const stateDb = tempStateDb();
        stateDbs.push(stateDb);
        const env = envOf(mode, stateDb, {
          INFLUX_URL: influxd.rawUrl,
          INFLUX_TOKEN: "",
          INFLUX_BUCKET: "secrets_v1",
          INFLUX_USERNAME: V1_USER,
          INFLUX_PASSWORD: pw,
        });
        const argv = ["sync", "--device", DEVICE];
        const outcome = await (mode === "in-process"
          ? runInProcess(argv, env)
          : runChild(argv, env));
        outcomes.push({ name: `${mode}: sync on InfluxDB 1.x (v1, Basic)`, outcome });
        expect(leaks(outcome, forbiddenStrings(sim.issuedTokens()))).toEqual([]);
        expect({ code: outcome.code, err: code === 0 ? "" : outcome.err }).toEqual({
          code,
          err: code === 0 ? "" : expect.stringMatching(/check INFLUX_USERNAME and INFLUX_PASSWORD/),
        });
      },
    );
  });

  it("none of the outputs above holds a secret, a Base64 form of one, or an access token", () => {
    const tokens = sim.issuedTokens();
    // the simulator handed out tokens (to both modes), so their absence below means something
    expect(tokens.length).toBeGreaterThan(2);
    const forbidden = forbiddenStrings(tokens);
    expect(outcomes.length).toBeGreaterThan(40);
    // the logs were really at trace level (debug lines and below are there)
    expect(outcomes.some(({ outcome }) => outcome.err.includes('"level":"debug"'))).toBe(true);
    const found = outcomes.flatMap(({ name, outcome }) =>
      leaks(outcome, forbidden).map((leak) => `${name}: ${leak}`),
    );
    expect(found).toEqual([]);
  });

  it("no state DB written above holds a secret, in any table or in its files", () => {
    const forbidden = forbiddenStrings(sim.issuedTokens());
    expect(stateDbs.length).toBeGreaterThanOrEqual(3);
    expect(stateDbs.flatMap((file) => stateDbLeaks(file, forbidden))).toEqual([]);
  });
});
