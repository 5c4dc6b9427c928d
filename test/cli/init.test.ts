import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CliIo } from "../../src/cli/io.js";
import { runCli } from "../../src/cli.js";
import { DEFAULT_SIM_USERS, type Simulator } from "../../src/simulator/server.js";
import { bufferIo } from "../support/cli-io.js";
import { clientFor, startTestSimulator } from "../support/simulator.js";
import { readEnv, terminalIo } from "./init/terminal-io.js";

/** Runs `energy-etl ARGV` in-process. */
const cli = (argv: readonly string[], io: CliIo): Promise<number> => runCli(argv, io);

const ENV_KEYS = [
  "ENERGY_API_URL",
  "ENERGY_API_KEY",
  "ENERGY_API_USER",
  "ENERGY_API_PASSWORD",
  "INFLUX_ADMIN_USER",
  "INFLUX_ADMIN_PASSWORD",
  "INFLUX_TOKEN",
  "INFLUX_ORG",
  "INFLUX_BUCKET",
  "ROLLUP_BUCKET",
  "GRAFANA_ADMIN_USER",
  "GRAFANA_ADMIN_PASSWORD",
];
const RANDOM_KEYS = ["INFLUX_ADMIN_PASSWORD", "INFLUX_TOKEN", "GRAFANA_ADMIN_PASSWORD"];
const API_KEY = "init-key-7f3a9c";
const PASSWORD = "Pw-init-51e8d";
const OTP_USER = DEFAULT_SIM_USERS.find((u) => u.otp !== undefined);

