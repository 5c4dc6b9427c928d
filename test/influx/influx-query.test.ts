/**
 * InfluxQuery matches results to statements by position (the rollups send the statements of
 * many device resources in one request): an answer with fewer results, or results out of order,
 * fails instead of shifting every later result onto another statement. Against the tests'
 * influxd for the real answer, and a loopback server for the broken ones.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { InfluxQuery } from "../../src/influx/influx-query.js";
import { writeRawLines } from "../support/bad-data.js";
import { createTestInfluxDb } from "../support/influx-db.js";

/** A server answering every /query with `results`. */
async function answering(results: unknown[]): Promise<{ url: string; server: Server }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ results }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const target = (url: string) => ({ url, token: "t", bucket: "b", timeoutMs: 5_000 });
const statements = ["SELECT 1", "SELECT 2", "SELECT 3"];

describe("InfluxQuery: one result per statement, in order", () => {
  it("influxd's answer to three statements comes back as three results", async () => {
    const db = await createTestInfluxDb("influx_query");
    await writeRawLines(db, ["m,k=a value=1 1700000000", "m,k=b value=2 1700000000"]);
    const query = new InfluxQuery({ ...target(db.url), token: db.token, bucket: db.bucket });
    const results = await query.query([
      `SELECT "value" FROM "m" WHERE "k" = 'a'`,
      `SELECT "value" FROM "m" WHERE "k" = 'none'`,
      `SELECT "value" FROM "m" WHERE "k" = 'b'`,
    ]);
    expect(results.map((r) => r.flatMap((s) => s.values.map((v) => v[1])))).toEqual([[1], [], [2]]);
  });

  it.each([
    [
      "fewer results",
      [{ statement_id: 0 }, { statement_id: 1 }],
      "answered 2 results for 3 statements",
    ],
    [
      "results out of order",
      [{ statement_id: 0 }, { statement_id: 2 }, { statement_id: 1 }],
      "answered 3 results for 3 statements (out of order)",
    ],
    [
      "a result cut short (partial)",
      [{ statement_id: 0 }, { statement_id: 1, partial: true }, { statement_id: 2 }],
      "InfluxDB cut its answer short",
    ],
    [
      "a series cut short (partial)",
      [
        { statement_id: 0 },
        {
          statement_id: 1,
          series: [{ name: "m", columns: ["time", "value"], values: [[1, 2]], partial: true }],
        },
        { statement_id: 2 },
      ],
      "InfluxDB cut its answer short",
    ],
    [
      "rows that are not arrays",
      [{ statement_id: 0, series: [{ name: "m", columns: ["time"], values: [1, 2] }] }],
      "something else than InfluxQL results",
    ],
  ])("%s: fails, saying why", async (_what, results, message) => {
    const { url, server } = await answering(results);
    try {
      await expect(new InfluxQuery(target(url)).query(statements)).rejects.toThrow(message);
    } finally {
      server.close();
    }
  });
});

describe("InfluxQuery: what 1.x answers, and a connection reset while idle", () => {
  it("SHOW RETENTION POLICIES, whose series 1.x does not name, is read", async () => {
    const db = await createTestInfluxDb("influx_query_rp");
    const query = new InfluxQuery({ ...target(db.rawUrl), token: "", bucket: db.bucket });
    const [series] = await query.query(["SHOW RETENTION POLICIES"]);
    const names = (series ?? []).flatMap((s) => s.values.map((row) => row[0]));
    expect(names).toContain("autogen");
  });

  /** A server that resets the first `resets` connections before answering, then answers. */
  async function resetting(resets: number) {
    const methods: string[] = [];
    const server = createServer((req, res) => {
      methods.push(req.method ?? "");
      if (methods.length <= resets) {
        req.socket.destroy();
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ results: [{ statement_id: 0 }] }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return { url, server, methods };
  }

  it("a read reset before any answer is sent once more, and answered", async () => {
    const { url, server, methods } = await resetting(1);
    try {
      await expect(new InfluxQuery(target(url)).query(["SHOW DATABASES"])).resolves.toEqual([[]]);
      expect(methods).toEqual(["GET", "GET"]);
    } finally {
      server.close();
    }
  });

  it("a read reset twice fails; a change (POST) reset once is never sent again", async () => {
    const twice = await resetting(2);
    const once = await resetting(1);
    try {
      await expect(new InfluxQuery(target(twice.url)).query(["SHOW DATABASES"])).rejects.toThrow(
        /refused the query/,
      );
      expect(twice.methods).toEqual(["GET", "GET"]);
      const change = new InfluxQuery(target(once.url)).query(['CREATE DATABASE "x"'], {
        change: true,
      });
      await expect(change).rejects.toThrow(/refused the query/);
      expect(once.methods).toEqual(["POST"]);
    } finally {
      twice.server.close();
      once.server.close();
    }
  });
});

describe("InfluxQuery: a refused read names the credentials in use", () => {
  const proxy = () => {
    const url = process.env.TEST_INFLUX_URL;
    if (!url) throw new Error("no test influxd: jest's globalSetup starts it");
    return url;
  };
  // the tests' proxy takes only its token on /query: anything else is a 401, as an InfluxDB with auth
  it.each([
    [
      "a 1.x user",
      { token: "", username: "etl", password: "pw-5e1c" },
      ": the user etl (INFLUX_USERNAME and INFLUX_PASSWORD) needs read access to the database",
    ],
    [
      "a token",
      { token: "wrong-token-2b7f" },
      ": the token (INFLUX_TOKEN) needs read access to the bucket",
    ],
    [
      "no credentials",
      { token: "" },
      ": InfluxDB wants credentials: set INFLUX_TOKEN, or on 1.x INFLUX_USERNAME and INFLUX_PASSWORD",
    ],
  ])("%s: the 401 says whose read access to fix", async (_name, credentials, advice) => {
    const query = new InfluxQuery({ ...target(proxy()), ...credentials });
    const error: unknown = await query.query(["SHOW MEASUREMENTS"]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    const message = error instanceof Error ? error.message : "";
    expect(message).toBe(
      `InfluxDB at ${proxy()} refused the query (HTTP 401: authorization failed)${advice}`,
    );
    if ("username" in credentials) expect(message).not.toMatch(/token/i);
  });
});
