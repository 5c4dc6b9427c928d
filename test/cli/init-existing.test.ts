/**
 * `init --influx existing`: an InfluxDB the operator has, against the real influxd of jest's
 * global setup: 1.6.7 itself (the v1 write path, no auth) and its v2-path front (token auth).
 */
import { randomBytes } from "node:crypto";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../../src/cli.js";
import { DEFAULT_SIM_USERS, type Simulator } from "../../src/simulator/server.js";
import { bufferIo } from "../support/cli-io.js";
import {
  freePort,
  influxql,
  startInfluxFront,
  TEST_INFLUX_ORG,
  TEST_INFLUX_TOKEN,
} from "../support/influxd.js";
import { startTestSimulator } from "../support/simulator.js";
import { tempDir } from "../support/temp-dir.js";
import { readEnv, terminalIo } from "./init/terminal-io.js";

const API_KEY = "init-key-e61b";
const PASSWORD = "Pw-init-3c7d";
const API_KEYS = ["ENERGY_API_URL", "ENERGY_API_KEY", "ENERGY_API_USER", "ENERGY_API_PASSWORD"];

function influxUrls() {
  const { TEST_INFLUX_URL: front, TEST_INFLUX_RAW_URL: direct } = process.env;
  if (!front || !direct) throw new Error("no test influxd: jest's globalSetup starts it");
  return { front, direct };
}

/** The retention policies of `db` as influxd lists them: name -> [duration, shard duration]. */
async function policies(db: string): Promise<Record<string, [unknown, unknown]>> {
  const answer = await influxql(influxUrls().direct, "", `SHOW RETENTION POLICIES ON "${db}"`);
  const series = answer.results?.[0]?.series?.[0];
  if (!series) return {};
  const at = (name: string) => series.columns.indexOf(name);
  return Object.fromEntries(
    series.values.map((row) => [
      row[at("name")],
      [row[at("duration")], row[at("shardGroupDuration")]],
    ]),
  );
}

