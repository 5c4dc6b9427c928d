/**
 * `energy-etl doctor` on InfluxDB 1.x: influxd (1.6.7) itself on the v1 write path, the same
 * behind the tests' v2 proxy, and InfluxDB 1.8 (a front naming 1.8.10 before them), against the
 * simulator and the run's influxd. Moved from doctor.test.ts (#42), plus /ping asked once.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../../src/cli.js";
import type { Simulator } from "../../src/simulator/server.js";
import { bufferIo } from "../support/cli-io.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { influxql, startInfluxFront } from "../support/influxd.js";
import { pipelineEnv } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";

/** A pass-through before `target` that counts the requests on each path. */
async function countingFront(target: string) {
  const paths: string[] = [];
  const server: Server = createServer((req, res) => {
    paths.push(new URL(req.url ?? "/", "http://front").pathname);
    const up = request(
      `${target}${req.url ?? "/"}`,
      { method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    up.on("error", () => res.writeHead(502).end());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return { url, paths, close };
}

describe("energy-etl doctor on InfluxDB 1.x", () => {
  let sim: Simulator;
  let db: TestInfluxDb;
  let dir: string;
  let stateDb: string;
  /** influxd's own version (the v2 proxy names none): 1.6.7, older than 1.8. */
  let influxVersion: string;

  beforeAll(async () => {
    sim = await startTestSimulator();
    db = await createTestInfluxDb("doctor_v1");
    const ping = await fetch(`${db.rawUrl}/ping`);
    influxVersion = ping.headers.get("x-influxdb-version") ?? "";
    // the premise of the 1.x tests: the test's influxd is older than 1.8
    expect(influxVersion).toMatch(/^1\.[0-7]\./);
  });
  afterAll(async () => {
    await sim.close();
    await influxql(db.rawUrl, "", `DROP DATABASE "${db.bucket}"`);
  });
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "energy-etl-doctor-v1-"));
    stateDb = join(dir, "state.db");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const env = (extra: Record<string, string> = {}) =>
    pipelineEnv(sim, db, stateDb, { LOG_LEVEL: "silent", ...extra });

  async function doctor(environment: Record<string, string>, ...args: string[]) {
    const io = bufferIo(environment);
    const code = await runCli(["doctor", ...args], io);
    return { code, out: io.out(), lines: io.out().split("\n"), err: io.err() };
  }

  it("InfluxDB 1.x before 1.8 directly: reports its version and v1, writes on /write, exit 0", async () => {
    // the raw influxd, as Debian's package installs it: no proxy, no token, no auth
    const version = influxVersion;
    const { code, lines } = await doctor(env({ INFLUX_URL: db.rawUrl, INFLUX_TOKEN: "" }));
    expect(lines).toEqual(
      expect.arrayContaining([
        `ok       InfluxDB reachable: ${db.rawUrl} answers /ping (version ${version}, writes ` +
          "with /write (v1), INFLUX_API=auto)",
        `ok       InfluxDB write: no user (auth off) can write bucket ${db.bucket} on v1 (wrote ` +
          "one point to energy_etl_doctor, deleted it with InfluxQL DROP MEASUREMENT)",
        "ok       InfluxDB retention: retention policy autogen keeps data forever",
      ]),
    );
    expect(lines.join("\n")).not.toMatch(/upgrade|1\.8 or later/);
    expect(code).toBe(0);
    const measurements = await db.series("SHOW MEASUREMENTS");
    expect(JSON.stringify(measurements)).not.toContain("energy_etl_doctor");
  });

  it("INFLUX_API=v2 forced on InfluxDB 1.x before 1.8: a failure naming the version and INFLUX_API, exit 1", async () => {
    const version = influxVersion;
    const { code, lines, out } = await doctor(
      env({ INFLUX_URL: db.rawUrl, INFLUX_TOKEN: "", INFLUX_API: "v2" }),
    );
    expect(lines).toContain(
      `failure  InfluxDB write: InfluxDB ${version} has no /api/v2/write (HTTP 404: 404 page not ` +
        "found) -> set INFLUX_API=auto (or v1): InfluxDB 1.x is written on /write",
    );
    expect(out).not.toContain("no bucket");
    expect(code).toBe(1);
  });

  it("v1: a missing database is a failure saying how to create it, exit 1", async () => {
    const { code, lines } = await doctor(
      env({ INFLUX_URL: db.rawUrl, INFLUX_TOKEN: "", INFLUX_BUCKET: "no_such_db" }),
    );
    expect(lines).toContain(
      "failure  InfluxDB write: InfluxDB has no bucket no_such_db (HTTP 404: database not " +
        'found: "no_such_db") -> create it (1.x: CREATE DATABASE, or `energy-etl init`), or fix ' +
        "INFLUX_BUCKET and INFLUX_ORG (on InfluxDB 1.x: database[/retention-policy])",
    );
    expect(code).toBe(1);
  });

  it("InfluxDB 1.6 behind a v2 write proxy (what 1.8 serves): a missing bucket is a missing bucket", async () => {
    // the proxy names no version: auto takes it for v2 and writes /api/v2/write
    const { code, lines } = await doctor(env({ INFLUX_BUCKET: "no_such_db" }));
    expect(lines).toContain(
      "failure  InfluxDB write: InfluxDB has no bucket no_such_db (HTTP 404: database not " +
        'found: "no_such_db") -> create it (1.x: CREATE DATABASE, or `energy-etl init`), or fix ' +
        "INFLUX_BUCKET and INFLUX_ORG (on InfluxDB 1.x: database[/retention-policy])",
    );
    expect(code).toBe(1);
  });

  it("/ping is asked once, whatever the checks that need the write API (raw points, rollups)", async () => {
    await influxql(
      db.rawUrl,
      "",
      `CREATE RETENTION POLICY "rollups" ON "${db.bucket}" DURATION INF REPLICATION 1`,
    );
    const front = await countingFront(db.rawUrl);
    try {
      const { lines } = await doctor(
        env({ INFLUX_URL: front.url, INFLUX_TOKEN: "", ROLLUP_BUCKET: `${db.bucket}/rollups` }),
      );
      expect(lines).toContain(
        `ok       InfluxDB write: no user (auth off) can write bucket ${db.bucket} on v1 (wrote ` +
          "one point to energy_etl_doctor, deleted it with InfluxQL DROP MEASUREMENT)",
      );
      expect(lines.some((l) => l.startsWith("ok       InfluxDB rollups write:"))).toBe(true);
      // two checks wrote on the path /ping chose (/write), and /ping was asked once
      expect(front.paths.filter((p) => p === "/write")).toHaveLength(2);
      expect(front.paths.filter((p) => p === "/ping")).toEqual(["/ping"]);
    } finally {
      await front.close();
    }
  });

  it("a /health that passes but a /ping that is no InfluxDB's (404): a reachable failure naming INFLUX_URL and INFLUX_API, never a silent v2", async () => {
    const server: Server = createServer((req, res) => {
      req.resume();
      if (req.url === "/health") res.writeHead(200).end(JSON.stringify({ status: "pass" }));
      else res.writeHead(404).end("<html>not here</html>");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const { code, lines } = await doctor(env({ INFLUX_URL: url }));
      expect(lines).toContain(
        `failure  InfluxDB reachable: ${url} answers HTTP 200 on /health, and /ping: ${url}/ping ` +
          "answered HTTP 404, not InfluxDB's /ping (2xx): set INFLUX_URL to InfluxDB's base URL " +
          "(with the path prefix of a proxy before it), or INFLUX_API=v1 or v2 to name its write " +
          "API -> set INFLUX_URL to InfluxDB's base URL (http://host:8086, without /api/v2)",
      );
      expect(lines.filter((l) => l.includes("InfluxDB write"))).toEqual([
        'warning  InfluxDB write: not checked: InfluxDB is not reachable -> fix "InfluxDB reachable" first',
      ]);
      expect(code).toBe(1);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it("InfluxDB 1.8 without auth: its version, /api/v2/write, and no token named where none is given", async () => {
    const { TEST_INFLUX_URL: proxy = "" } = process.env;
    const front = await startInfluxFront({ url: proxy, rawUrl: db.rawUrl });
    try {
      const { code, lines } = await doctor(env({ INFLUX_URL: front.url, INFLUX_TOKEN: "" }));
      expect(lines).toEqual(
        expect.arrayContaining([
          `ok       InfluxDB reachable: ${front.url} answers /health (pass, version 1.8.10, ` +
            "writes with /api/v2/write (v2), INFLUX_API=auto)",
          `ok       InfluxDB write: no user (auth off) can write bucket ${db.bucket} on v2 (wrote ` +
            "one point to energy_etl_doctor, deleted it with InfluxQL DROP MEASUREMENT)",
        ]),
      );
      expect(code).toBe(0);
    } finally {
      await front.close();
    }
  });
});
