import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { runCli } from "../../src/cli.js";
import { loadConfig } from "../../src/config.js";
import { pointSinkOpener } from "../../src/influx/create-sink.js";
import { checkInflux } from "../../src/influx/influx-check.js";
import { InfluxPingError, resolveInfluxApi } from "../../src/influx/influx-connection.js";
import { lineBatch } from "../../src/transform/line-protocol.js";
import { bufferIo } from "../support/cli-io.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { logEntries } from "../support/influx-writer.js";
import { freePort, influxql, startInfluxFront, TestInfluxd } from "../support/influxd.js";
import { captureLogger } from "../support/log-capture.js";
import { tempStateDb } from "../support/pipeline.js";

const LINE = "m,device_id=a value=1 1700000000";
const API_LOG = "InfluxDB write API";

/** What influxd itself says it is (the premise of the v1 tests: Debian's 1.6.7, below 1.8). */
async function influxdVersion(url: string): Promise<string> {
  const ping = await fetch(`${url}/ping`);
  await ping.arrayBuffer();
  return ping.headers.get("x-influxdb-version") ?? "";
}

describe("INFLUX_API: the write API resolved from /ping", () => {
  let db: TestInfluxDb;
  beforeAll(async () => {
    db = await createTestInfluxDb("detect");
  });
  const connection = (url: string) => ({ url, token: "", timeoutMs: 5000 });

  it("auto against influxd itself: v1, with the version it names (1.6.7)", async () => {
    const version = await influxdVersion(db.rawUrl);
    expect(version).toMatch(/^1\.6\.7/);
    await expect(resolveInfluxApi(connection(db.rawUrl), "auto")).resolves.toEqual({
      api: "v1",
      version,
    });
  });

  it("auto against the v2 proxy, which names no version: v2", async () => {
    const ping = await fetch(`${db.url}/ping`);
    await ping.arrayBuffer();
    expect(ping.headers.get("x-influxdb-version")).toBeNull();
    await expect(resolveInfluxApi(connection(db.url), "auto")).resolves.toEqual({
      api: "v2",
      version: undefined,
    });
  });

  it("INFLUX_API=v2 forced: v2 without asking, even against 1.6.7", async () => {
    // an unreachable URL: a request would throw
    await expect(resolveInfluxApi(connection("http://127.0.0.1:1"), "v2")).resolves.toEqual({
      api: "v2",
      version: undefined,
    });
  });

  it("the sink resolves once, logs { api, version } at info once, and writes 1.6.7 on /write", async () => {
    const { logger, lines } = captureLogger("info");
    const config = loadConfig({ env: { INFLUX_URL: db.rawUrl, INFLUX_BUCKET: db.bucket } });
    const sink = await pointSinkOpener(config, logger)();
    await sink.write(lineBatch([LINE]));
    await sink.close();
    expect(logEntries(lines, API_LOG)).toEqual([
      expect.objectContaining({
        level: "info",
        api: "v1",
        version: await influxdVersion(db.rawUrl),
      }),
    ]);
    const [series] = await db.series("SELECT value FROM m");
    expect(series?.values).toEqual([[1700000000, 1]]);
  });

  it("an unreachable InfluxDB fails the sink with one line naming INFLUX_URL", async () => {
    // a port nothing listens on (fetch refuses port 1 itself: "bad port")
    const url = `http://127.0.0.1:${await freePort()}`;
    const config = loadConfig({ env: { INFLUX_URL: url, INFLUX_BUCKET: "x" } });
    await expect(pointSinkOpener(config, captureLogger().logger)()).rejects.toThrow(
      `InfluxDB at ${url} is not reachable (connect ECONNREFUSED ${url.slice(7)}): check INFLUX_URL`,
    );
  });
});

