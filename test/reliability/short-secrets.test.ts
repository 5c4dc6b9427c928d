/**
 * Secrets shorter than 8 characters (a 1-character and a 7-character password, API key and
 * one-time password; access tokens of 1 and 7 characters in-process) are redacted where they
 * stand whole and never looked for inside other text: no log line or message holds a mangled
 * word (`com[REDACTED]onent`), the fields and headers that carry them are still redacted, a long
 * secret inside a text is still redacted, and no output of a run shows the secrets: the built CLI
 * at LOG_LEVEL=trace, against a simulator that echoes the request headers in its error answers,
 * its stdout, stderr and state DB files scanned. Every wait is bounded in count and time.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ApiAuth } from "../../src/api/auth.js";
import { CENSOR, forgetSecret, registerSecret, scrubSecrets } from "../../src/logger.js";
import type { FaultOptions, Simulator } from "../../src/simulator/server.js";
import { builtCli } from "../support/cli-child.js";
import { NO_ENV_DIR } from "../support/cli-io.js";
import { captureLogger } from "../support/log-capture.js";
import { tempStateDb } from "../support/pipeline.js";
import { collect, trackExit } from "../support/reliability-bounds.js";
import { startTestSimulator } from "../support/simulator.js";
import { tempDir } from "../support/temp-dir.js";

const base64 = (s: string) => Buffer.from(s).toString("base64");
const base64url = (s: string) => Buffer.from(s).toString("base64url");
const jsonEscaped = (s: string) => JSON.stringify(s).slice(1, -1);

/** `[REDACTED]` glued to a letter or digit: a secret found inside a word. */
const MANGLED = /[A-Za-z0-9]\[REDACTED\]|\[REDACTED\][A-Za-z0-9]/;

