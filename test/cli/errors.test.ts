/**
 * Errors with a next step: each message is checked word for word, against the real simulator
 * over loopback where the API is involved.
 */
import { dirname } from "node:path";
import { runCli } from "../../src/cli.js";
import type { Simulator } from "../../src/simulator/server.js";
import { bufferIo } from "../support/cli-io.js";
import { freePort } from "../support/influxd.js";
import { tempStateDb } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";

describe("errors that say what to do", () => {
  let sim: Simulator;
  let stateDb: string;
  const env = (extra: Record<string, string> = {}) => ({
    ENERGY_API_URL: sim.url,
    ENERGY_API_KEY: sim.apiKey,
    ENERGY_API_USER: "demo",
    ENERGY_API_PASSWORD: "demo-password",
    STATE_DB: stateDb,
    API_RETRIES: "0",
    LOG_LEVEL: "warn",
    ...extra,
  });

  beforeAll(async () => {
    sim = await startTestSimulator();
    stateDb = tempStateDb();
  });
  afterAll(async () => {
    await sim.close();
  });

  async function run(argv: string[], extra: Record<string, string> = {}) {
    const io = bufferIo(env(extra));
    const code = await runCli(argv, io);
    return { code, out: io.out(), err: io.err() };
  }

  it("every failure starts the same way: a configuration error, commander's usage error, a runtime failure, an API error", async () => {
    const failures = [
      await run(["devices"], { ENERGY_API_URL: "127.0.0.1:8099" }),
      await run(["sync", "--devise", "x"]),
      await run(["backfill", "--device", "hybrid-site-1", "--from", "P1D", "--dry-run"]),
      await run(["devices"], { ENERGY_API_PASSWORD: "wrong" }),
    ];
    expect(failures.map(({ code }) => code)).toEqual([2, 2, 1, 1]);
    for (const { out, err } of failures) {
      expect(out).toBe("");
      expect(err).toMatch(/^energy-etl: error: \S/);
      // one prefix, once: not `error: error:` nor commander's bare `error:` on a later line
      expect(err.match(/error: /g)).toHaveLength(1);
    }
  });

  it("a typo in a command: one line, a suggestion and where to read more", async () => {
    expect(await run(["synk"])).toEqual({
      code: 2,
      out: "",
      err: "energy-etl: error: unknown command 'synk'\n(Did you mean sync?)\n(see energy-etl --help)\n",
    });
  });

  it("a typo in a flag: one line, a suggestion and the command's help", async () => {
    expect(await run(["sync", "--devise", "x"])).toEqual({
      code: 2,
      out: "",
      err: "energy-etl: error: unknown option '--devise'\n(Did you mean --device?)\n(see energy-etl sync --help)\n",
    });
  });

  it("a wrong password names the settings and set-password", async () => {
    const { code, err } = await run(["devices"], { ENERGY_API_PASSWORD: "wrong" });
    expect(code).toBe(1);
    expect(err).toBe(
      "energy-etl: error: API auth_failed: POST /create_token refused the credentials (HTTP 401): invalid username or password\n" +
        "  check ENERGY_API_KEY, ENERGY_API_USER (--api-user) and ENERGY_API_PASSWORD; on a first start, set the password with your one-time password: energy-etl set-password\n",
    );
  });

  it("https:// against a plain-HTTP server says so, without OpenSSL's words", async () => {
    const { code, err } = await run(["devices"], {
      ENERGY_API_URL: sim.url.replace("http://", "https://"),
    });
    expect(code).toBe(1);
    expect(err).toBe(
      "energy-etl: error: API network: POST /create_token failed: the TLS handshake failed, so the server at that address does not speak https: use http:// in the URL (or check the port)\n",
    );
  });

  it("a refused connection to the API says to check ENERGY_API_URL, naming the URL", async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const { code, err } = await run(["devices"], { ENERGY_API_URL: url });
    expect(code).toBe(1);
    expect(err.split("\n")).toEqual([
      expect.stringMatching(
        /^energy-etl: error: API network: POST \/create_token failed \(ECONNREFUSED\): /,
      ),
      `  check ENERGY_API_URL (is the API reachable at ${url}?)`,
      "",
    ]);
  });

  it("a host name that does not resolve says to check ENERGY_API_URL, naming the URL", async () => {
    const url = "http://no-such-host.invalid:8099";
    const { code, err } = await run(["devices"], { ENERGY_API_URL: url });
    expect(code).toBe(1);
    expect(err.split("\n")).toEqual([
      expect.stringMatching(/^energy-etl: error: API network: POST \/create_token failed \(E/),
      `  check ENERGY_API_URL (is the API reachable at ${url}?)`,
      "",
    ]);
  });

  it("backfill --dry-run needs no INFLUX_URL and opens no output", async () => {
    const { code, out, err } = await run(
      ["backfill", "--device", "audit-box-03", "--from", "-1d", "--dry-run"],
      { LOG_LEVEL: "info", INFLUX_URL: "", OUTPUT_FILE: "" },
    );
    expect(code).toBe(0);
    expect(out).toMatch(/\(dry run: nothing fetched\)/);
    expect(err).not.toMatch(/writing line protocol/);
    // the catalog is read, nothing else is logged at info (no sink opened)
    expect(err.split("\n").filter((l) => l.includes('"msg"') && !/migration/.test(l))).toEqual([]);
  });

  it("an unknown device suggests a close one", async () => {
    const { code, err } = await run([
      "backfill",
      "--device",
      "hybrid-site-1",
      "--from",
      "P1D",
      "--dry-run",
    ]);
    expect(code).toBe(1);
    expect(err).toBe(
      "energy-etl: error: unknown device: hybrid-site-1 (did you mean hybrid-site-01?) (see energy-etl devices)\n",
    );
  });

  it("a value id given by its measurement name suggests the whole id", async () => {
    const { code, err } = await run([
      "backfill",
      "--device",
      "hybrid-site-01",
      "--from",
      "-1d",
      "--values",
      "total_solar_power",
      "--dry-run",
    ]);
    expect(code).toBe(1);
    expect(err).toBe(
      "energy-etl: error: unknown value id for these devices: total_solar_power (did you mean e_03_01_00_000_total_solar_power?) (see energy-etl values DEVICE)\n",
    );
  });

  it("durations are times before now wherever a time is taken", async () => {
    for (const from of ["P30D", "-30d", "PT6H", "-12h"]) {
      const { code, err } = await run([
        "backfill",
        "--device",
        "audit-box-03",
        "--from",
        from,
        "--dry-run",
      ]);
      expect({ from, code, err }).toEqual({ from, code: 0, err: "" });
    }
  });

  it("a future --from says so, without naming a --to that was never given", async () => {
    const { code, err } = await run(["backfill", "--all", "--from", "2999-01-01"]);
    expect(code).toBe(2);
    expect(err).toBe(
      "energy-etl: error: --from 2999-01-01 is in the future: there is no data after now\n" +
        "(see energy-etl backfill --help)\n",
    );
  });

  it("an option the command cannot do without points at the command's help, as commander's own errors do", async () => {
    const { code, err } = await run(["backfill", "--from", "-1d"]);
    expect(code).toBe(2);
    expect(err).toBe(
      "energy-etl: error: give --device ID ... or --all\n(see energy-etl backfill --help)\n",
    );
    const sub = await run(["dead-letters", "show", "x"]);
    expect(sub.code).toBe(2);
    expect(sub.err).toMatch(/\(see energy-etl dead-letters show --help\)\n$/);
  });

  it("a read-only command on a missing state file does not create one", async () => {
    const typo = `${dirname(stateDb)}/stat.db`;
    const { code, err } = await run(["status", "--state-db", typo]);
    expect(code).toBe(2);
    expect(err).toBe(
      `energy-etl: error: STATE_DB ${typo} does not exist (a typo?): sync, backfill, run or migrate create it\n`,
    );
  });

  it("a URL without its scheme is reported once", async () => {
    const { code, err } = await run(["devices"], { ENERGY_API_URL: "127.0.0.1:8099" });
    expect(code).toBe(2);
    expect(err.match(/ENERGY_API_URL/g)).toHaveLength(2);
    expect(
      err.split("\n").filter((l) => l.includes("http:// or https:// is missing")),
    ).toHaveLength(1);
  });
});