/** A loopback server answering every request with `status` and `headers`; its URL. */
async function answering(status: number, headers: Record<string, string> = {}) {
  const server: Server = createServer((req, res) => {
    req.resume();
    res.writeHead(status, headers).end(status === 204 ? undefined : "<html>a proxy page</html>");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  const close = () => new Promise<void>((r) => server.close(() => r()));
  return { url: `http://127.0.0.1:${port}`, close };
}

describe("/ping: under INFLUX_URL's path, a 2xx, a version header", () => {
  const connection = (url: string) => ({ url, token: "", timeoutMs: 5000 });

  it("INFLUX_URL with a path prefix (a reverse proxy's /influx): /ping is asked under it, as the writer writes", async () => {
    const { TEST_INFLUX_URL: url = "", TEST_INFLUX_RAW_URL: rawUrl = "" } = process.env;
    const front = await startInfluxFront({ url, rawUrl, version: "1.6.7", prefix: "/influx" });
    try {
      expect(front.url).toMatch(/\/influx$/);
      for (const base of [front.url, `${front.url}/`, `${front.url}//`]) {
        await expect(resolveInfluxApi(connection(base), "auto")).resolves.toEqual({
          api: "v1",
          version: "1.6.7",
        });
      }
    } finally {
      await front.close();
    }
  });

  it("a 404 on /ping (no InfluxDB there) is an error naming INFLUX_URL and INFLUX_API, not a silent v2", async () => {
    const server = await answering(404);
    try {
      const resolving = resolveInfluxApi(connection(`${server.url}/influx`), "auto");
      await expect(resolving).rejects.toThrow(InfluxPingError);
      await expect(resolving).rejects.toThrow(
        `${server.url}/influx/ping answered HTTP 404, not InfluxDB's /ping (2xx): set INFLUX_URL`,
      );
      await expect(resolving).rejects.toThrow("INFLUX_API=v1 or v2");
      // the sink says it in its one line
      const config = loadConfig({ env: { INFLUX_URL: server.url, INFLUX_BUCKET: "x" } });
      await expect(pointSinkOpener(config, captureLogger().logger)()).rejects.toThrow(
        `${server.url}/ping answered HTTP 404, not InfluxDB's /ping (2xx)`,
      );
    } finally {
      await server.close();
    }
  });

  it("a version header that is no version is an error naming it", async () => {
    const server = await answering(204, { "x-influxdb-version": "OSS-unknown" });
    try {
      await expect(resolveInfluxApi(connection(server.url), "auto")).rejects.toThrow(
        'names its version "OSS-unknown" (X-Influxdb-Version), not a version',
      );
    } finally {
      await server.close();
    }
  });
});

describe("InfluxDB 1.x with auth-enabled: INFLUX_USERNAME and INFLUX_PASSWORD (HTTP Basic)", () => {
  const influxd = new TestInfluxd({ authEnabled: true });
  const admin = { username: "etl-admin", password: "SECRET-v1-password-93ab" };
  const WRONG = "SECRET-v1-wrong-password-47cd";
  const DB = "v1_auth";
  beforeAll(async () => {
    await influxd.start();
    // 1.x lets the first admin user be created without credentials, and nothing else
    await influxql(
      influxd.rawUrl,
      "",
      `CREATE USER "${admin.username}" WITH PASSWORD '${admin.password}' WITH ALL PRIVILEGES`,
    );
    await influxql(influxd.rawUrl, "", `CREATE DATABASE "${DB}"`, admin);
  });
  afterAll(() => influxd.stop());

  const env = (password: string) => ({
    INFLUX_URL: influxd.rawUrl,
    INFLUX_BUCKET: DB,
    INFLUX_USERNAME: admin.username,
    INFLUX_PASSWORD: password,
  });
  /** Every form of a credential that must not be printed. */
  const forms = (password: string) => [
    password,
    Buffer.from(`${admin.username}:${password}`).toString("base64"),
  ];

  it("a wrong password fails at the start-up check, naming INFLUX_PASSWORD and not the password", async () => {
    const { logger, lines } = captureLogger("debug");
    const opening = pointSinkOpener(loadConfig({ env: env(WRONG) }), logger)();
    const error: unknown = await opening.then(
      () => new Error("the sink opened"),
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: "auth_failed", status: 401, fatal: true });
    const message = error instanceof Error ? error.message : String(error);
    expect(message).toBe(
      "InfluxDB refused the user and password (HTTP 401): check INFLUX_USERNAME and " +
        `INFLUX_PASSWORD and the write permission on database ${DB}`,
    );
    for (const text of [message, ...lines]) {
      for (const secret of forms(WRONG)) expect(text).not.toContain(secret);
    }
  });

  it("the right password writes, and the credential is in no log line", async () => {
    const { logger, lines } = captureLogger("debug");
    const sink = await pointSinkOpener(loadConfig({ env: env(admin.password) }), logger)();
    await expect(sink.write(lineBatch([LINE]))).resolves.toEqual({ written: 1, rejected: [] });
    await sink.close();
    const { results } = await influxql(influxd.rawUrl, DB, "SELECT value FROM m", admin);
    expect(results?.[0]?.series?.[0]?.values).toEqual([[1700000000, 1]]);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      for (const secret of forms(admin.password)) expect(line).not.toContain(secret);
      expect(line).not.toMatch(/Basic\s+[A-Za-z0-9+/=]{8,}/);
    }
  });

  /** doctor's lines about InfluxDB (the API is a closed port here: its checks fail at once). */
  async function doctorInflux(password: string): Promise<{ code: number; lines: string[] }> {
    const io = bufferIo({
      ...env(password),
      ENERGY_API_URL: `http://127.0.0.1:${await freePort()}`,
      STATE_DB: tempStateDb(),
      LOG_LEVEL: "silent",
    });
    const code = await runCli(["doctor"], io);
    const out = io.out();
    for (const secret of [...forms(password), ...forms(admin.password)]) {
      expect(out).not.toContain(secret);
    }
    return { code, lines: out.split("\n").filter((l) => l.includes("InfluxDB")) };
  }

  it("doctor: the right user writes on v1 (Basic) and reads the retention policies", async () => {
    const { lines } = await doctorInflux(admin.password);
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^ok {7}InfluxDB reachable: .* answers \/ping \(version 1\.6\.7\S*, writes with \/write \(v1\), INFLUX_API=auto\)$/,
        ),
        `ok       InfluxDB write: user ${admin.username} can write bucket ${DB} on v1 (wrote one ` +
          "point to energy_etl_doctor, deleted it with InfluxQL DROP MEASUREMENT)",
        "ok       InfluxDB retention: retention policy autogen keeps data forever",
      ]),
    );
  });

  it("doctor: a wrong password is a write failure naming INFLUX_USERNAME and INFLUX_PASSWORD", async () => {
    const { code, lines } = await doctorInflux(WRONG);
    expect(lines).toContain(
      `failure  InfluxDB write: user cannot write bucket ${DB} (HTTP 401: authorization failed) ` +
        "-> set INFLUX_USERNAME and INFLUX_PASSWORD to a user with read and write access to " +
        `database ${DB} (InfluxQL: GRANT ALL ON <database> TO <user>)`,
    );
    expect(code).toBe(1);
  });
});

describe("a refused write names the credentials given, on either write API", () => {
  it.each([
    [
      "a 1.8 user on /api/v2/write",
      { api: "v2", token: "", username: "u" },
      "INFLUX_USERNAME and INFLUX_PASSWORD",
    ],
    ["a token on /api/v2/write", { api: "v2", token: "t", username: "" }, "INFLUX_TOKEN"],
    [
      "a 1.x user on /write",
      { api: "v1", token: "", username: "u" },
      "INFLUX_USERNAME and INFLUX_PASSWORD",
    ],
  ] as const)("%s: a 401 names those credentials", async (_name, credentials, settings) => {
    const server = createServer((_req, res) => {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: "authorization failed" }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const target = { url, org: "o", bucket: "b", password: "secret-pw", timeoutMs: 5_000 };
      const error = await checkInflux({ ...target, ...credentials }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(Error);
      const message = error instanceof Error ? error.message : "";
      expect(message).toContain(`check ${settings} and the write permission`);
      expect(message).not.toContain("secret-pw");
    } finally {
      server.close();
    }
  });
});