describe("short secrets in log lines and messages (in-process)", () => {
  /** Secrets that are parts of ordinary words, of 1 and 7 characters. */
  const PASSWORD_1 = "p";
  const API_KEY_1 = "e";
  const TOKEN_1 = "t";
  const PASSWORD_7 = "compone";
  const API_KEY_7 = "request";
  const TOKEN_7 = "devices";
  const LONG = "a-long-secret-9d2f";
  const SHORT = [PASSWORD_1, API_KEY_1, TOKEN_1, PASSWORD_7, API_KEY_7, TOKEN_7];

  beforeAll(() => {
    // as the API's authentication registers them (user:password is long: redacted anywhere)
    const auth = new ApiAuth(
      { apiKey: API_KEY_1, user: "u", password: PASSWORD_1 },
      () => Promise.reject(new Error("not asked for")),
      () => 0,
    );
    auth.remember(TOKEN_1);
    const auth7 = new ApiAuth(
      { apiKey: API_KEY_7, user: "user-seven", password: PASSWORD_7 },
      () => Promise.reject(new Error("not asked for")),
      () => 0,
    );
    auth7.remember(TOKEN_7);
    registerSecret(LONG);
  });
  afterAll(() => {
    for (const secret of [...SHORT, LONG, `u:${PASSWORD_1}`, `user-seven:${PASSWORD_7}`]) {
      forgetSecret(secret);
    }
  });

  it("no word is mangled: ordinary text and the logger's own fields stay whole", () => {
    const { logger, lines } = captureLogger("debug");
    const text = "component api: 3 requests for 2 devices, composed";
    logger.info({ component: "api", step: "requests", devices: 2 }, text);
    logger.warn({ err: new Error(`upstream: ${text}`) }, "sync partial");
    for (const line of lines) expect(line).not.toMatch(MANGLED);
    expect(lines.join("\n")).not.toContain(CENSOR);
    expect(JSON.parse(lines[0] ?? "")).toMatchObject({
      level: "info",
      app: "energy-etl",
      component: "api",
      step: "requests",
      msg: text,
    });
    expect(scrubSecrets(`energy-etl: failed: ${text}`)).toBe(`energy-etl: failed: ${text}`);
  });

  it("the fields and headers that carry them are redacted", () => {
    const { logger, lines } = captureLogger("debug");
    logger.debug(
      {
        password: PASSWORD_1,
        apiKey: API_KEY_7,
        token: TOKEN_1,
        headers: { authorization: `Bearer ${TOKEN_7}`, "x-api-key": API_KEY_1 },
      },
      "request",
    );
    expect(JSON.parse(lines[0] ?? "")).toMatchObject({
      password: CENSOR,
      apiKey: CENSOR,
      token: CENSOR,
      headers: { authorization: CENSOR, "x-api-key": CENSOR },
    });
    // an upstream's error answer echoing the request's headers, as JSON and as text
    const json = JSON.stringify({
      error: "invalid token",
      request_headers: {
        authorization: `Bearer ${TOKEN_1}`,
        "x-api-key": API_KEY_7,
        basic: `Basic ${base64(`u:${PASSWORD_1}`)}`,
        value: PASSWORD_7,
      },
    });
    expect(scrubSecrets(`GET /devices answered HTTP 401 with ${json}`)).toBe(
      'GET /devices answered HTTP 401 with {"error":"invalid token","request_headers":' +
        '{"authorization":"Bearer [REDACTED]","x-api-key":"[REDACTED]",' +
        '"basic":"Basic [REDACTED]","value":"[REDACTED]"}}',
    );
    const text = `bad gateway\nrequest headers:\nx-api-key: ${API_KEY_1}\nauthorization: Bearer ${base64(TOKEN_7)}`;
    expect(scrubSecrets(text)).toBe(
      "bad gateway\nrequest headers:\nx-api-key: [REDACTED]\nauthorization: Bearer [REDACTED]",
    );
    // the same quoted in a log line's message: JSON-escaped
    logger.error({ body: json }, `upstream said: ${text}`);
    const logged = lines[1] ?? "";
    for (const secret of SHORT) {
      expect(logged).not.toMatch(new RegExp(`[:\\s"]${secret}(?:\\\\+n|\\\\*")`));
    }
    expect(logged).not.toContain(base64(TOKEN_7));
    expect(logged).not.toMatch(MANGLED);
    expect(JSON.parse(logged).msg).toBe(
      "upstream said: bad gateway\nrequest headers:\nx-api-key: [REDACTED]\nauthorization: Bearer [REDACTED]",
    );
  });

  it("a URL's password, a query parameter, a text that is the secret alone", () => {
    expect(scrubSecrets(`http://u:${PASSWORD_7}@host/x?otp=${TOKEN_1}&page=2`)).toBe(
      "http://u:[REDACTED]@host/x?otp=[REDACTED]&page=2",
    );
    expect(scrubSecrets(PASSWORD_1)).toBe(CENSOR);
    // a JSON key equal to a secret is not its value
    expect(scrubSecrets(`{"${PASSWORD_1}":1,"x":"${TOKEN_7}"}`)).toBe(
      `{"${PASSWORD_1}":1,"x":"[REDACTED]"}`,
    );
  });

  it("a long secret inside a text is still redacted, its Base64 too", () => {
    const { logger, lines } = captureLogger("debug");
    logger.info(`upstream echoed x${LONG}y and Basic ${base64(LONG)} for the component`);
    expect(JSON.parse(lines[0] ?? "").msg).toBe(
      "upstream echoed x[REDACTED]y and Basic [REDACTED] for the component",
    );
    expect(scrubSecrets(`{"user":"u","pw":"${LONG}"}`)).toBe('{"user":"u","pw":"[REDACTED]"}');
  });
});

/** One command's run as a child process. */
interface Outcome {
  readonly name: string;
  readonly code: number | null;
  readonly out: string;
  readonly err: string;
}

/** One command that takes longer fails the test. */
const COMMAND_MS = 20_000;

