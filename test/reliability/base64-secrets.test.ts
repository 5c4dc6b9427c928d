/**
 * The Base64 forms of short secrets (issue 40, item 5): a 6-digit one-time password sent as
 * `Bearer MTIzNDU2`, user `al` with password `a` sent as `Basic YWw6YQ==`. Echoed by an upstream
 * in a form that is not a JSON value nor `name: value` (a proxy's HTML error page, prose), they
 * are redacted wherever the secret would be: in-process, and from the built CLI's stderr, the
 * runs table and /readyz. Ordinary text keeps every word (a 1-character password is not looked
 * for inside text). Every wait is bounded in count and time.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ApiAuth } from "../../src/api/auth.js";
import { CENSOR, forgetSecret, registerSecret, scrubSecrets } from "../../src/logger.js";
import type { Simulator } from "../../src/simulator/server.js";
import { builtCli } from "../support/cli-child.js";
import { NO_ENV_DIR } from "../support/cli-io.js";
import { freePort } from "../support/influxd.js";
import { captureLogger } from "../support/log-capture.js";
import { tempStateDb } from "../support/pipeline.js";
import { collect, trackExit } from "../support/reliability-bounds.js";
import { startTestSimulator } from "../support/simulator.js";
import { tempDir } from "../support/temp-dir.js";
import { waitUntil } from "../support/wait.js";

const USER = "al";
const PASSWORD = "a";
const OTP = "123456";
const OTP_USER = "otp-user";
/** A long API key: the short secrets under test are the password and the one-time password. */
const API_KEY = "base64-secrets-api-key-51c0";
/** The oracle: what the client sends, written out here (the issue's own figures). */
const BASIC = "YWw6YQ==";
const BEARER_OTP = "MTIzNDU2";

/** `[REDACTED]` glued to a letter or digit: a secret found inside a word. */
const MANGLED = /[A-Za-z0-9]\[REDACTED\]|\[REDACTED\][A-Za-z0-9]/;
const COMMAND_MS = 20_000;

describe("Base64 forms of short secrets (in-process)", () => {
  beforeAll(() => {
    // as the API's authentication and set-password register them
    new ApiAuth(
      { apiKey: API_KEY, user: USER, password: PASSWORD },
      () => {
        throw new Error("not asked for");
      },
      () => 0,
    );
    registerSecret(OTP);
  });
  afterAll(() => {
    for (const secret of [API_KEY, PASSWORD, `${USER}:${PASSWORD}`, OTP]) forgetSecret(secret);
  });

  it("the oracle is what the client sends", () => {
    expect(
      new ApiAuth(
        { apiKey: "k", user: USER, password: PASSWORD },
        () => {
          throw new Error("not asked for");
        },
        () => 0,
      ).basicAuthorization,
    ).toBe(`Basic ${BASIC}`);
    expect(Buffer.from(OTP).toString("base64")).toBe(BEARER_OTP);
    forgetSecret("k");
  });

  it.each([
    ["an HTML cell", `<td>Basic ${BASIC}</td>`, `<td>Basic ${CENSOR}</td>`],
    [
      "prose after a scheme",
      `refused Bearer ${BEARER_OTP} (expired)`,
      `refused Bearer ${CENSOR} (expired)`,
    ],
    ["a token alone", `credential ${BASIC} refused`, `credential ${CENSOR} refused`],
    ["single quotes", `header 'Bearer ${BEARER_OTP}' bad`, `header 'Bearer ${CENSOR}' bad`],
    ["percent-encoded", `auth=Basic%20YWw6YQ%3D%3D&x=1`, `auth=Basic%20${CENSOR}&x=1`],
    ["unpadded after a scheme", "Basic YWw6YQ.", `Basic ${CENSOR}.`],
    ["the 1-character password's Base64 after a scheme", "Bearer YQ==;", `Bearer ${CENSOR};`],
    // the secret itself, short, as an HTML element's whole text (not inside one)
    [
      "the 1-character password as an HTML cell",
      "<td>a</td><td>a b</td>",
      `<td>${CENSOR}</td><td>a b</td>`,
    ],
  ])("%s: redacted", (_what, text, scrubbed) => {
    expect(scrubSecrets(text)).toBe(scrubbed);
  });

  it("in a log line, also at the start of an escaped line", () => {
    const { logger, lines } = captureLogger("debug");
    logger.error(`upstream said:\n${BEARER_OTP}\n<p>Basic ${BASIC}</p>`);
    expect(lines[0]).not.toContain(BEARER_OTP);
    expect(lines[0]).not.toContain(BASIC);
    expect(JSON.parse(lines[0] ?? "").msg).toBe(
      `upstream said:\n${CENSOR}\n<p>Basic ${CENSOR}</p>`,
    );
  });

  it("no word is mangled nor redacted: the forms are found only as whole tokens", () => {
    const text = `a banana, an apple: YQ and YQ== as data; x${BEARER_OTP}y, ${BASIC}Z, ${BEARER_OTP}0`;
    expect(scrubSecrets(text)).toBe(text);
    expect(scrubSecrets(text)).not.toMatch(MANGLED);
  });
});

/** One command's run as a child process. */
interface Outcome {
  readonly code: number | null;
  readonly out: string;
  readonly err: string;
}