describe("init --influx existing", () => {
  let sim: Simulator;
  let dir: string;
  const databases: string[] = [];
  /** A database name of this test, dropped after it. */
  const newDatabase = () => {
    const db = `init_existing_${randomBytes(4).toString("hex")}`;
    databases.push(db);
    return db;
  };
  beforeEach(async () => {
    sim = await startTestSimulator({
      apiKey: API_KEY,
      users: [...DEFAULT_SIM_USERS, { user: "ops", password: PASSWORD }],
    });
    dir = tempDir("energy-etl-init-existing-");
  });
  afterEach(async () => {
    await sim.close();
    for (const db of databases.splice(0)) {
      await influxql(influxUrls().direct, "", `DROP DATABASE "${db}"`);
    }
  });

  const apiFlags = (envFile: string) =>
    ["init", "--api-url", sim.url, "--user", "ops", "--env-path", envFile] as const;
  const secrets = { ENERGY_API_KEY: API_KEY, ENERGY_API_PASSWORD: PASSWORD };
  /** init for an existing InfluxDB written on /api/v2/write (the tests' front), token and org. */
  const v2Flags = (envFile: string, url: string, db: string) => [
    ...apiFlags(envFile),
    "--influx=existing",
    `--influx-url=${url}`,
    "--influx-api=v2",
    `--influx-org=${TEST_INFLUX_ORG}`,
    `--influx-bucket=${db}`,
  ];

  it("1.x (v1 write path, no auth): makes the database and its rollups policy, checks a write and a read, writes only its settings", async () => {
    const db = newDatabase();
    const path = join(dir, ".env");
    const { direct } = influxUrls();
    const argv = [...apiFlags(path), "--influx", "existing", "--influx-url", direct];
    const io = bufferIo(secrets);
    expect(await runCli([...argv, "--influx-bucket", db], io)).toBe(0);
    expect(io.err()).toBe("");

    // the oracle: influxd's own listing
    expect(await policies(db)).toEqual({
      autogen: ["0s", "168h0m0s"],
      rollups: ["0s", "87360h0m0s"],
    });
    const out = io.out();
    expect(out).toMatch(
      /^InfluxDB: http:\/\/127\.0\.0\.1:\d+, version 1\.\d+\.\d+\S*: writes through \/write\?db=&rp= \(1\.x\)$/m,
    );
    for (const line of [
      `Database ${db}: ok, created`,
      `Retention policy ${db}/rollups: ok, created (infinite, shard groups of 520w)`,
      `Write to ${db}: ok, an empty write, nothing stored`,
      `Write to ${db}/rollups: ok, an empty write, nothing stored`,
      `Read ${db}: ok, SHOW MEASUREMENTS: 0`,
      "Token: created, the credentials work.",
    ]) {
      expect(out).toContain(`${line}\n`);
    }
    const vars = readEnv(path);
    expect(vars).toEqual({
      ENERGY_API_URL: sim.url,
      ENERGY_API_KEY: API_KEY,
      ENERGY_API_USER: "ops",
      ENERGY_API_PASSWORD: PASSWORD,
      INFLUX_URL: direct,
      INFLUX_BUCKET: db,
      ROLLUP_BUCKET: `${db}/rollups`,
    });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(out).toContain(`Wrote ${path} (mode 0600): ${Object.keys(vars).join(", ")}.`);

    // the file is a configuration every later command takes
    const config = bufferIo();
    expect(await runCli(["config", "--env-path", path], config)).toBe(0);
    expect(config.out()).toContain(`"bucket": "${db}/rollups"`);

    // the empty writes stored nothing
    expect(await influxql(direct, db, "SHOW MEASUREMENTS")).toEqual({
      results: [{ statement_id: 0 }],
    });

    // again: both found, kept; nothing else changed
    const again = bufferIo(secrets);
    expect(await runCli([...argv, "--influx-bucket", db, "--force"], again)).toBe(0);
    expect(again.out()).toContain(`Database ${db}: ok, exists\n`);
    expect(again.out()).toContain(`Retention policy ${db}/rollups: ok, exists (kept as it is)\n`);
    expect(await policies(db)).toEqual({
      autogen: ["0s", "168h0m0s"],
      rollups: ["0s", "87360h0m0s"],
    });
  });

  it("1.8 (writes on /api/v2/write, set up as 1.x): no token asked, makes the database and policy, writes the user settings only", async () => {
    const db = newDatabase();
    const { front: proxy, direct } = influxUrls();
    const front = await startInfluxFront({ url: proxy, rawUrl: direct });
    try {
      const path = join(dir, "v18.env");
      const argv = [...apiFlags(path), "--influx", "existing", "--influx-url", front.url];
      const io = bufferIo(secrets);
      expect(await runCli([...argv, "--influx-bucket", db], io)).toBe(0);
      expect(io.err()).toBe("");
      const out = io.out();
      expect(out).toContain(
        `InfluxDB: ${front.url}, version 1.8.10: writes through /api/v2/write\n`,
      );
      for (const line of [
        `Database ${db}: ok, created`,
        `Retention policy ${db}/rollups: ok, created (infinite, shard groups of 520w)`,
        `Write to ${db}: ok, an empty write, nothing stored`,
        `Write to ${db}/rollups: ok, an empty write, nothing stored`,
        `Read ${db}: ok, SHOW MEASUREMENTS: 0`,
      ]) {
        expect(out).toContain(`${line}\n`);
      }
      expect(out).not.toContain("influx bucket create");
      // the oracle: influxd's own listing
      expect(await policies(db)).toEqual({
        autogen: ["0s", "168h0m0s"],
        rollups: ["0s", "87360h0m0s"],
      });
      expect(readEnv(path)).toEqual({
        ENERGY_API_URL: sim.url,
        ENERGY_API_KEY: API_KEY,
        ENERGY_API_USER: "ops",
        ENERGY_API_PASSWORD: PASSWORD,
        INFLUX_URL: front.url,
        INFLUX_BUCKET: db,
        ROLLUP_BUCKET: `${db}/rollups`,
      });
    } finally {
      await front.close();
    }
  });

  it("2.x path (INFLUX_API=v2, token): prints the bucket commands, checks a write and a read, writes the token and org", async () => {
    const db = newDatabase();
    const { front, direct } = influxUrls();
    await influxql(direct, "", `CREATE DATABASE "${db}"`);
    await influxql(
      direct,
      "",
      `CREATE RETENTION POLICY "rollups" ON "${db}" DURATION INF REPLICATION 1`,
    );
    const path = join(dir, "v2.env");
    const argv = [
      ...apiFlags(path),
      "--influx",
      "existing",
      "--influx-url",
      front,
      "--influx-api",
      "v2",
      "--influx-org",
      TEST_INFLUX_ORG,
      "--influx-bucket",
      db,
    ];
    const io = bufferIo({ ...secrets, INFLUX_TOKEN: TEST_INFLUX_TOKEN });
    expect(await runCli(argv, io)).toBe(0);
    const out = io.out();
    expect(out).toContain(`InfluxDB: ${front}: writes through /api/v2/write\n`);
    expect(out).toContain(
      `  influx bucket create --org ${TEST_INFLUX_ORG} --name ${db}/rollups --retention 0\n`,
    );
    expect(out).toContain(
      `  influx v1 dbrp create --org ${TEST_INFLUX_ORG} --db ${db} --rp rollups --bucket-id <the ID of ${db}/rollups>\n`,
    );
    expect(out).toContain(`Write to ${db}: ok`);
    expect(out).toContain(`Write to ${db}/rollups: ok`);
    expect(out).toContain(`Read ${db}: ok`);
    expect(readEnv(path)).toEqual({
      ENERGY_API_URL: sim.url,
      ENERGY_API_KEY: API_KEY,
      ENERGY_API_USER: "ops",
      ENERGY_API_PASSWORD: PASSWORD,
      INFLUX_URL: front,
      INFLUX_API: "v2",
      INFLUX_TOKEN: TEST_INFLUX_TOKEN,
      INFLUX_ORG: TEST_INFLUX_ORG,
      INFLUX_BUCKET: db,
      ROLLUP_BUCKET: `${db}/rollups`,
    });
    expect(out + io.err()).not.toContain(TEST_INFLUX_TOKEN);
  });

  it("2.x path, bucket not made yet: the write step fails with what to do, the file is written, exit 1", async () => {
    const db = newDatabase();
    const { front } = influxUrls();
    const path = join(dir, "missing.env");
    const argv = v2Flags(path, front, db);
    const io = bufferIo({ ...secrets, INFLUX_TOKEN: TEST_INFLUX_TOKEN });
    expect(await runCli(argv, io)).toBe(1);
    expect(io.out()).toMatch(
      new RegExp(
        `^Write to ${db}: failed: InfluxDB has no bucket ${db} \\(HTTP 404: .*\\): .* -> run the commands above, then energy-etl doctor$`,
        "m",
      ),
    );
    expect(io.err()).toContain(
      `InfluxDB is not ready (Write to ${db}; Write to ${db}/rollups failed): ${path} is written`,
    );
    expect(Object.keys(readEnv(path))).toEqual([
      ...API_KEYS,
      "INFLUX_URL",
      "INFLUX_API",
      "INFLUX_TOKEN",
      "INFLUX_ORG",
      "INFLUX_BUCKET",
      "ROLLUP_BUCKET",
    ]);
  });

  it("a wrong token: exit 1, says which setting to check, never the token; no file, nothing sent to the API", async () => {
    const db = newDatabase();
    const { front } = influxUrls();
    const path = join(dir, "wrong.env");
    const wrong = "wrong-influx-token-9d1e";
    const argv = v2Flags(path, front, db);
    const io = bufferIo({ ...secrets, INFLUX_TOKEN: wrong });
    expect(await runCli(argv, io)).toBe(1);
    expect(io.err()).toContain(
      `InfluxDB at ${front} refused the credentials (HTTP 401): check ` +
        "INFLUX_TOKEN (it needs write and read access); nothing was written",
    );
    expect(io.out() + io.err()).not.toContain(wrong);
    expect(existsSync(path)).toBe(false);
    expect(sim.count()).toBe(0);
  });

  it("an unreachable URL: exit 1, where to look; no file, nothing sent to the API", async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const path = join(dir, "down.env");
    const argv = [...apiFlags(path), "--influx", "existing", "--influx-url", url];
    const io = bufferIo(secrets);
    expect(await runCli(argv, io)).toBe(1);
    // one line (its prefix is runCli's)
    expect(io.err()).toMatch(
      new RegExp(
        `^energy-etl: \\w+: InfluxDB at ${url.replaceAll(".", "\\.")} is not reachable \\(ECONNREFUSED\\): check the ` +
          "InfluxDB URL \\(--influx-url or INFLUX_URL\\) and that InfluxDB is running; nothing " +
          "was written\n$",
      ),
    );
    expect(existsSync(path)).toBe(false);
    expect(sim.count()).toBe(0);
  });

  it("refuses --influx other than compose or existing, before any request", async () => {
    const io = bufferIo(secrets);
    expect(await runCli([...apiFlags(join(dir, "x.env")), "--influx", "docker"], io)).toBe(2);
    expect(io.err()).toContain("--influx must be compose or existing");
    expect(sim.count()).toBe(0);
  });

  it("on a terminal: asks compose or existing first, then the InfluxDB URL, a 1.x user and password, the database", async () => {
    const db = newDatabase();
    const { direct } = influxUrls();
    const path = join(dir, "asked.env");
    const influxPassword = "Influx-Pw-71a0";
    const io = terminalIo([
      "existing",
      sim.url,
      API_KEY,
      "ops",
      "n",
      PASSWORD,
      direct,
      "etl",
      influxPassword,
      db,
    ]);
    expect(await runCli(["init", "--env-path", path], io)).toBe(0);
    expect(io.prompts()).toEqual([
      "InfluxDB: the compose stack's (compose) or one you have (existing)? [compose/existing] ",
      "API URL: ",
      "API key: ",
      "API user: ",
      "First start, with a one-time password to set the API password? [y/N] ",
      "API password: ",
      "InfluxDB URL: ",
      "InfluxDB user (empty: no auth): ",
      "InfluxDB password: ",
      "InfluxDB database [energy]: ",
    ]);
    // influxd runs without auth: it takes any user (an InfluxDB with auth would check them)
    expect(readEnv(path)).toEqual({
      ENERGY_API_URL: sim.url,
      ENERGY_API_KEY: API_KEY,
      ENERGY_API_USER: "ops",
      ENERGY_API_PASSWORD: PASSWORD,
      INFLUX_URL: direct,
      INFLUX_USERNAME: "etl",
      INFLUX_PASSWORD: influxPassword,
      INFLUX_BUCKET: db,
      ROLLUP_BUCKET: `${db}/rollups`,
    });
    expect(Object.keys(await policies(db))).toEqual(["autogen", "rollups"]);
    expect(io.out() + io.err()).not.toContain(influxPassword);
    expect(io.out() + io.err()).not.toContain(PASSWORD);
  });

  it("on a terminal with the v2 API: asks the token (without echo) and the organisation", async () => {
    const db = newDatabase();
    const { front, direct } = influxUrls();
    await influxql(direct, "", `CREATE DATABASE "${db}"`);
    await influxql(
      direct,
      "",
      `CREATE RETENTION POLICY "rollups" ON "${db}" DURATION INF REPLICATION 1`,
    );
    const path = join(dir, "asked-v2.env");
    const answers = ["e", sim.url, API_KEY, "ops", "", PASSWORD, front, TEST_INFLUX_TOKEN];
    const io = terminalIo([...answers, TEST_INFLUX_ORG, db]);
    expect(await runCli(["init", "--influx-api", "v2", "--env-path", path], io)).toBe(0);
    expect(io.prompts().slice(6)).toEqual([
      "InfluxDB URL: ",
      "InfluxDB token: ",
      "InfluxDB organisation: ",
      "InfluxDB bucket [energy]: ",
    ]);
    expect(readEnv(path)).toMatchObject({
      INFLUX_TOKEN: TEST_INFLUX_TOKEN,
      INFLUX_ORG: TEST_INFLUX_ORG,
      INFLUX_BUCKET: db,
    });
    expect(io.out()).toContain(`Write to ${db}/rollups: ok`);
    expect(io.out() + io.err()).not.toContain(TEST_INFLUX_TOKEN);
  });
});