async function runChild(
  name: string,
  argv: string[],
  env: Record<string, string>,
): Promise<Outcome> {
  const child = spawn(process.execPath, [builtCli(), ...argv], {
    cwd: NO_ENV_DIR,
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exit = trackExit(child);
  const out = collect(child.stdout);
  const err = collect(child.stderr);
  const { code } = await exit.wait(COMMAND_MS, `energy-etl ${argv.join(" ")}`);
  return { name, code, out: out(), err: err() };
}

/** The secrets of a run: all shorter than 8 characters. */
interface ShortSet {
  readonly label: string;
  readonly apiKey: string;
  readonly password: string;
  readonly wrongPassword: string;
  readonly wrongApiKey: string;
  readonly otp: string;
  readonly wrongOtp: string;
  /** Secrets of 1 character are everywhere as letters: only their whole-value forms are checked. */
  readonly oneChar: boolean;
}

const SETS: readonly ShortSet[] = [
  {
    label: "1-character",
    apiKey: "a",
    password: "e",
    wrongPassword: "o",
    wrongApiKey: "i",
    otp: "482913",
    wrongOtp: "517046",
    oneChar: true,
  },
  {
    label: "7-character",
    apiKey: "Kq7!zX2",
    password: "Pw7#v9Q",
    wrongPassword: "Wr7%q2Z",
    wrongApiKey: "Wk7~p3X",
    otp: "4829137",
    wrongOtp: "5170468",
    oneChar: false,
  },
];

const USER = "short-secret-user";
const OTP_USER = "short-otp-user";
const DEVICE = "hybrid-site-01";

/** Texts that must never be printed, found in `text`, each with where. */
function leaks(set: ShortSet, tokens: readonly string[], where: string, text: string): string[] {
  const passwords = [set.password, set.wrongPassword];
  const credentials = [USER, OTP_USER].flatMap((u) => passwords.map((p) => `${u}:${p}`));
  // distinctive in any form: the credentials (long), the tokens, the one-time passwords
  const distinct = [...credentials, ...tokens, set.otp, set.wrongOtp];
  const whole = [set.apiKey, set.wrongApiKey, ...passwords];
  if (!set.oneChar) distinct.push(...whole);
  const literal = distinct.flatMap((s) => [
    s,
    jsonEscaped(s),
    jsonEscaped(jsonEscaped(s)),
    base64(s),
    base64url(s),
  ]);
  const found = literal.filter((s) => text.includes(s)).map((s) => `${where} holds ${s}`);
  for (const s of set.oneChar ? [...whole, ...whole.map(base64)] : []) {
    const quoted = new RegExp(`\\\\*"${s}\\\\*"`);
    const header = new RegExp(
      `(?:x-api-key|authorization|password)\\\\*"?\\s*[:=]\\s*\\\\*"?(?:Basic |Bearer )?${s.replace(/[+=/]/g, "\\$&")}(?![\\w+/=-])`,
      "i",
    );
    for (const re of [quoted, header]) {
      const m = re.exec(text);
      if (m) found.push(`${where} holds ${m[0]} (${s} whole)`);
    }
  }
  if (MANGLED.test(text)) found.push(`${where} holds a mangled word: ${MANGLED.exec(text)?.[0]}`);
  return found;
}

describe.each(SETS)("a run with $label secrets (child processes)", (set) => {
  let sim: Simulator;
  const outcomes: Outcome[] = [];
  const stateDbs: string[] = [];

  beforeAll(async () => {
    sim = await startTestSimulator({
      apiKey: set.apiKey,
      users: [
        { user: USER, password: set.password },
        { user: OTP_USER, otp: set.otp },
      ],
      resolutionS: 900,
    });
  });
  afterAll(() => sim.close());
  afterEach(() => {
    sim.faults = {};
  });

  function envOf(extra: Record<string, string> = {}): Record<string, string> {
    const stateDb = tempStateDb();
    stateDbs.push(stateDb);
    return {
      ENERGY_API_URL: sim.url,
      ENERGY_API_KEY: set.apiKey,
      ENERGY_API_USER: USER,
      ENERGY_API_PASSWORD: set.password,
      STATE_DB: stateDb,
      OUTPUT_FILE: join(tempDir("short-secrets-"), "out.lp"),
      API_RATE_LIMIT: "1000",
      API_RETRIES: "0",
      SYNC_START: "PT2H",
      LOG_LEVEL: "trace",
      ...extra,
    };
  }

  async function run(
    name: string,
    argv: string[],
    extra: Record<string, string>,
    faults?: FaultOptions,
  ) {
    sim.faults = { ...faults, echoHeaders: true };
    const outcome = await runChild(name, argv, envOf(extra));
    outcomes.push(outcome);
    expect(leaks(set, sim.issuedTokens(), `${name} stdout`, outcome.out)).toEqual([]);
    expect(leaks(set, sim.issuedTokens(), `${name} stderr`, outcome.err)).toEqual([]);
    return outcome;
  }

  it("devices, config: work, print no secret", async () => {
    const devices = await run("devices", ["devices"], {});
    expect(devices).toMatchObject({ code: 0, err: expect.stringContaining('"level":"debug"') });
    expect(devices.out).toContain(DEVICE);
    const config = await run("config", ["config"], {});
    expect(config.code).toBe(0);
    expect(config.out).toMatch(/\[set\]/);
  });

  it("a wrong password (a 401 echoing the Basic credential) fails and prints no secret", async () => {
    const { code, err } = await run("wrong password", ["devices"], {
      ENERGY_API_PASSWORD: set.wrongPassword,
    });
    expect(code).toBe(1);
    expect(err).toMatch(/refused the credentials \(HTTP 401\)/);
  });

  it("a wrong API key (a 403 echoing x-api-key) fails and prints no secret", async () => {
    const { code, err } = await run("wrong API key", ["devices"], {
      ENERGY_API_KEY: set.wrongApiKey,
    });
    expect(code).toBe(1);
    expect(err).toMatch(/refused the credentials \(HTTP 403\)/);
  });

  it("5xx answers echoing the Bearer token (a long secret inside a text): redacted", async () => {
    const texts: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { code, err } = await run(
        `devices 5xx (${i + 1})`,
        ["devices"],
        {},
        {
          errorRate: 1,
          endpoints: ["devices"],
        },
      );
      expect(code).toBe(1);
      texts.push(err);
    }
    expect(texts.join("\n")).toMatch(/HTTP 50\d/);
    expect(texts.join("\n")).toMatch(/Bearer \[REDACTED\]/);
  });

  it("a sync whose data requests answer 5xx echoing the headers", async () => {
    const { code, err } = await run(
      "sync 5xx",
      ["sync", "--device", DEVICE],
      {},
      {
        errorRate: 1,
        endpoints: ["data"],
      },
    );
    expect(code).toBe(1);
    expect(err).toMatch(/HTTP 50\d/);
  });

  it("set-password: a wrong one-time password, 5xx echoing its Base64, then the right one", async () => {
    const argv = ["set-password", "--user", OTP_USER];
    const wrong = await run("set-password (wrong otp)", argv, { ENERGY_API_OTP: set.wrongOtp });
    expect(wrong.code).toBe(1);
    expect(wrong.err).toMatch(/refused the credentials \(HTTP 401\)/);
    // 5xx answers (text, empty, JSON: one each) echo `authorization: Bearer <Base64 of the OTP>`
    const texts: string[] = [];
    for (let i = 0; i < 3; i++) {
      const failed = await run(
        `set-password 5xx (${i + 1})`,
        argv,
        { ENERGY_API_OTP: set.otp },
        {
          errorRate: 1,
          endpoints: ["set_password"],
        },
      );
      expect(failed.code).toBe(1);
      texts.push(failed.err);
    }
    expect(texts.join("\n")).toMatch(/HTTP 50\d/);
    expect(texts.join("\n")).toMatch(/authorization\\*"?:\s*\\*"?Bearer \[REDACTED\]/);
    const right = await run("set-password", ["set-password", "--user", OTP_USER], {
      ENERGY_API_OTP: set.otp,
    });
    expect(right.code).toBe(0);
    expect(right.out).toMatch(/Password set for /);
  });

  it("no output above holds a secret or a mangled word; nor any state DB file", () => {
    const tokens = sim.issuedTokens();
    expect(tokens.length).toBeGreaterThan(2);
    expect(outcomes.length).toBeGreaterThanOrEqual(10);
    const found = outcomes.flatMap((o) => [
      ...leaks(set, tokens, `${o.name} stdout`, o.out),
      ...leaks(set, tokens, `${o.name} stderr`, o.err),
    ]);
    expect(found).toEqual([]);
    const files = stateDbs
      .flatMap((db) => [db, `${db}-wal`, `${db}-journal`])
      .filter((f) => existsSync(f));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      expect(leaks(set, tokens, file, readFileSync(file).toString("latin1"))).toEqual([]);
    }
  });
});