async function runChild(argv: string[], env: Record<string, string>): Promise<Outcome> {
  const child = spawn(process.execPath, [builtCli(), ...argv], {
    cwd: NO_ENV_DIR,
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exit = trackExit(child);
  const out = collect(child.stdout);
  const err = collect(child.stderr);
  const { code } = await exit.wait(COMMAND_MS, `energy-etl ${argv.join(" ")}`);
  return { code, out: out(), err: err() };
}

/** The Base64 forms found in `text`, each with where; and a mangled word. */
function leaks(where: string, text: string): string[] {
  const found = [BASIC, BEARER_OTP, "YWw6YQ"].filter((s) => text.includes(s));
  if (MANGLED.test(text)) found.push(`a mangled word: ${MANGLED.exec(text)?.[0]}`);
  return found.map((s) => `${where} holds ${s}`);
}

/** The state DB's files as Latin-1 text (the runs table is in them). */
const stateFiles = (db: string): string =>
  [db, `${db}-wal`]
    .filter((f) => existsSync(f))
    .map((f) => readFileSync(f).toString("latin1"))
    .join("\n");

describe("a proxy's HTML error page echoing the Base64 credentials (built CLI)", () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startTestSimulator({
      apiKey: API_KEY,
      users: [
        { user: USER, password: PASSWORD },
        { user: OTP_USER, otp: OTP },
      ],
      resolutionS: 900,
    });
  });
  afterAll(() => sim.close());
  afterEach(() => {
    sim.faults = {};
  });

  const envOf = (stateDb: string, extra: Record<string, string> = {}) => ({
    ENERGY_API_URL: sim.url,
    ENERGY_API_KEY: API_KEY,
    ENERGY_API_USER: USER,
    ENERGY_API_PASSWORD: PASSWORD,
    STATE_DB: stateDb,
    OUTPUT_FILE: join(tempDir("base64-secrets-"), "out.lp"),
    API_RATE_LIMIT: "1000",
    // three attempts: the simulator's 5xx cycle JSON, text and empty bodies
    API_RETRIES: "2",
    API_RETRY_BASE_DELAY_MS: "10",
    API_RETRY_MAX_DELAY_MS: "20",
    SYNC_START: "PT2H",
    LOG_LEVEL: "trace",
    ...extra,
  });

  it("sync whose token requests get the page: stderr, the runs table and status", async () => {
    sim.faults = { errorRate: 1, endpoints: ["create_token"], echoHeaders: "html" };
    const db = tempStateDb();
    const sync = await runChild(["sync"], envOf(db));
    expect(sync.code).toBe(1);
    // the page came back and was quoted, redacted
    expect(sync.err).toContain(`<td>Basic ${CENSOR}</td>`);
    expect(leaks("sync stderr", sync.err)).toEqual([]);
    const status = await runChild(["status"], envOf(db));
    expect(status.out).toMatch(/last run: sync #\d+ failed/);
    expect(leaks("status stdout", status.out)).toEqual([]);
    const files = stateFiles(db);
    expect(files).toContain("<td>Basic [REDACTED]</td>");
    expect(leaks("the state DB", files)).toEqual([]);
  });

  it("set-password whose requests get the page: the one-time password's Bearer", async () => {
    sim.faults = { errorRate: 1, endpoints: ["set_password"], echoHeaders: "html" };
    const env = envOf(tempStateDb(), {
      ENERGY_API_USER: OTP_USER,
      ENERGY_API_OTP: OTP,
      ENERGY_API_PASSWORD: "a-new-password-77",
    });
    const failed = await runChild(["set-password", "--user", OTP_USER], env);
    expect(failed.code).toBe(1);
    expect(failed.err).toContain(`<td>Bearer ${CENSOR}</td>`);
    expect(leaks("set-password stderr", failed.err)).toEqual([]);
  });

  it("run: /readyz while the token requests get the page", async () => {
    sim.faults = { errorRate: 1, endpoints: ["create_token"], echoHeaders: "html" };
    const port = await freePort();
    const db = tempStateDb();
    const env = envOf(db, {
      HTTP_PORT: String(port),
      SYNC_CRON: "0 0 1 1 *",
      READY_FAILED_SYNCS: "1",
    });
    const child = spawn(process.execPath, [builtCli(), "run"], {
      cwd: NO_ENV_DIR,
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exit = trackExit(child);
    const err = collect(child.stderr);
    let readyz = "";
    try {
      await waitUntil(() => err().includes('"msg":"sync failed"'), "the first sync of run", {
        timeoutMs: COMMAND_MS,
        intervalMs: 20,
        stopIf: exit.exited,
      });
      const res = await fetch(`http://127.0.0.1:${port}/readyz`, {
        signal: AbortSignal.timeout(5_000),
      });
      readyz = `${res.status} ${await res.text()}`;
    } finally {
      child.kill("SIGTERM");
    }
    await exit.wait(COMMAND_MS, "energy-etl run after SIGTERM");
    expect(readyz).toMatch(/^503 /);
    expect(readyz).toContain("<td>Basic [REDACTED]</td>");
    expect(leaks("/readyz", readyz)).toEqual([]);
    expect(leaks("run stderr", err())).toEqual([]);
  });
});