describe("init", () => {
  let sim: Simulator;
  let dir: string;
  beforeEach(async () => {
    sim = await startTestSimulator({
      apiKey: API_KEY,
      users: [...DEFAULT_SIM_USERS, { user: "ops", password: PASSWORD }],
    });
    dir = mkdtempSync(join(tmpdir(), "energy-etl-init-"));
  });
  afterEach(async () => {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The flags of an init off a terminal; the secrets come from {@link secrets}. */
  const flags = (envFile: string) => [
    "init",
    "--api-url",
    sim.url,
    "--user",
    "ops",
    "--env-path",
    envFile,
  ];
  /** The secrets, in the environment (no flag takes one). */
  const secrets = (password = PASSWORD) => ({
    ENERGY_API_KEY: API_KEY,
    ENERGY_API_PASSWORD: password,
  });

  it("off a terminal (flags, secrets in the environment): checks the API, writes .env 0600 with fresh secrets, prints none", async () => {
    const first = join(dir, "first.env");
    const io = bufferIo({ LOG_LEVEL: "debug", ...secrets() });
    const code = await cli(flags(first), io);
    expect(io.err()).not.toMatch(/error/i);
    expect(code).toBe(0);

    const vars = readEnv(first);
    expect(Object.keys(vars)).toEqual(ENV_KEYS);
    expect(vars).toMatchObject({
      ENERGY_API_URL: sim.url,
      ENERGY_API_KEY: API_KEY,
      ENERGY_API_USER: "ops",
      ENERGY_API_PASSWORD: PASSWORD,
      INFLUX_ADMIN_USER: "admin",
      INFLUX_ORG: "energy",
      INFLUX_BUCKET: "energy",
      ROLLUP_BUCKET: "energy/rollups",
      GRAFANA_ADMIN_USER: "admin",
    });
    for (const key of RANDOM_KEYS) expect(vars[key]).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(new Set(RANDOM_KEYS.map((k) => vars[k])).size).toBe(3);
    expect(statSync(first).mode & 0o777).toBe(0o600);

    const devices = sim.fleet.deviceIds();
    expect(io.out()).toContain(`API: ${sim.url} as ops`);
    expect(io.out()).toContain("Token: created, the credentials work.");
    expect(io.out()).toContain(`Devices: ${devices.length} (${devices.slice(0, 5).join(", ")}`);
    expect(io.out()).toContain(`Wrote ${first} (mode 0600): ${ENV_KEYS.join(", ")}.`);
    expect(sim.count("create_token", 200)).toBe(1);
    expect(sim.count("set_password")).toBe(0);

    const second = join(dir, "second.env");
    const io2 = bufferIo(secrets());
    expect(await cli(flags(second), io2)).toBe(0);
    const vars2 = readEnv(second);
    for (const key of RANDOM_KEYS) expect(vars2[key]).not.toBe(vars[key]);

    for (const secret of [API_KEY, PASSWORD, ...RANDOM_KEYS.flatMap((k) => [vars[k], vars2[k]])]) {
      if (secret === undefined) throw new Error("a secret is missing");
      for (const text of [io.out(), io.err(), io2.out(), io2.err()]) {
        expect(text).not.toContain(secret);
      }
    }
  });

  it("refuses an existing file without --force, before any request; replaces it with --force", async () => {
    const path = join(dir, ".env");
    writeFileSync(path, "KEEP=me\n", { mode: 0o644 });
    const io = bufferIo(secrets());
    expect(await cli(flags(path), io)).toBe(2);
    expect(io.err()).toContain(`energy-etl: error: ${path} exists; use --force to replace it`);
    expect(readFileSync(path, "utf8")).toBe("KEEP=me\n");
    expect(sim.count()).toBe(0);

    // the settings may come from the environment too
    const forced = bufferIo({ ENERGY_API_URL: sim.url, ...secrets() });
    const argv = ["init", "--user", "ops", "-f", path, "--force"];
    expect(await cli(argv, forced)).toBe(0);
    expect(forced.out()).toContain(`Wrote ${path} (mode 0600, replaced)`);
    expect(forced.err()).toContain("the InfluxDB and Grafana secrets are new");
    const vars = readEnv(path);
    expect(vars.KEEP).toBeUndefined();
    expect(vars.ENERGY_API_KEY).toBe(API_KEY);
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it("a wrong password: exit 1, which settings to check and ENERGY_API_OTP for a first start; no file", async () => {
    const path = join(dir, ".env");
    const io = bufferIo(secrets("not-the-password-1"));
    expect(await cli(flags(path), io)).toBe(1);
    expect(io.err()).toBe(
      "energy-etl: error: API auth_failed: POST /create_token refused the credentials " +
        "(HTTP 401): invalid username or password. The API refused the credentials: check the " +
        "API key (ENERGY_API_KEY), the user (--user or ENERGY_API_USER) and the password " +
        "(ENERGY_API_PASSWORD). On a first start, with the one-time password you were given, " +
        "run init with ENERGY_API_OTP set (or answer y on a terminal) to set the password " +
        "first.\n",
    );
    expect(io.out()).not.toContain("Wrote");
    expect(existsSync(path)).toBe(false);
  });

  it("ENERGY_API_OTP on a first start sets the password, then a token works with it", async () => {
    if (!OTP_USER?.otp) throw new Error("DEFAULT_SIM_USERS has no one-time password user");
    const path = join(dir, ".env");
    const newPassword = "New-Pa55-word";
    const io = bufferIo({ ...secrets(newPassword), ENERGY_API_OTP: OTP_USER.otp });
    const argv = ["init", "--api-url", sim.url, "--user", OTP_USER.user, "--env-path", path];
    expect(await cli(argv, io)).toBe(0);
    expect(io.out()).toContain(`Password set for ${OTP_USER.user} with the one-time password.`);
    expect(io.out()).toContain("Token: created");
    expect(sim.count("set_password", 200)).toBe(1);
    expect(readEnv(path).ENERGY_API_PASSWORD).toBe(newPassword);
    expect(io.out() + io.err()).not.toContain(newPassword);

    const { client } = clientFor(sim, {
      apiKey: API_KEY,
      user: OTP_USER.user,
      password: newPassword,
    });
    await expect(client.accessToken()).resolves.toEqual(expect.any(String));
  });

  it("a wrong one-time password: set-password's advice, no token asked for, no file", async () => {
    const path = join(dir, ".env");
    const io = bufferIo({ ...secrets(), ENERGY_API_OTP: "wrong-otp-1" });
    const argv = flags(path);
    argv[4] = "demo";
    expect(await cli(argv, io)).toBe(1);
    expect(io.err()).toContain(
      "The API refused the one-time password: it is wrong, expired or already used (it works " +
        "once). Ask for a new one and run init again with it (ENERGY_API_OTP or the prompt).",
    );
    expect(io.err()).not.toContain("check ENERGY_API_KEY");
    expect(io.err()).not.toContain("wrong-otp-1");
    expect(sim.count("create_token")).toBe(0);
    expect(existsSync(path)).toBe(false);
  });

  it("off a terminal a missing value is a usage error naming where it goes", async () => {
    const path = join(dir, ".env");
    const io = bufferIo();
    expect(await cli(["init", "--api-url", sim.url, "--env-path", path], io)).toBe(2);
    expect(io.err()).toContain(
      "no API key: set ENERGY_API_KEY (stdin is not a terminal, so init cannot ask)",
    );
    const noUser = bufferIo({ ENERGY_API_KEY: API_KEY });
    expect(await cli(["init", "--api-url", sim.url, "--env-path", path], noUser)).toBe(2);
    expect(noUser.err()).toContain("no API user: pass --user or set ENERGY_API_USER");
    const noPassword = bufferIo({ ENERGY_API_KEY: API_KEY });
    const argv = ["init", "--api-url", sim.url, "-u", "ops"];
    expect(await cli([...argv, "--env-path", path], noPassword)).toBe(2);
    expect(noPassword.err()).toContain(
      "no API password: set ENERGY_API_PASSWORD; on a first start also ENERGY_API_OTP with " +
        "the one-time password",
    );
    expect(sim.count()).toBe(0);
  });

  it.each([
    ["--api-key", "ENERGY_API_KEY"],
    ["--password", "ENERGY_API_PASSWORD"],
    ["--otp", "ENERGY_API_OTP"],
  ])(
    "%s is refused in one line saying where the secret goes, before any request",
    async (flag, env) => {
      const path = join(dir, ".env");
      const io = bufferIo(secrets());
      expect(await cli([...flags(path), flag, "flag-secret-5d9a"], io)).toBe(2);
      expect(io.err()).toBe(
        `energy-etl: error: ${flag} is not taken: a secret on the command line shows in the ` +
          `shell history and in ps. Set ${env} in the environment or the .env file, or leave it ` +
          "out and init asks on a terminal\n",
      );
      expect(io.out()).toBe("");
      expect(sim.count()).toBe(0);
      expect(existsSync(path)).toBe(false);
    },
  );

  it.each([
    ["ftp://host:21", "--api-url must be an http(s) URL such as http://host:port"],
    ["api.example.com", "(http:// or https:// is missing in front)"],
    ["https://bob:secret@api.example.com", "--api-url must not hold credentials (https://***@"],
  ])("refuses --api-url %s before any request", async (url, message) => {
    const io = bufferIo();
    const argv = [...flags(join(dir, ".env"))];
    argv[2] = url;
    expect(await cli(argv, io)).toBe(2);
    expect(io.err()).toContain(message);
    expect(io.err()).not.toContain("secret@");
    expect(sim.count()).toBe(0);
  });

  it("refuses a value a .env line cannot hold", async () => {
    const io = bufferIo(secrets("it's\\bad"));
    expect(await cli(flags(join(dir, ".env")), io)).toBe(2);
    expect(io.err()).toContain("ENERGY_API_PASSWORD must not hold ' or \\");
    expect(sim.count()).toBe(0);
  });

  it("on a terminal it asks, with the one-time password question, and writes the answers", async () => {
    if (!OTP_USER?.otp) throw new Error("DEFAULT_SIM_USERS has no one-time password user");
    const path = join(dir, ".env");
    // the answers, in the order of the prompts
    const io = terminalIo([
      "", // compose: the default
      "ftp://wrong", // refused: asked again
      sim.url,
      API_KEY,
      OTP_USER.user,
      "y",
      OTP_USER.otp,
      "Typed-Pa55",
      "Typed-Pa55",
    ]);
    expect(await cli(["init", "--env-path", path], io)).toBe(0);
    expect(io.prompts()).toEqual([
      "InfluxDB: the compose stack's (compose) or one you have (existing)? [compose/existing] ",
      "API URL: ",
      "API URL: ",
      "API key: ",
      "API user: ",
      "First start, with a one-time password to set the API password? [y/N] ",
      "One-time password: ",
      "New API password: ",
      "Repeat the new password: ",
    ]);
    expect(io.err()).toContain("the API URL must be an http(s) URL");
    // compose, as before: the stack's accounts with fresh secrets
    expect(Object.keys(readEnv(path))).toEqual(ENV_KEYS);
    expect(readEnv(path)).toMatchObject({
      ENERGY_API_URL: sim.url,
      ENERGY_API_USER: OTP_USER.user,
      ENERGY_API_PASSWORD: "Typed-Pa55",
    });
    expect(sim.count("set_password", 200)).toBe(1);
  });
});
