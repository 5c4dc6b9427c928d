import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { demoChecks } from "../../src/cli/doctor/demo-checks.js";
import { runCli } from "../../src/cli.js";
import { loadConfig } from "../../src/config.js";
import type { Simulator } from "../../src/simulator/server.js";
import { listMigrations, MIGRATIONS_DIR, migrate } from "../../src/state/migrator.js";
import { processOwner } from "../../src/state/owner.js";
import { LOCK_TTL_MS, SERVICE_LOCK } from "../../src/state/service-lock.js";
import { StateStore } from "../../src/state/state-store.js";
import { bufferIo } from "../support/cli-io.js";
import { type HangProxy, startHangProxy } from "../support/hang-proxy.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { freePort, influxql } from "../support/influxd.js";
import { pipelineEnv } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";

const LATEST = listMigrations(MIGRATIONS_DIR).at(-1)?.version ?? 0;

/** The commands doctor gives to make `database/policy` the rollups' home, written out here. */
const homeCommands = (database: string, policy: string): string =>
  `InfluxDB 1.8: CREATE RETENTION POLICY "${policy}" ON "${database}" DURATION INF REPLICATION 1 ` +
  `SHARD DURATION 520w; 2.x: influx bucket create --name ${database}/${policy} --retention 0, then ` +
  "influx bucket update --id <its ID> --retention 0 --shard-group-duration 87360h; 3: influxdb3 " +
  `create database ${database}/${policy}`;
const CREDENTIALS_FIX =
  "check ENERGY_API_KEY, ENERGY_API_USER and ENERGY_API_PASSWORD; on a first start with a " +
  "one-time password, set the password with `energy-etl set-password`";

interface CheckJson {
  check: string;
  status: string;
  detail: string;
  fix?: string;
}

