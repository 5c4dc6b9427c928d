/**
 * No secret ever reaches an output: every CLI command, and its failure paths, run with known,
 * distinctive secrets (API key, password, one-time password, InfluxDB token) at LOG_LEVEL=trace,
 * in-process and as child processes of the built CLI. Neither the secrets nor their Base64 forms
 * (Basic auth of user:password, Bearer of the one-time password) nor the access tokens the API
 * handed out may appear in stdout, stderr, a log line or an error message. Every wait is bounded
 * in count and time.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { runCli } from "../../src/cli.js";
import type { Simulator } from "../../src/simulator/server.js";
import { bufferIo } from "../support/cli-io.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { freePort, TEST_INFLUX_TOKEN } from "../support/influxd.js";
import { tempStateDb } from "../support/pipeline.js";
import { collect, trackExit, waitUntil, withDeadline } from "../support/reliability-bounds.js";
import { startTestSimulator } from "../support/simulator.js";

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

const CLI = resolve("dist/cli.js");
const DEVICE = "hybrid-site-01";
/** One command (in-process or child) that takes longer fails the test. */
const COMMAND_DEADLINE_MS = 20_000;

const base64 = (s: string) => Buffer.from(s).toString("base64");
const base64url = (s: string) => Buffer.from(s).toString("base64url");

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
  ];
  const credentials = Object.values(USERS).flatMap((user) =>
    [PASSWORD, WRONG_PASSWORD].map((pw) => `${user}:${pw}`),
  );
  return [
    ...secrets,
    ...[...secrets, ...credentials].flatMap((s) => [base64(s), base64url(s)]),
    ...accessTokens,
    ...accessTokens.map(base64),
  ];
}

/** The access tokens the simulator handed out (its private map, read for this check only). */
function issuedTokens(sim: Simulator): string[] {
  const tokens: unknown = Reflect.get(sim, "tokens");
  return tokens instanceof Map ? [...tokens.keys()].map(String) : [];
}

interface Outcome {
  readonly code: number | null;
  readonly out: string;
  readonly err: string;
}

/** What a command printed that must not hold any secret (with the place, for the message). */
function leaks(outcome: Outcome, forbidden: readonly string[]): string[] {
  const found: string[] = [];
  for (const [where, text] of [
    ["stdout", outcome.out],
    ["stderr", outcome.err],
  ] as const) {
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
  const child = spawn(process.execPath, [CLI, ...argv], {
    cwd: options.cwd,
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

  beforeAll(async () => {
    sim = await startTestSimulator({
      apiKey: API_KEY,
      users: Object.values(USERS).map((user) => ({ user, otp: OTP })),
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

  describe.each(["child process", "in-process"] as const)("%s", (mode) => {
    const run = (argv: string[], env: Record<string, string>) =>
      mode === "in-process" ? runInProcess(argv, env) : runChild(argv, env);
    const stateDb = tempStateDb();
    /** Keeps the outcome for the final check, and checks it now (with the tokens issued so far). */
    const record = (name: string, outcome: Outcome) => {
      outcomes.push({ name: `${mode}: ${name}`, outcome });
      expect(leaks(outcome, forbiddenStrings(issuedTokens(sim)))).toEqual([]);
      return outcome;
    };

    it("set-password with a wrong one-time password fails without printing it", async () => {
      const env = envOf(mode, stateDb, { ENERGY_API_PASSWORD: "", ENERGY_API_OTP: "" });
      const outcome = record(
        "set-password (wrong otp)",
        await run(
          ["set-password", "--user", USERS[mode], "--otp", WRONG_OTP, "--password", PASSWORD],
          env,
        ),
      );
      expect(outcome.code).toBe(1);
      expect(outcome.err).toMatch(/refused the credentials \(HTTP 401\)/);
    });

    it("set-password (--otp/--password, or ENERGY_API_OTP/ENERGY_API_PASSWORD) sets it", async () => {
      const outcome =
        mode === "child process"
          ? await run(
              ["set-password", "--user", USERS[mode], "--otp", OTP, "--password", PASSWORD],
              envOf(mode, stateDb, { ENERGY_API_PASSWORD: "" }),
            )
          : await run(
              ["set-password", "--user", USERS[mode]],
              envOf(mode, stateDb, { ENERGY_API_OTP: OTP, ENERGY_API_PASSWORD: PASSWORD }),
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
      const file = join(mkdtempSync(join(tmpdir(), "secrets-")), "config.json");
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

    if (mode === "child process") {
      it("run: the service syncs, answers /healthz, /readyz and /metrics, stops on SIGTERM", async () => {
        const port = await freePort();
        const child = spawn(process.execPath, [CLI, "run"], {
          env: {
            PATH: process.env.PATH ?? "",
            ...envOf(mode, tempStateDb(), { HTTP_PORT: String(port), SYNC_CRON: "0 0 1 1 *" }),
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

      it("demo (in a directory of its own, line protocol)", async () => {
        const cwd = mkdtempSync(join(tmpdir(), "secrets-demo-"));
        const outcome = record(
          "demo",
          await runChild(["demo"], envOf(mode, tempStateDb(), { INFLUX_URL: "" }), { cwd }),
        );
        expect(outcome.code).toBe(0);
        expect(outcome.out).toMatch(/demo finished/);
      });
    }
  });

  it("none of the outputs above holds a secret, a Base64 form of one, or an access token", () => {
    const tokens = issuedTokens(sim);
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
});
