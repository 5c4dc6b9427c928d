/**
 * The env file: `./.env` of the working directory (or `--env-path FILE`) is read by every
 * command, below the real environment; `config --sources` says where each setting came from.
 * In-process with the working directory injected (io.cwd), and the built CLI as a child process
 * for `init` then `devices` in one folder.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../../src/cli.js";
import { SETTINGS } from "../../src/config.js";
import { DEFAULT_SIM_USERS, type Simulator } from "../../src/simulator/server.js";
import { killCliChildren, spawnCli } from "../support/cli-child.js";
import { bufferIo } from "../support/cli-io.js";
import { startTestSimulator } from "../support/simulator.js";

const API_KEY = "env-file-key-3c1d";
const PASSWORD = "Env-file-Pa55";
const OTP_USER = DEFAULT_SIM_USERS.find((u) => u.otp !== undefined);
/** The API settings a child would otherwise inherit from the test's own environment: unset. */
const NO_API_ENV = {
  ENERGY_API_URL: "",
  ENERGY_API_KEY: "",
  ENERGY_API_USER: "",
  ENERGY_API_PASSWORD: "",
  ENERGY_API_OTP: "",
};

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "energy-etl-env-file-"));
});
afterEach(async () => {
  await killCliChildren();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs `energy-etl ARGV` in-process with `dir` as the working directory. */
async function run(argv: string[], env: Record<string, string> = {}, cwd = dir) {
  const io = bufferIo(env, cwd);
  const code = await runCli(argv, io);
  return { code, out: io.out(), err: io.err() };
}

describe("init, then the next command in the same folder", () => {
  let sim: Simulator;
  beforeEach(async () => {
    sim = await startTestSimulator({
      apiKey: API_KEY,
      users: [...DEFAULT_SIM_USERS, { user: "ops", password: PASSWORD }],
    });
  });
  afterEach(() => sim.close());

  /** The built CLI in `dir`; resolves with its exit and output. */
  async function child(args: string[], env: Record<string, string>) {
    const cli = spawnCli(args, { ...NO_API_ENV, LOG_LEVEL: "warn", ...env }, { cwd: dir });
    const { code } = await cli.wait(20_000, `energy-etl ${args.join(" ")}`);
    return { code, out: cli.stdout(), err: cli.stderr() };
  }

  it("devices works from the .env init wrote; outside a checkout the next step is the CLI", async () => {
    const init = await child(["init"], {
      ENERGY_API_URL: sim.url,
      ENERGY_API_KEY: API_KEY,
      ENERGY_API_USER: "ops",
      ENERGY_API_PASSWORD: PASSWORD,
    });
    expect(init.err).toBe("");
    expect(init.code).toBe(0);
    expect(init.out).toContain("Wrote ./.env (mode 0600)");
    expect(init.out).toContain(
      "Next: energy-etl devices (it reads ./.env in this folder); before energy-etl run, set " +
        "INFLUX_URL, INFLUX_TOKEN, INFLUX_ORG and INFLUX_BUCKET of your InfluxDB in ./.env (or " +
        "OUTPUT_FILE for a file).\n",
    );
    expect(init.out).not.toContain("docker compose");

    const devices = await child(["devices", "--json"], {});
    expect(devices.err).toBe("");
    expect(devices.code).toBe(0);
    expect(JSON.parse(devices.out)).toEqual({ device_ids: sim.fleet.deviceIds() });
  });

  it("beside docker-compose.yml the next step is docker compose", async () => {
    writeFileSync(join(dir, "docker-compose.yml"), "services: {}\n");
    const { code, out } = await run(["init"], {
      ENERGY_API_URL: sim.url,
      ENERGY_API_KEY: API_KEY,
      ENERGY_API_USER: "ops",
      ENERGY_API_PASSWORD: PASSWORD,
    });
    expect(code).toBe(0);
    expect(out).toContain("Next: docker compose up -d\n");
  });

  it("after init set the password with the one-time password, it says set-password is done", async () => {
    if (!OTP_USER?.otp) throw new Error("DEFAULT_SIM_USERS has no one-time password user");
    const { code, out } = await run(["init"], {
      ENERGY_API_URL: sim.url,
      ENERGY_API_KEY: API_KEY,
      ENERGY_API_USER: OTP_USER.user,
      ENERGY_API_OTP: OTP_USER.otp,
      ENERGY_API_PASSWORD: "New-Pa55-env",
    });
    expect(code).toBe(0);
    expect(out).toContain(
      `The password of ${OTP_USER.user} is set (the one-time password is used up): ` +
        "set-password is not needed.",
    );
    expect(sim.count("set_password", 200)).toBe(1);
  });
});

describe("where settings come from", () => {
  const configFile = () => {
    const file = join(dir, "config.json");
    writeFileSync(
      file,
      JSON.stringify({
        http: { port: 9004 },
        sync: { cron: "10 * * * *" },
        api: { concurrency: 5, retries: 2 },
      }),
    );
    return file;
  };

  it("flags > environment > .env > config file > defaults, shown by config --sources", async () => {
    writeFileSync(
      join(dir, ".env"),
      [
        "# a comment",
        "HTTP_PORT=9003",
        "SYNC_CRON='5 * * * *'",
        "API_CONCURRENCY=3",
        "ENERGY_API_KEY=dotenv-secret-9f2e",
        "NOT_A_SETTING=ignored",
        "",
      ].join("\n"),
    );
    const env = { HTTP_PORT: "9002", SYNC_CRON: "0 * * * *" };
    const argv = ["--config", configFile(), "--http-port", "9001", "config", "--sources"];
    const json = await run([...argv, "--json"], env);
    expect(json.err).toBe("");
    expect(json.code).toBe(0);
    const rows = JSON.parse(json.out) as { setting: string; value: string; from: string }[];
    const row = (setting: string) => rows.find((r) => r.setting === setting);
    expect(row("HTTP_PORT")).toEqual({
      setting: "HTTP_PORT",
      path: "http.port",
      value: "9001",
      from: "flag --http-port",
    });
    expect(row("SYNC_CRON")).toMatchObject({ value: "0 * * * *", from: "environment SYNC_CRON" });
    expect(row("API_CONCURRENCY")).toMatchObject({ value: "3", from: ".env file ./.env" });
    expect(row("ENERGY_API_KEY")).toMatchObject({ value: "[set]", from: ".env file ./.env" });
    expect(row("API_RETRIES")).toMatchObject({
      value: "2",
      from: `config file ${join(dir, "config.json")}`,
    });
    expect(row("LOG_LEVEL")).toMatchObject({ value: "info", from: "default" });
    expect(rows.map((r) => r.setting)).toEqual(SETTINGS.map((s) => s.env));
    expect(json.out).not.toContain("dotenv-secret-9f2e");

    // the table says the same, and `config` shows the merged values
    const table = await run(argv, env);
    expect(table.out).toMatch(/^API_CONCURRENCY\t3\t\.env file \.\/\.env$/m);
    expect(table.out).toMatch(/^SYNC_CRON\t0 \* \* \* \*\tenvironment SYNC_CRON$/m);
    const shown = await run(["--config", configFile(), "config"], env);
    expect(JSON.parse(shown.out)).toMatchObject({
      api: { concurrency: 3, retries: 2, key: "[set]" },
      sync: { cron: "0 * * * *" },
      http: { port: 9002 },
    });
    // nothing of the file reached the process's own environment
    expect(process.env.NOT_A_SETTING).toBeUndefined();
    expect(process.env.API_CONCURRENCY).toBeUndefined();
  });

  it("--env-path FILE is read instead of ./.env and named as the source", async () => {
    writeFileSync(join(dir, ".env"), "API_CONCURRENCY=3\n");
    const other = join(dir, "prod.env");
    writeFileSync(other, "API_CONCURRENCY=6\n");
    const { code, out } = await run(["--env-path", other, "config", "--sources", "--json"]);
    expect(code).toBe(0);
    const rows = JSON.parse(out) as { setting: string; value: string; from: string }[];
    expect(rows.find((r) => r.setting === "API_CONCURRENCY")).toMatchObject({
      value: "6",
      from: `.env file ${other}`,
    });
  });

  it("a missing --env-path file is a usage error; a missing ./.env is no error", async () => {
    const missing = join(dir, "nope.env");
    expect(await run(["config", "--env-path", missing])).toEqual({
      code: 2,
      out: "",
      err: `energy-etl: error: --env-path ${missing}: no such file\n`,
    });
    const fine = await run(["config"]);
    expect(fine.code).toBe(0);
    expect(JSON.parse(fine.out)).toMatchObject({ api: { concurrency: 4 } });
  });

  it("an invalid value in .env names the file as its source", async () => {
    writeFileSync(join(dir, ".env"), "SYNC_CRON=whenever\n");
    const { code, err } = await run(["config"]);
    expect(code).toBe(2);
    expect(err).toContain(
      "SYNC_CRON (sync.cron, from .env file ./.env): must be a cron expression such as */5 * * * *",
    );
  });
});