describe("energy-etl doctor", () => {
  let sim: Simulator;
  let db: TestInfluxDb;
  let dir: string;
  let stateDb: string;

  beforeAll(async () => {
    sim = await startTestSimulator();
    db = await createTestInfluxDb("doctor");
  });
  afterAll(() => sim.close());
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "energy-etl-doctor-"));
    stateDb = join(dir, "state.db");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const env = (extra: Record<string, string> = {}, target: Simulator = sim) =>
    pipelineEnv(target, db, stateDb, { LOG_LEVEL: "silent", ...extra });

  async function doctor(environment: Record<string, string>, ...args: string[]) {
    const io = bufferIo(environment);
    const code = await runCli(["doctor", ...args], io);
    return { code, out: io.out(), lines: io.out().split("\n"), err: io.err() };
  }

  it("a healthy setup: every check ok but the demo credentials, exit 0, the point deleted", async () => {
    expect(await runCli(["migrate"], bufferIo(env()))).toBe(0);
    const { code, out, lines } = await doctor(env());
    expect(lines).toEqual(
      expect.arrayContaining([
        `ok       API reachable: ${sim.url} answers`,
        "ok       API credentials: user demo got an access token",
        "ok       API devices: GET /devices lists 4 devices",
        "ok       clock offset: the local clock is within 1 s of the API's",
        `ok       InfluxDB reachable: ${db.url} answers /health (pass, version unknown, writes ` +
          "with /api/v2/write (v2), INFLUX_API=auto)",
        `ok       InfluxDB write: token can write bucket ${db.bucket} on v2 (wrote one point to ` +
          "energy_etl_doctor, deleted it with InfluxQL DROP MEASUREMENT)",
        "ok       InfluxDB retention: retention policy autogen keeps data forever",
        `ok       state DB writable: ${stateDb} opens and can be written`,
        `ok       state DB schema: schema version ${LATEST} (current)`,
        "ok       state DB lock: free",
        "warning  demo default ENERGY_API_KEY: the simulator's demo API key is set -> fine for " +
          "the demo; change before going live: set ENERGY_API_KEY to your API key",
        "warning  demo default ENERGY_API_PASSWORD: the simulator's demo password is set -> fine " +
          "for the demo; change before going live: set ENERGY_API_PASSWORD to your account's " +
          "password (energy-etl set-password on a first start)",
        `warning  InfluxDB rollups: beside the raw points in bucket ${db.bucket}: a year of daily ` +
          "energy reads every shard group of the raw points' year (a week each by default) -> " +
          `give them a bucket of their own with year-long shard groups (${homeCommands(
            db.bucket,
            "rollups",
          )}), set ROLLUP_BUCKET=${db.bucket}/rollups and write their history there (energy-etl ` +
          "rollups --from <the first day>)",
        "doctor: 11 ok, 3 warning(s), 0 failure(s)",
      ]),
    );
    expect(out).toMatch(/^ok {7}free disk: \d+(\.\d)? [KMGT]i?B free on the file system of /m);
    expect(lines.filter((l) => /^(warning|failure)/.test(l))).toHaveLength(3);
    expect(code).toBe(0);
    for (const secret of [sim.apiKey, "demo-password", db.token]) expect(out).not.toContain(secret);
    const measurements = await db.series("SHOW MEASUREMENTS");
    expect(JSON.stringify(measurements)).not.toContain("energy_etl_doctor");
  });

  it("a retention that cannot be read is a warning with the reason, never ok", async () => {
    const { lines } = await doctor(env({ INFLUX_URL: db.rawUrl, INFLUX_BUCKET: "no_such_db" }));
    const retention = lines.filter((l) => l.includes("InfluxDB retention"));
    expect(retention).toEqual([
      "warning  InfluxDB retention: not readable (HTTP 404 on /api/v2/buckets: 404 page not " +
        "found; database not found: no_such_db) -> give INFLUX_TOKEN (or the 1.x user, " +
        "INFLUX_USERNAME) read " +
        "access too (the " +
        "rollups and audit read with InfluxQL); the retention must be longer than " +
        "LATE_DATA_HORIZON, SYNC_START and any history you backfill",
    ]);
  });

  it("--json prints an array of {check, status, detail, fix?}; no state file is created", async () => {
    const { code, out } = await doctor(env(), "--json");
    expect(code).toBe(0);
    const checks = JSON.parse(out) as CheckJson[];
    expect(Array.isArray(checks)).toBe(true);
    for (const c of checks) {
      expect(["ok", "warning", "failure"]).toContain(c.status);
      expect(typeof c.check).toBe("string");
      expect(typeof c.detail).toBe("string");
      expect(c.fix === undefined).toBe(c.status === "ok");
    }
    expect(checks.find((c) => c.check === "state DB writable")).toEqual({
      check: "state DB writable",
      status: "ok",
      detail: `no state yet: ${stateDb} is created on first sync, in writable ${dir}`,
    });
    expect(checks.find((c) => c.check === "state DB schema")?.detail).toBe(
      "no state yet (created on first sync, or with energy-etl migrate)",
    );
    expect(existsSync(stateDb)).toBe(false);
  });

  it("a wrong password is a credentials failure naming the settings and set-password, exit 1", async () => {
    const { code, lines } = await doctor(env({ ENERGY_API_PASSWORD: "not-the-password" }));
    expect(lines).toContain(
      "failure  API credentials: POST /create_token refused the credentials (HTTP 401): " +
        `invalid username or password -> ${CREDENTIALS_FIX}`,
    );
    expect(lines).toContain(
      'warning  API devices: not checked: no access token -> fix "API credentials" first',
    );
    expect(lines.join("\n")).not.toContain("not-the-password");
    expect(code).toBe(1);
  });

  it("an InfluxDB token without write access is a failure 'token cannot write', exit 1", async () => {
    const { code, lines, out } = await doctor(env({ INFLUX_TOKEN: "read-only-token" }));
    expect(lines).toContain(
      `failure  InfluxDB write: token cannot write bucket ${db.bucket} (HTTP 401: unauthorized ` +
        `access) -> set INFLUX_TOKEN to a token with read and write access to bucket ${db.bucket} ` +
        "(InfluxDB 2.x: `influx auth create --read-bucket BUCKET_ID --write-bucket BUCKET_ID`)",
    );
    expect(out).not.toContain("read-only-token");
    expect(code).toBe(1);
  });

  it("demo defaults are a warning each; no INFLUX_URL nor OUTPUT_FILE: nothing to write to, exit 1", async () => {
    const { code, lines } = await doctor(
      env({ INFLUX_URL: "", INFLUX_TOKEN: "change-me-demo-token" }),
    );
    expect(lines).toContain(
      "warning  demo default INFLUX_TOKEN: the demo InfluxDB token of docker-compose.yml is set " +
        "-> fine for the demo; change before going live: set INFLUX_TOKEN to a token of your " +
        "InfluxDB that reads and writes its buckets",
    );
    expect(lines).toContain(
      "failure  output: nothing to write to: neither INFLUX_URL nor OUTPUT_FILE is set (sync, " +
        "backfill and run refuse to start; sync and backfill take --output FILE) -> set " +
        "INFLUX_URL, INFLUX_TOKEN, INFLUX_ORG and INFLUX_BUCKET, or OUTPUT_FILE for line protocol " +
        "in a file",
    );
    expect(lines.join("\n")).not.toContain("change-me-demo-token");
    expect(code).toBe(1);
  });

  it("knows the simulator's URLs as demo defaults", () => {
    const urlWarning = (url: string) =>
      demoChecks(loadConfig({ env: { ENERGY_API_URL: url } })).some(
        (c) => c.check === "demo default ENERGY_API_URL" && c.status === "warning",
      );
    expect(urlWarning("http://127.0.0.1:8099")).toBe(true);
    expect(urlWarning("http://localhost:8099/")).toBe(true);
    expect(urlWarning("http://simulator:8099")).toBe(true);
    expect(urlWarning("https://api.example.com")).toBe(false);
    expect(urlWarning("http://127.0.0.1:8080")).toBe(false);
    expect(demoChecks(loadConfig({ env: {} }))).toEqual([
      { check: "demo defaults", status: "ok", detail: "none in use" },
    ]);
  });

  it("an API that refuses connections is a failure naming ENERGY_API_URL, exit 1", async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const { code, lines } = await doctor(env({ ENERGY_API_URL: url }));
    expect(lines).toContain(
      `failure  API reachable: ${url} is not reachable (connect ECONNREFUSED ${url.slice(7)}) ` +
        "-> check ENERGY_API_URL (scheme, host, port) and that the API is up",
    );
    expect(lines).toContain(
      'warning  API credentials: not checked: the API is not reachable -> fix "API reachable" first',
    );
    expect(code).toBe(1);
  });

  describe("where the rollups live (ROLLUP_BUCKET)", () => {
    /** A retention policy of the test database, made with InfluxQL. */
    const policy = (name: string, clause: string) =>
      influxql(
        db.rawUrl,
        db.bucket,
        `CREATE RETENTION POLICY "${name}" ON "${db.bucket}" ${clause}`,
      );
    const rollupLines = (lines: string[]) => lines.filter((l) => l.includes("InfluxDB rollups"));

    it("a policy of their own with shard groups of a year: both checks ok, the point deleted", async () => {
      await policy("rollups", "DURATION INF REPLICATION 1 SHARD DURATION 52w");
      const { code, lines } = await doctor(env({ ROLLUP_BUCKET: `${db.bucket}/rollups` }));
      expect(rollupLines(lines)).toEqual([
        `ok       InfluxDB rollups write: token can write bucket ${db.bucket}/rollups on v2 (wrote one ` +
          "point to energy_etl_doctor, deleted it with InfluxQL DROP MEASUREMENT)",
        "ok       InfluxDB rollups: retention policy rollups keeps data forever in shard groups " +
          "of 364 d",
      ]);
      expect(code).toBe(0);
      const left = await db.series(`SELECT * FROM "rollups"."energy_etl_doctor"`);
      expect(left).toEqual([]);
    });

    it("shard groups shorter than a year: a warning with the commands that lengthen them", async () => {
      await policy("daily", "DURATION 520w REPLICATION 1 SHARD DURATION 1d");
      const { code, lines } = await doctor(env({ ROLLUP_BUCKET: `${db.bucket}/daily` }));
      expect(rollupLines(lines)).toEqual([
        expect.stringMatching(/^ok {7}InfluxDB rollups write: token can write bucket /),
        "warning  InfluxDB rollups: retention policy daily keeps data for 3640 d in shard groups " +
          "of 1 d: a year of daily energy reads 365 of them -> make them a year long or more " +
          `(InfluxDB 1.8: ALTER RETENTION POLICY "daily" ON "${db.bucket}" SHARD DURATION 52w; ` +
          "2.x: influx bucket update --id <its ID> --retention 3640d --shard-group-duration " +
          "8760h); shard groups made afterwards take it",
      ]);
      expect(code).toBe(0);
    });

    it("a policy that does not exist: a failure with the commands that make it, exit 1", async () => {
      const { code, lines } = await doctor(env({ ROLLUP_BUCKET: `${db.bucket}/missing` }));
      expect(rollupLines(lines)).toEqual([
        `failure  InfluxDB rollups write: InfluxDB has no bucket ${db.bucket}/missing (HTTP 500: ` +
          `retention policy not found: missing) -> create it (${homeCommands(db.bucket, "missing")}` +
          "), or fix ROLLUP_BUCKET",
        `warning  InfluxDB rollups: not checked: bucket ${db.bucket}/missing takes no writes -> ` +
          'fix "InfluxDB rollups write" first',
      ]);
      expect(code).toBe(1);
    });

    it("rollups off: nothing to say about them", async () => {
      const { lines } = await doctor(env({ ROLLUPS: "false" }));
      expect(rollupLines(lines)).toEqual([]);
    });
  });

  describe("dependencies that accept and never answer", () => {
    let api: HangProxy;
    let influx: HangProxy;
    beforeAll(async () => {
      api = await startHangProxy(sim.url, "hang");
      influx = await startHangProxy(db.url, "hang");
    });
    afterAll(async () => {
      await api.close();
      await influx.close();
    });

    it("are failures after API_TIMEOUT_MS and INFLUX_TIMEOUT_MS", async () => {
      const started = Date.now();
      const { code, lines } = await doctor(
        env({
          ENERGY_API_URL: api.url,
          INFLUX_URL: influx.url,
          API_TIMEOUT_MS: "300",
          INFLUX_TIMEOUT_MS: "300",
        }),
      );
      expect(Date.now() - started).toBeLessThan(5000);
      expect(lines).toContain(
        `failure  API reachable: ${api.url} is not reachable (no answer within 0.3 s) -> check ` +
          "ENERGY_API_URL and the network (firewall, proxy) between here and the API; raise " +
          "API_TIMEOUT_MS if the API is only slow",
      );
      expect(lines).toContain(
        `failure  InfluxDB reachable: ${influx.url} is not reachable (no answer within 0.3 s) -> ` +
          "check INFLUX_URL and that InfluxDB is running",
      );
      expect(code).toBe(1);
    });
    it("an InfluxDB that hangs on writes only: the write fails in time, the rest is checked", async () => {
      influx.setMode("hang", { only: /^\/api\/v2\/write/ });
      const { code, lines } = await doctor(
        env({ INFLUX_URL: influx.url, INFLUX_TIMEOUT_MS: "300" }),
      );
      expect(lines).toContain(
        `ok       InfluxDB reachable: ${influx.url} answers /health (pass, version unknown, ` +
          "writes with /api/v2/write (v2), INFLUX_API=auto)",
      );
      expect(lines).toContain(
        `failure  InfluxDB write: the write to bucket ${db.bucket} got no answer (no answer ` +
          "within 0.3 s) -> check INFLUX_URL and that InfluxDB is running; raise INFLUX_TIMEOUT_MS " +
          "if it is only slow",
      );
      expect(lines).toContain(
        "ok       InfluxDB retention: retention policy autogen keeps data forever",
      );
      expect(code).toBe(1);
    });
  });

  describe("the API's clock", () => {
    let ahead: Simulator | undefined;
    afterEach(async () => {
      await ahead?.close();
      ahead = undefined;
    });

    it.each([
      [5, "warning  clock offset: the local clock is 5 min behind the API's (more than 60 s)", 0],
      [
        20,
        "failure  clock offset: the local clock is 20 min behind the API's (more than 10 min)",
        1,
      ],
    ])("%i min ahead of ours", async (minutes, line, exitCode) => {
      ahead = await startTestSimulator({ now: () => Date.now() + minutes * 60_000 });
      const { code, lines } = await doctor(env({}, ahead));
      expect(lines).toContain(
        `${line} -> sync this machine's clock with NTP (e.g. \`timedatectl set-ntp true\`); if ` +
          "it is right, tell the API's provider theirs is off: sync windows are computed by the " +
          "local clock",
      );
      expect(code).toBe(exitCode);
    });
  });

  describe("the state database", () => {
    it("behind the code: a warning to run energy-etl migrate", async () => {
      const older = join(dir, "migrations");
      mkdirSync(older);
      for (const m of listMigrations(MIGRATIONS_DIR).slice(0, -1)) {
        copyFileSync(m.path, join(older, m.file));
      }
      const sqlite = new Database(stateDb);
      migrate(sqlite, older);
      sqlite.close();
      const latest = listMigrations(MIGRATIONS_DIR).at(-1);
      const { code, lines } = await doctor(env());
      expect(lines).toContain(
        `warning  state DB schema: schema version ${LATEST - 1}, this energy-etl is at ${LATEST} ` +
          `(pending: ${latest?.file.replace(/\.sql$/, "")}) -> run energy-etl migrate (sync and ` +
          "run also migrate when they start)",
      );
      expect(code).toBe(0);
    });

    it("a live holder of the service lock is ok and named; a stale one is a warning", async () => {
      const store = StateStore.open(stateDb);
      const owner = processOwner("run");
      store.locks.acquire(SERVICE_LOCK, owner, LOCK_TTL_MS, Date.now());
      const live = await doctor(env());
      expect(live.out).toMatch(
        new RegExp(
          `^ok {7}state DB lock: held by \`run\` \\(pid ${process.pid} on ${hostname()}, ` +
            "since [0-9T:.-]+Z\\): a service works on this state$",
          "m",
        ),
      );
      expect(live.code).toBe(0);

      store.locks.release(SERVICE_LOCK, owner);
      store.locks.acquire(SERVICE_LOCK, owner, 1000, Date.now() - 60_000);
      store.close();
      const stale = await doctor(env());
      expect(stale.out).toMatch(
        new RegExp(
          `^warning  state DB lock: stale: held by \`run\` \\(pid ${process.pid} on ` +
            `${hostname()}, since [0-9T:.-]+Z\\), which stopped renewing it -> nothing to do if ` +
            "no energy-etl works on this state: the next run or sync takes it over; otherwise " +
            `stop pid ${process.pid} on ${hostname()}$`,
          "m",
        ),
      );
      expect(stale.code).toBe(0);
    });
  });
});
