import { createServer, type IncomingMessage, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { InfluxApi } from "../../src/influx/influx-connection.js";
import { lineBatch } from "../../src/transform/line-protocol.js";
import { createTestInfluxDb, INFLUX_PATHS, type TestInfluxDb } from "../support/influx-db.js";
import { logEntries, REFUSED_LINES_LOG, writerFor } from "../support/influx-writer.js";
import { influxql } from "../support/influxd.js";

const T0 = 1_700_000_000;
const DAY_S = 86_400;

/** `count` lines `<measurement>,device_id=d value=<i> <from + i>`. */
function goodLines(measurement: string, count: number, from = T0): string[] {
  return Array.from(
    { length: count },
    (_, i) => `${measurement},device_id=d value=${i} ${from + i}`,
  );
}

/** The most requests bisection may take to find `bad` bad lines in `lines` lines. */
const bisectionBound = (lines: number, bad = 1) => 2 * bad * Math.ceil(Math.log2(lines)) + 1;

interface Listening {
  readonly url: string;
  close(): Promise<void>;
}

async function listen(server: Server): Promise<Listening> {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A pass-through proxy in front of the test InfluxDB that counts the write requests (v1, v2). */
async function countingProxy(target: string): Promise<Listening & { requests(): number }> {
  let requests = 0;
  const server = createServer((req, res) => {
    if (/^\/(api\/v2\/)?write\?/.test(req.url ?? "")) requests++;
    const upstream = request(
      new URL(req.url ?? "/", target),
      { method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    req.pipe(upstream);
  });
  return { ...(await listen(server)), requests: () => requests };
}

/** The values of the first series of an InfluxQL query on `db`. */
async function values(db: TestInfluxDb, q: string): Promise<unknown[][]> {
  return (await db.series(q))[0]?.values ?? [];
}

describe.each(INFLUX_PATHS)(
  "one bad line never fails the others (real influxd 1.x, $name)",
  (path) => {
    let db: TestInfluxDb & { readonly api: InfluxApi };
    let proxy: Awaited<ReturnType<typeof countingProxy>>;
    beforeAll(async () => {
      db = path.target(await createTestInfluxDb("partial"));
      proxy = await countingProxy(db.url);
    });
    afterAll(() => proxy.close());

    const writer = (bucket = db.bucket) => {
      const before = proxy.requests();
      const { writer, logLines } = writerFor({ ...db, url: proxy.url, bucket });
      return { writer, logLines, requests: () => proxy.requests() - before };
    };

    it("1000 good lines and 1 unparsable: the 1000 are stored once, the bad one is rejected", async () => {
      const bad = "pa,device_id=d value= 1700000999";
      const lines = goodLines("pa", 1000);
      lines.splice(613, 0, bad);
      const { writer: w, logLines, requests } = writer();

      const outcome = await w.write(lineBatch(lines));

      expect(outcome).toEqual({
        written: 1000,
        rejected: [
          { line: bad, status: 400, error: `unable to parse '${bad}': missing field value` },
        ],
      });
      // influxd names the unparsable line: it is taken out and the rest sent again, no bisection
      expect(requests()).toBe(2);
      expect(await values(db, "SELECT count(value), sum(value) FROM pa")).toEqual([
        [0, 1000, (999 * 1000) / 2],
      ]);
      expect(logEntries(logLines, REFUSED_LINES_LOG)).toEqual([
        expect.objectContaining({ lines: 1001, rejected: 1, requests: 2, status: 400 }),
      ]);
    });

    it("several unparsable lines, one quote in a line: all named, all taken out at once", async () => {
      const bad = ["it's not line protocol", "pa2 value=", "pa2,device_id=d value=1 12x"];
      const lines = goodLines("pa2", 300);
      lines.splice(250, 0, bad[2] ?? "");
      lines.splice(100, 0, bad[1] ?? "");
      lines.splice(0, 0, bad[0] ?? "");
      const { writer: w, requests } = writer();

      const outcome = await w.write(lineBatch(lines));

      expect(outcome.written).toBe(300);
      expect(outcome.rejected.map((r) => r.line)).toEqual(bad);
      for (const r of outcome.rejected) {
        expect(r.error.startsWith(`unable to parse '${r.line}': `)).toBe(true);
        expect(r.error).not.toMatch(/dropped=|\n/);
      }
      expect(requests()).toBe(2);
      expect(await values(db, "SELECT count(value) FROM pa2")).toEqual([[0, 300]]);
    });

    it("a field type conflict with stored data: that line is rejected, the others stored", async () => {
      const { writer: w } = writer();
      await expect(w.write(lineBatch([`pb,t=a text=1 ${T0}`]))).resolves.toEqual({
        written: 1,
        rejected: [],
      });
      const conflicting = `pb,t=a text="x" ${T0 + 10_000}`;
      const lines = Array.from({ length: 400 }, (_, i) => `pb,t=a value=${i} ${T0 + 1 + i}`);
      lines.splice(123, 0, conflicting);
      const { writer: w2, logLines, requests } = writer();

      const outcome = await w2.write(lineBatch(lines));

      expect(outcome.written).toBe(400);
      expect(outcome.rejected).toEqual([
        { line: conflicting, status: 400, error: expect.stringMatching(/field type conflict/) },
      ]);
      expect(requests()).toBeLessThanOrEqual(bisectionBound(lines.length));
      expect(await values(db, "SELECT count(value) FROM pb")).toEqual([[0, 400]]);
      expect(await values(db, "SELECT text FROM pb WHERE text = text")).toEqual([[T0, 1]]);
      const [warning] = logEntries(logLines, REFUSED_LINES_LOG);
      expect(warning).toMatchObject({ lines: 401, rejected: 1, requests: requests() });
    });

    it("a field type conflict within one batch (influxd stores none of it): narrowed, every good line stored", async () => {
      // a week no other test writes to: the batch opens a new shard, where influxd refuses it whole
      const from = T0 + 60 * DAY_S;
      const offending = `pc,device_id=d value="text" ${from + 10_000}`;
      const lines = goodLines("pc", 500, from);
      lines.splice(321, 0, offending);
      // the premise, on a scratch database: the batch as a whole stores nothing
      const scratch = await createTestInfluxDb("premise");
      const premise = await fetch(`${scratch.rawUrl}/write?db=${scratch.bucket}&precision=s`, {
        method: "POST",
        body: lines.join("\n"),
      });
      expect([premise.status, await premise.json()]).toEqual([
        400,
        { error: "field type conflict" },
      ]);
      expect(await scratch.series("SELECT count(value) FROM pc")).toEqual([]);
      const { writer: w, requests } = writer();

      const outcome = await w.write(lineBatch(lines));

      expect(outcome.written).toBe(500);
      expect(outcome.rejected).toEqual([
        { line: offending, status: 400, error: expect.stringMatching(/field type conflict/) },
      ]);
      expect(requests()).toBeLessThanOrEqual(bisectionBound(lines.length));
      expect(await values(db, "SELECT count(value), sum(value) FROM pc")).toEqual([
        [0, 500, (499 * 500) / 2],
      ]);
    });

    describe("a retention policy of 1 h", () => {
      beforeAll(async () => {
        await influxql(
          db.rawUrl,
          db.bucket,
          `CREATE RETENTION POLICY "short" ON "${db.bucket}" DURATION 1h REPLICATION 1`,
        );
      });
      const nowS = () => Math.floor(Date.now() / 1000);

      it("a line dated a day ago is rejected, the current ones stored", async () => {
        const now = nowS();
        const old = `pd,device_id=d value=-1 ${now - DAY_S}`;
        const lines = Array.from({ length: 100 }, (_, i) => `pd,device_id=d value=${i} ${now - i}`);
        lines.splice(42, 0, old);
        const { writer: w, requests } = writer(`${db.bucket}/short`);

        const outcome = await w.write(lineBatch(lines));

        expect(outcome.written).toBe(100);
        expect(outcome.rejected).toEqual([
          { line: old, status: 400, error: expect.stringMatching(/beyond retention policy/) },
        ]);
        expect(requests()).toBeLessThanOrEqual(bisectionBound(lines.length));
        expect(await values(db, 'SELECT count(value), sum(value) FROM "short"."pd"')).toEqual([
          [0, 100, (99 * 100) / 2],
        ]);
      });

      it("a batch entirely beyond it is rejected from one answer, without narrowing", async () => {
        const lines = goodLines("pe", 50, nowS() - DAY_S);
        const { writer: w, requests } = writer(`${db.bucket}/short`);

        const outcome = await w.write(lineBatch(lines));

        expect(outcome.written).toBe(0);
        expect(outcome.rejected.map((r) => r.line)).toEqual(lines);
        expect(requests()).toBe(1);
        expect(await values(db, 'SELECT count(value) FROM "short"."pe"')).toEqual([]);
      });
    });
  },
);

describe("narrowing down against a fake InfluxDB that stores nothing of a refused batch", () => {
  let server: Listening;
  let requests = 0;
  const stored: string[] = [];
  /** The answer to a batch: 204 stores it; any other status stores nothing of it. */
  let answer: (lines: string[]) => { status: number; body?: unknown };

  beforeAll(async () => {
    server = await listen(
      createServer(async (req: IncomingMessage, res) => {
        requests++;
        const chunks: Buffer[] = [];
        for await (const c of req) chunks.push(c as Buffer);
        const lines = Buffer.concat(chunks).toString("utf8").split("\n").filter(Boolean);
        const { status, body } = answer(lines);
        if (status === 204) stored.push(...lines);
        res.writeHead(status, { "content-type": "application/json" });
        res.end(body === undefined ? undefined : JSON.stringify(body));
      }),
    );
  });
  afterAll(() => server.close());
  beforeEach(() => {
    requests = 0;
    stored.length = 0;
  });

  const target = () => ({ url: server.url, token: "t", org: "o", bucket: "b" });
  const lines = (count: number) => Array.from({ length: count }, (_, i) => `m value=${i} ${i}`);
  /** Refuses (with `status`) every batch that holds one of `bad`, naming no line. */
  const refusing =
    (bad: readonly string[], status = 400) =>
    (batch: string[]) =>
      batch.some((l) => bad.includes(l))
        ? { status, body: { code: "invalid", message: "field type conflict" } }
        : { status: 204 };

  it("1 bad line in 1024 takes at most 2*log2(1024)+1 requests; each good line is stored once", async () => {
    const all = lines(1024);
    const bad = all[700] ?? "";
    answer = refusing([bad]);
    const { writer, logLines } = writerFor(target(), { batchSize: 5000 });

    const outcome = await writer.write(lineBatch(all));

    expect(outcome).toEqual({
      written: 1023,
      rejected: [{ line: bad, status: 400, error: "field type conflict" }],
    });
    expect(requests).toBeLessThanOrEqual(2 * Math.log2(1024) + 1);
    // both halves are sent before either is narrowed: stored in another order, each line once
    expect(stored.sort()).toEqual(all.filter((l) => l !== bad).sort());
    expect(logEntries(logLines, REFUSED_LINES_LOG)).toEqual([
      expect.objectContaining({ lines: 1024, rejected: 1, requests }),
    ]);
  });

  it("422 (InfluxDB 2.x/3.x) is narrowed down the same way; 3 bad lines stay within the bound", async () => {
    const all = lines(1000);
    const bad = [all[3] ?? "", all[500] ?? "", all[999] ?? ""];
    answer = refusing(bad, 422);

    const outcome = await writerFor(target()).writer.write(lineBatch(all));

    expect(outcome.rejected.map((r) => [r.line, r.status])).toEqual(bad.map((l) => [l, 422]));
    expect(outcome.written).toBe(997);
    expect(requests).toBeLessThanOrEqual(bisectionBound(1000, 3));
    expect(stored.sort()).toEqual(all.filter((l) => !bad.includes(l)).sort());
  });

  it("one warning per narrowed batch, not one per line", async () => {
    const all = lines(2500);
    const bad = all.filter((_, i) => i % 100 === 7);
    answer = refusing(bad);
    const { writer, logLines } = writerFor(target(), { batchSize: 1000 });

    const outcome = await writer.write(lineBatch(all));

    expect(outcome.rejected).toHaveLength(bad.length);
    expect(outcome.written).toBe(2500 - bad.length);
    expect(logEntries(logLines, REFUSED_LINES_LOG).map((e) => [e.lines, e.rejected])).toEqual([
      [1000, 10],
      [1000, 10],
      [500, 5],
    ]);
  });

  it("lines that InfluxDB 3.x names in `data` are taken out without bisection", async () => {
    const all = lines(200);
    const bad = [all[17] ?? "", all[150] ?? ""];
    answer = (batch) => {
      const named = batch.filter((l) => bad.includes(l));
      if (named.length === 0) return { status: 204 };
      return {
        status: 400,
        body: {
          error: "partial write of line protocol occurred",
          data: named.map((l) => ({
            original_line: l,
            line_number: batch.indexOf(l) + 1,
            error_message: "invalid column type",
          })),
        },
      };
    };

    const outcome = await writerFor(target()).writer.write(lineBatch(all));

    expect(outcome.rejected).toEqual(
      bad.map((line) => ({ line, status: 400, error: "invalid column type" })),
    );
    expect(requests).toBe(2);
    expect(stored).toEqual(all.filter((l) => !bad.includes(l)));
  });

  it("a 400 for every line fails the write as refused after 2*log2(n)+1 requests, not 2n-1", async () => {
    answer = () => ({ status: 400, body: { message: "bad" } });

    const write = writerFor(target()).writer.write(lineBatch(lines(1024)));

    await expect(write).rejects.toMatchObject({
      name: "InfluxWriteError",
      code: "refused",
      status: 400,
      fatal: false,
      message: expect.stringMatching(
        /^InfluxDB refused a write of 1024 lines as a whole \(HTTP 400: bad;/,
      ),
    });
    // the batch, then both halves of each first half down to two single lines
    expect(requests).toBe(2 * Math.log2(1024) + 1);
    expect(stored).toEqual([]);
  });

  it("one line in 8 refused, the first among them: dead letters, the others stored, no failure", async () => {
    const all = lines(64);
    const bad = all.filter((_, i) => i % 8 === 0);
    answer = refusing(bad);

    const outcome = await writerFor(target()).writer.write(lineBatch(all));

    expect(outcome.rejected.map((r) => r.line)).toEqual(bad);
    expect(outcome.written).toBe(56);
    expect(stored.sort()).toEqual(all.filter((l) => !bad.includes(l)).sort());
  });

  it("a transient failure while narrowing is retried; one that lasts rejects the write", async () => {
    const all = lines(16);
    let calls = 0;
    answer = (batch) => {
      calls++;
      if (calls === 3) return { status: 503, body: { message: "busy" } };
      return refusing([all[5] ?? ""])(batch);
    };
    const outcome = await writerFor(target(), { sleep: async () => undefined }).writer.write(
      lineBatch(all),
    );
    expect(outcome.rejected.map((r) => r.line)).toEqual([all[5]]);
    expect(stored.sort()).toEqual(all.filter((_, i) => i !== 5).sort());

    answer = (batch) =>
      batch.length === all.length ? refusing([all[5] ?? ""])(batch) : { status: 503 };
    await expect(
      writerFor(target(), { sleep: async () => undefined }).writer.write(lineBatch(all)),
    ).rejects.toMatchObject({ code: "unavailable", status: 503 });
  });
});
