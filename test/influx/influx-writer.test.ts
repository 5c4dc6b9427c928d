import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { checkInflux } from "../../src/influx/influx-check.js";
import { InfluxWriteError } from "../../src/influx/write-errors.js";
import { lineBatch } from "../../src/transform/line-protocol.js";
import { createTestInfluxDb, INFLUX_PATHS, type TestInfluxDb } from "../support/influx-db.js";
import { logEntries, REFUSED_LINES_LOG, writerFor } from "../support/influx-writer.js";
import { influxql, TestInfluxd } from "../support/influxd.js";

async function expectWriteError(promise: Promise<unknown>): Promise<InfluxWriteError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(InfluxWriteError);
    return error as InfluxWriteError;
  }
  throw new Error("expected an InfluxWriteError");
}

describe.each(INFLUX_PATHS)("InfluxWriter against a real influxd ($name)", (path) => {
  let db: TestInfluxDb & { readonly api: "v1" | "v2" };
  beforeAll(async () => {
    db = path.target(await createTestInfluxDb("writer"));
  });

  it("writes batches through the real client; InfluxQL reads them back", async () => {
    const { writer } = writerFor(db, { batchSize: 700 });
    const lines = Array.from(
      { length: 5000 },
      (_, i) => `p,device_id=d value=${i} ${1_700_000_000 + i}`,
    );
    await writer.write(lineBatch(lines));
    await writer.flush();
    const [series] = await db.series("SELECT count(value), sum(value) FROM p");
    expect(series?.values[0]?.slice(1)).toEqual([5000, (4999 * 5000) / 2]);
  });

  it("writes the good lines of a batch with a bad one, rejects that one, keeps writing", async () => {
    const { writer, logLines } = writerFor(db);
    const good = writer.write(lineBatch(["q,device_id=a value=1 1700000000"]));
    const bad = writer.write(
      lineBatch(["q,device_id=b value=1 1700000000", "this is not line protocol"]),
    );
    const alsoGood = writer.write(lineBatch(["q,device_id=c value=3 1700000000"]));
    await expect(good).resolves.toEqual({ written: 1, rejected: [] });
    const outcome = await bad;
    expect(outcome.written).toBe(1);
    expect(outcome.rejected).toEqual([
      {
        line: "this is not line protocol",
        status: 400,
        error: expect.stringMatching(/^unable to parse 'this is not line protocol': /),
      },
    ]);
    await expect(alsoGood).resolves.toEqual({ written: 1, rejected: [] });
    const [stored] = await db.series("SELECT count(value) FROM q");
    expect(stored?.values[0]?.slice(1)).toEqual([3]);
    expect(logEntries(logLines, REFUSED_LINES_LOG)).toEqual([
      expect.objectContaining({
        lines: 2,
        rejected: 1,
        firstRejected: "this is not line protocol",
      }),
    ]);
    const devices = (await db.series("SELECT value FROM q GROUP BY device_id")).map(
      (s) => s.tags?.device_id,
    );
    expect(devices).toEqual(["a", "b", "c"]);
  });

  it("a missing bucket (database) is fatal with a message that says what to fix", async () => {
    const { writer } = writerFor({ ...db, bucket: "no_such_db" });
    const error = await expectWriteError(writer.write(lineBatch(["r value=1 1700000000"])));
    expect(error).toMatchObject({ code: "bucket_not_found", status: 404, fatal: true });
    expect(error.message).toMatch(
      db.api === "v1"
        ? /^database not found: create it \(CREATE DATABASE "no_such_db"\) or run `energy-etl init` \(INFLUX_BUCKET=no_such_db/
        : /no bucket no_such_db .*INFLUX_BUCKET/,
    );
  });

  it("a missing retention policy is fatal, naming it", async () => {
    const { writer } = writerFor({ ...db, bucket: `${db.bucket}/no_such_rp` });
    const error = await expectWriteError(writer.write(lineBatch(["r value=1 1700000000"])));
    expect(error).toMatchObject({ code: "bucket_not_found", fatal: true });
    expect(error.message).toMatch(
      db.api === "v1" ? /no retention policy no_such_rp/ : /no_such_rp/,
    );
  });
});

describe("InfluxWriter with a wrong token (v2 proxy)", () => {
  it("is fatal with a message that says what to fix", async () => {
    const db = await createTestInfluxDb("writer_token");
    const { writer } = writerFor({ ...db, token: "wrong-token-value" });
    const error = await expectWriteError(writer.write(lineBatch(["r value=1 1700000000"])));
    expect(error).toMatchObject({ code: "auth_failed", status: 401, fatal: true });
    expect(error.message).toMatch(/check INFLUX_TOKEN/);
    expect(error.message).not.toContain("wrong-token-value");
  });
});

describe("InfluxWriter when InfluxDB is down", () => {
  const influxd = new TestInfluxd();
  afterAll(() => influxd.stop());

  it("retries with backoff, gives up with 'unavailable', and writes once it is back", async () => {
    await influxd.start();
    const target = { url: influxd.url, token: "test-influx-token", org: "o", bucket: "outage" };
    await influxql(influxd.rawUrl, "", 'CREATE DATABASE "outage"');
    await influxd.stopInfluxd();

    const sleeps: number[] = [];
    const { writer, logLines } = writerFor(target, {
      sleep: async (ms) => {
        sleeps.push(ms);
      },
    });
    const error = await expectWriteError(writer.write(lineBatch(["o value=1 1700000000"])));
    expect(error).toMatchObject({ code: "unavailable", status: 503, fatal: false });
    expect(error.message).toMatch(
      /InfluxDB write failed after 3 attempts \(HTTP 503: influxd is down\)/,
    );
    expect(sleeps).toHaveLength(2);
    expect(logLines.filter((l) => l.includes("write failed, retrying"))).toHaveLength(2);

    let restarted = false;
    const { writer: patient } = writerFor(target, {
      sleep: async () => {
        if (!restarted) {
          restarted = true;
          await influxd.start();
        }
      },
    });
    await expect(patient.write(lineBatch(["o value=2 1700000001"]))).resolves.toEqual({
      written: 1,
      rejected: [],
    });
    // value 1 of the failed write never landed
    const { results } = await influxql(influxd.rawUrl, "outage", "SELECT value FROM o");
    expect(results?.[0]?.series?.[0]?.values).toEqual([[1700000001, 2]]);
  });
});

describe("InfluxWriter against a fake that answers 413 and 429", () => {
  let server: Server;
  let url = "";
  const received: string[][] = [];
  let answer: (lines: string[]) => { status: number; headers?: Record<string, string> };

  beforeAll(async () => {
    server = createServer(async (req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const lines = Buffer.concat(chunks).toString("utf8").split("\n").filter(Boolean);
      const { status, headers } = answer(lines);
      if (status === 204) received.push(lines);
      res.writeHead(status, { "content-type": "application/json", ...headers });
      res.end(
        status === 204 ? undefined : JSON.stringify({ code: "x", message: `status ${status}` }),
      );
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  beforeEach(() => {
    received.length = 0;
  });

  const target = () => ({ url, token: "t", org: "o", bucket: "b" });

  it("413 splits the batch until the halves fit", async () => {
    answer = (lines) => ({ status: lines.length > 3 ? 413 : 204 });
    const lines = Array.from({ length: 10 }, (_, i) => `m value=${i} ${i}`);
    await writerFor(target()).writer.write(lineBatch(lines));
    expect(received.flat()).toEqual(lines);
    expect(Math.max(...received.map((b) => b.length))).toBeLessThanOrEqual(3);
  });

  it("413 at a single line fails the write as refused (a limit in front of InfluxDB, not the line)", async () => {
    const huge = `m text="${"x".repeat(100)}" 5`;
    answer = (lines) => ({ status: lines.some((l) => l.length > 50) ? 413 : 204 });
    const lines = ["m value=1 1", "m value=2 2", huge, "m value=4 4"];
    const error = await expectWriteError(writerFor(target()).writer.write(lineBatch(lines)));
    expect(error).toMatchObject({ code: "refused", status: 413, fatal: false });
    expect(error.message).toMatch(/a single line is too large/);
    // halved down to the line: what fitted before it was stored, nothing is a dead letter
    expect(received.flat()).toEqual(lines.slice(0, 2));
  });

  it("another 4xx is about the request, not a line: it rejects the write as bad_data", async () => {
    answer = () => ({ status: 405 });
    const error = await expectWriteError(
      writerFor(target()).writer.write(lineBatch(["m value=1 1"])),
    );
    expect(error).toMatchObject({ code: "bad_data", status: 405, fatal: false });
    expect(error.message).toMatch(/refused a write of 1 line \(HTTP 405: status 405\)/);
  });

  it("429 waits at least Retry-After, then succeeds", async () => {
    let calls = 0;
    answer = () =>
      ++calls === 1 ? { status: 429, headers: { "retry-after": "3" } } : { status: 204 };
    const sleeps: number[] = [];
    await writerFor(target(), { sleep: async (ms) => void sleeps.push(ms) }).writer.write(
      lineBatch(["m value=1 1"]),
    );
    expect(sleeps).toHaveLength(1);
    expect(sleeps[0]).toBeGreaterThanOrEqual(3000);
    expect(received).toHaveLength(1);
  });
});

describe("checkInflux (start-up check)", () => {
  let db: TestInfluxDb;
  beforeAll(async () => {
    db = await createTestInfluxDb("check");
  });
  const check = (
    overrides: Partial<{ url: string; token: string; bucket: string; api: "v1" | "v2" }>,
  ) =>
    checkInflux({
      url: db.url,
      token: db.token,
      org: db.org,
      bucket: db.bucket,
      api: "v2",
      timeoutMs: 2000,
      ...overrides,
    });

  it("passes for a reachable InfluxDB, a good token and an existing bucket", async () => {
    await expect(check({})).resolves.toBeUndefined();
  });

  it("passes on the v1 path: influxd directly, /write?db= with no credentials", async () => {
    await expect(check({ url: db.rawUrl, token: "", api: "v1" })).resolves.toBeUndefined();
  });

  it.each([
    ["unreachable", { url: "http://127.0.0.1:1" }, /not reachable .*check INFLUX_URL/],
    [
      "token refused",
      { token: "bad-token-123" },
      /refused the token \(HTTP 401\): check INFLUX_TOKEN/,
    ],
    ["bucket missing", { bucket: "absent" }, /no bucket absent .*create it or fix INFLUX_BUCKET/],
  ])("%s: one line that says what to fix", async (_name, overrides, message) => {
    const error = await expectWriteError(check(overrides));
    expect(error.message).toMatch(message);
    expect(error.message).not.toContain("\n");
    expect(error.message).not.toContain("bad-token-123");
  });

  it("v1: a missing database says how to create it", async () => {
    const error = await expectWriteError(
      check({ url: db.rawUrl, token: "", api: "v1", bucket: "absent" }),
    );
    expect(error.message).toMatch(
      /^database not found: create it \(CREATE DATABASE "absent"\) or run `energy-etl init`/,
    );
    expect(error).toMatchObject({ code: "bucket_not_found", fatal: true });
  });

  it("INFLUX_API=v2 forced on InfluxDB 1.x before 1.8: names its version and INFLUX_API", async () => {
    const version = (await fetch(`${db.rawUrl}/ping`)).headers.get("x-influxdb-version") ?? "";
    expect(version).toMatch(/^1\.[0-7]\./); // the premise: the test's influxd is older than 1.8
    const error = await expectWriteError(check({ url: db.rawUrl }));
    expect(error.message).toBe(
      `InfluxDB ${version} has no /api/v2/write (HTTP 404: 404 page not found): set ` +
        "INFLUX_API=auto or v1",
    );
    expect(error).toMatchObject({ status: 404, fatal: true });
  });
});
