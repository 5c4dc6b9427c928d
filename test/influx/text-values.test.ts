/**
 * Issue 33: a text (string) field value holding line breaks (`\n`, `\r\n`), double quotes,
 * backslashes (a trailing one, and `\n` written literally as backslash + n), tabs and emoji
 * (4-byte UTF-8) reaches the real influxd whole, however the batch it is in is cut: narrowed
 * down after a 400, halved after a 413, cut into batches of INFLUX_BATCH_SIZE lines, joined with
 * other writes by the coalescing sink. Every value is read back with InfluxQL and compared with
 * the JavaScript string the test wrote, and the counts are those of the points written (only
 * the deliberately bad line refused).
 *
 * A front before the test influxd answers 413 for bodies over a size and 400 (naming no line,
 * storing nothing) for bodies that hold a marker; everything else goes through to influxd as it
 * is. It never cuts a body into lines (a cut at every `\n` would break the very lines under
 * test): the bodies it stored are compared with the test's own lines joined by `\n`.
 *
 * The last test drives a backfill: the simulator's text value answers are replaced on the way
 * (a proxy before it) by the test's strings, JSON-escaped as any API would send them.
 */
import { createServer, type IncomingMessage, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { CoalescingSink } from "../../src/influx/coalescing-sink.js";
import { runBackfillJob } from "../../src/pipeline/backfill-job.js";
import type { DataRecord } from "../../src/records/data-record.js";
import { lineBatch, quoteString } from "../../src/transform/line-protocol.js";
import { queueJob } from "../support/backfill-jobs.js";
import { dropTestDb, recordS } from "../support/bad-data.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { writerFor } from "../support/influx-writer.js";
import { openTestPipeline, pipelineEnv, tempStateDb, testRun } from "../support/pipeline.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

/** The texts under test, each a value a device may report. */
const TEXTS: readonly string[] = [
  "first line\nsecond line",
  "windows\r\nline end\r\n",
  'she said "stop" and "go"',
  "C:\\energy\\logs\\",
  "literal \\n is no line break, nor \\r\\n",
  "tab\tseparated\tcolumns",
  "🌞⚡ sun and power 🔋",
  '\\"\n\r\n\t🌞⚡\\',
  "\\",
  '"',
  "\n",
  "\nm,device_id=forged value=1 1700000000\n",
  'a=b, c=d "e" f\\',
  "\n# not a comment\n",
  '🌞\\\n⚡\\\\"',
];

/** A part of every line the front refuses (400, naming no line). */
const REFUSE = "REFUSE-ME";
const T0 = 1_700_000_000;

/** `measurement text="…",n=i time`: one point per text, at `from + i`. */
function textLines(measurement: string, texts: readonly string[], from: number): string[] {
  return texts.map((text, i) => `${measurement} text=${quoteString(text)},n=${i} ${from + i}`);
}

/** The rows InfluxQL gives for {@link textLines}: `[time, text, n]`. */
function textRows(texts: readonly string[], from: number): [number, string, number][] {
  return texts.map((text, i) => [from + i, text, i]);
}

/** What the test influxd holds of a measurement: `[time, text, n]` rows, oldest first. */
async function storedRows(db: TestInfluxDb, measurement: string): Promise<unknown[][]> {
  const series = await db.series(`SELECT "text", "n" FROM "${measurement}"`);
  return series[0]?.values ?? [];
}

/** One write request the front received and what it answered. */
interface FrontRequest {
  readonly body: string;
  readonly bytes: number;
  readonly status: number;
}

/** The refusing front (see the module comment). */
interface Front {
  readonly url: string;
  /** Write requests since the last reset, in the order they were answered. */
  readonly requests: FrontRequest[];
  /** Bodies over this many bytes get 413 (Infinity: none). */
  maxBytes: number;
  close(): Promise<void>;
}

async function startFront(target: string): Promise<Front> {
  const requests: FrontRequest[] = [];
  const state = { maxBytes: Number.POSITIVE_INFINITY };
  const server: Server = createServer((req: IncomingMessage, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const raw = Buffer.concat(chunks);
      if (req.headers["content-encoding"] !== undefined) {
        throw new Error("the front reads plain bodies only (the writers here do not gzip)");
      }
      const body = raw.toString("utf8");
      const isWrite = req.url?.startsWith("/api/v2/write") === true;
      const refusal =
        !isWrite || raw.length === 0
          ? undefined
          : raw.length > state.maxBytes
            ? { status: 413, code: "request too large", message: "request entity too large" }
            : body.includes(REFUSE)
              ? { status: 400, code: "invalid", message: "the front refuses this batch" }
              : undefined;
      if (refusal) {
        if (isWrite) requests.push({ body, bytes: raw.length, status: refusal.status });
        res.writeHead(refusal.status, { "content-type": "application/json" });
        res.end(JSON.stringify({ code: refusal.code, message: refusal.message }));
        return;
      }
      const headers = new Headers();
      for (const name of ["authorization", "content-type", "accept"]) {
        const value = req.headers[name];
        if (typeof value === "string") headers.set(name, value);
      }
      const method = req.method ?? "GET";
      const answer = await fetch(new URL(req.url ?? "/", target), {
        method,
        headers,
        ...(method === "GET" || method === "HEAD" ? {} : { body: raw }),
      });
      const text = Buffer.from(await answer.arrayBuffer());
      if (isWrite && raw.length > 0)
        requests.push({ body, bytes: raw.length, status: answer.status });
      const type = answer.headers.get("content-type");
      res.writeHead(answer.status, type === null ? {} : { "content-type": type });
      res.end(text);
    })().catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(error));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    get maxBytes() {
      return state.maxBytes;
    },
    set maxBytes(value: number) {
      state.maxBytes = value;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** The bodies the front passed on to influxd and influxd stored (204). */
const storedBodies = (front: Front): string[] =>
  front.requests.filter((r) => r.status === 204).map((r) => r.body);

/**
 * The stored bodies in the order of `lines` (a narrowing sends both halves of a refused batch
 * before either is narrowed, so a later half may be stored first), each found in them whole: it
 * is `lines` joined once more only when each body is a run of whole lines and each line is in one.
 */
function bodiesInOrder(front: Front, lines: readonly string[]): string {
  const all = lines.join("\n");
  const at = (body: string) => {
    const i = all.indexOf(body);
    if (i === -1) throw new Error(`a stored body is not a run of the lines: ${body.slice(0, 80)}`);
    return i;
  };
  return storedBodies(front)
    .sort((a, b) => at(a) - at(b))
    .join("\n");
}

describe("text values through the InfluxDB writer (real influxd 1.x behind a refusing front)", () => {
  let db: TestInfluxDb;
  let front: Front;
  beforeAll(async () => {
    db = await createTestInfluxDb("text_values");
    front = await startFront(db.url);
  });
  afterAll(async () => {
    await front.close();
    await dropTestDb(db);
  });
  beforeEach(() => {
    front.requests.length = 0;
    front.maxBytes = Number.POSITIVE_INFINITY;
  });

  const writer = (batchSize = 5000) => writerFor({ ...db, url: front.url }, { batchSize }).writer;

  it("the premise: every text written in one request reads back as it was written", async () => {
    const lines = textLines("t_plain", TEXTS, T0);
    const outcome = await writer().write(lineBatch(lines));
    expect(outcome).toEqual({ written: TEXTS.length, rejected: [] });
    expect(storedBodies(front)).toEqual([lines.join("\n")]);
    expect(await storedRows(db, "t_plain")).toEqual(textRows(TEXTS, T0));
  });

  it("(a) 400 for a batch with one bad line: narrowed by halving, the texts on both sides stored whole", async () => {
    const good = textLines("t_narrow", TEXTS, T0 + 1000);
    const bad = `t_narrow text=${quoteString(`${REFUSE}\n"🌞"\\`)},n=-1 ${T0 + 999}`;
    const lines = [...good.slice(0, 7), bad, ...good.slice(7)];

    const outcome = await writer().write(lineBatch(lines));

    expect(outcome).toEqual({
      written: TEXTS.length,
      rejected: [{ line: bad, status: 400, error: "the front refuses this batch" }],
    });
    // nothing was named: the batch was bisected, and every good line went out once, whole
    expect(front.requests[0]).toMatchObject({ status: 400 });
    expect(front.requests.length).toBeGreaterThan(2);
    expect(front.requests.length).toBeLessThanOrEqual(2 * Math.ceil(Math.log2(lines.length)) + 1);
    expect(bodiesInOrder(front, good)).toBe(good.join("\n"));
    expect(await storedRows(db, "t_narrow")).toEqual(textRows(TEXTS, T0 + 1000));
  });

  it("(a) influxd's own partial write (a field type conflict with stored data): only that line refused", async () => {
    const from = T0 + 2000;
    const conflict = await writer().write(lineBatch([`t_conflict text=1 ${from}`]));
    expect(conflict).toEqual({ written: 1, rejected: [] });
    front.requests.length = 0;
    const good = textLines("t_partial", TEXTS, from + 10);
    const bad = `t_conflict text=${quoteString('"\n🌞⚡\\')} ${from + 5}`;
    const lines = [...good.slice(0, 8), bad, ...good.slice(8)];

    const outcome = await writer().write(lineBatch(lines));

    expect(outcome).toEqual({
      written: TEXTS.length,
      rejected: [{ line: bad, status: 400, error: expect.stringMatching(/field type conflict/) }],
    });
    // influxd stored the others at once and said how many it dropped: narrowed by that count
    expect(front.requests[0]).toMatchObject({ body: lines.join("\n"), status: 400 });
    expect(front.requests.length).toBeGreaterThan(1);
    expect(await storedRows(db, "t_partial")).toEqual(textRows(TEXTS, from + 10));
    expect(await db.series("SELECT * FROM t_conflict")).toEqual([
      expect.objectContaining({ values: [[from, 1]] }),
    ]);
  });

  it("(b) 413 for bodies over a size: halved until they fit, texts stored whole", async () => {
    const good = textLines("t_split", TEXTS, T0 + 3000);
    const longest = Math.max(...good.map((l) => Buffer.byteLength(l)));
    front.maxBytes = 2 * longest;

    const outcome = await writer().write(lineBatch(good));

    expect(outcome).toEqual({ written: TEXTS.length, rejected: [] });
    expect(front.requests[0]).toMatchObject({ status: 413 });
    const stored = front.requests.filter((r) => r.status === 204);
    expect(stored.length).toBeGreaterThan(1);
    for (const r of stored) expect(r.bytes).toBeLessThanOrEqual(front.maxBytes);
    expect(stored.map((r) => r.body).join("\n")).toBe(good.join("\n"));
    expect(await storedRows(db, "t_split")).toEqual(textRows(TEXTS, T0 + 3000));
  });

  it("(b) a text line too large alone fails the write as refused (issue 40): no dead letter", async () => {
    const good = textLines("t_huge", TEXTS, T0 + 3500);
    const longest = Math.max(...good.map((l) => Buffer.byteLength(l)));
    front.maxBytes = 2 * longest;
    const huge = `t_huge text=${quoteString(`${'🌞⚡\n\\"'.repeat(40)}`)},n=-1 ${T0 + 3499}`;
    expect(Buffer.byteLength(huge)).toBeGreaterThan(front.maxBytes);
    const lines = [...good.slice(0, 5), huge, ...good.slice(5)];

    await expect(writer().write(lineBatch(lines))).rejects.toMatchObject({
      code: "refused",
      status: 413,
      message: expect.stringMatching(/a single line is too large/),
    });
    // halved down to the line, the lines before it stored whole; none after it sent
    const stored = front.requests.filter((r) => r.status === 204);
    expect(stored.map((r) => r.body).join("\n")).toBe(good.slice(0, 5).join("\n"));
    expect(front.requests.at(-1)).toMatchObject({ status: 413, body: huge });
  });

  it("(c) batches of 3 lines: every cut falls between whole lines, texts at the edges stored whole", async () => {
    const lines = textLines("t_cut", TEXTS, T0 + 4000);

    const outcome = await writer(3).write(lineBatch(lines));

    expect(outcome).toEqual({ written: TEXTS.length, rejected: [] });
    const expected: string[] = [];
    for (let i = 0; i < lines.length; i += 3) expected.push(lines.slice(i, i + 3).join("\n"));
    expect(front.requests.map((r) => [r.status, r.body])).toEqual(expected.map((b) => [204, b]));
    expect(await storedRows(db, "t_cut")).toEqual(textRows(TEXTS, T0 + 4000));
  });

  it("(c) batches of 3 lines with a 400 and a 413 among them: each cut, narrowed or halved on line edges", async () => {
    const good = textLines("t_cut_mixed", TEXTS, T0 + 5000);
    const longest = Math.max(...good.map((l) => Buffer.byteLength(l)));
    front.maxBytes = 2 * longest;
    const bad = `t_cut_mixed text=${quoteString(`\\${REFUSE}\r\n`)},n=-1 ${T0 + 4999}`;
    const lines = [...good.slice(0, 4), bad, ...good.slice(4)];

    const outcome = await writer(3).write(lineBatch(lines));

    expect(outcome).toEqual({
      written: TEXTS.length,
      rejected: [{ line: bad, status: 400, error: "the front refuses this batch" }],
    });
    expect(front.requests.some((r) => r.status === 413)).toBe(true);
    expect(storedBodies(front).join("\n")).toBe(good.join("\n"));
    expect(await storedRows(db, "t_cut_mixed")).toEqual(textRows(TEXTS, T0 + 5000));
  });

  it("(d) the coalescing sink joins writes into one request; each write gets its own count", async () => {
    const lines = textLines("t_join", TEXTS, T0 + 6000);
    const sink = new CoalescingSink(writer(), 100, 60_000);
    const parts = [lines.slice(0, 4), lines.slice(4, 9), lines.slice(9)];

    const outcomes = await Promise.all(
      parts.map((part, k) =>
        sink.write(lineBatch(part), k === parts.length - 1 ? { now: true } : {}),
      ),
    );
    await sink.close();

    expect(outcomes).toEqual(parts.map((part) => ({ written: part.length, rejected: [] })));
    expect(front.requests.map((r) => [r.status, r.body])).toEqual([[204, lines.join("\n")]]);
    expect(await storedRows(db, "t_join")).toEqual(textRows(TEXTS, T0 + 6000));
  });

  it("(d) a joined request with one bad line: narrowed, the bad line given back to its own write", async () => {
    const good = textLines("t_join_bad", TEXTS, T0 + 7000);
    const bad = `t_join_bad text=${quoteString(`🌞\n${REFUSE}\\`)},n=-1 ${T0 + 6999}`;
    const parts = [
      good.slice(0, 5),
      [...good.slice(5, 8), bad, ...good.slice(8, 10)],
      good.slice(10),
    ];
    const sink = new CoalescingSink(writer(), 100, 60_000);

    const outcomes = await Promise.all(
      parts.map((part, k) =>
        sink.write(lineBatch(part), k === parts.length - 1 ? { now: true } : {}),
      ),
    );
    await sink.close();

    expect(outcomes).toEqual([
      { written: 5, rejected: [] },
      { written: 5, rejected: [{ line: bad, status: 400, error: "the front refuses this batch" }] },
      { written: TEXTS.length - 10, rejected: [] },
    ]);
    expect(front.requests[0]).toMatchObject({ body: parts.flat().join("\n"), status: 400 });
    expect(bodiesInOrder(front, good)).toBe(good.join("\n"));
    expect(await storedRows(db, "t_join_bad")).toEqual(textRows(TEXTS, T0 + 7000));
  });

  it("(c)+(d) short writes joined until they fill a batch of 3, then cut at 3 lines", async () => {
    const lines = textLines("t_join_cut", TEXTS.slice(0, 7), T0 + 8000);
    const sink = new CoalescingSink(writer(3), 3, 60_000);

    // 2 + 2 lines fill a batch: sent as one write of 4 lines, which the writer cuts 3 + 1
    const first = await Promise.all([
      sink.write(lineBatch(lines.slice(0, 2))),
      sink.write(lineBatch(lines.slice(2, 4))),
    ]);
    // 2 + 1 lines: one request of 3
    const second = await Promise.all([
      sink.write(lineBatch(lines.slice(4, 6))),
      sink.write(lineBatch(lines.slice(6, 7))),
    ]);
    await sink.close();

    expect([...first, ...second]).toEqual(
      [2, 2, 2, 1].map((written) => ({ written, rejected: [] })),
    );
    expect(front.requests.map((r) => [r.status, r.body])).toEqual([
      [204, lines.slice(0, 3).join("\n")],
      [204, lines.slice(3, 4).join("\n")],
      [204, lines.slice(4, 7).join("\n")],
    ]);
    expect(await storedRows(db, "t_join_cut")).toEqual(textRows(TEXTS.slice(0, 7), T0 + 8000));
  });
});

describe("text values through a backfill (simulator answers rewritten, INFLUX_BATCH_SIZE=3)", () => {
  const HOUR_S = 3600;
  const NOW_MS = Date.UTC(2026, 5, 20, 12);
  const DEVICE = "text-site";
  const RESOURCE = "status-1";
  const TEXT_ID = "e_00_00_03_000_status_text";
  const NUMBER_ID = "e_03_01_00_000_status_power";
  const TO_S = NOW_MS / 1000 - HOUR_S;
  const FROM_S = TO_S - 2 * 24 * HOUR_S;
  /** The record whose text the front refuses. */
  const REFUSED_S = FROM_S + 17 * HOUR_S;

  /** The test's text for a record at `timeS` (what the proxy puts in the answer). */
  const textAt = (timeS: number): string => {
    if (timeS === REFUSED_S) return `${REFUSE}\n${TEXTS[0]}`;
    return TEXTS[(timeS / HOUR_S) % TEXTS.length] ?? "";
  };

  /**
   * A proxy before the simulator that replaces every string of TEXT_ID in a data answer by
   * textAt(its time); 🌞 is sent as a JSON `\u` surrogate pair, the other emoji raw.
   */
  async function rewritingProxy(target: string): Promise<{ url: string; close(): Promise<void> }> {
    const server = createServer((req, res) => {
      const upstream = request(
        new URL(req.url ?? "/", target),
        { method: req.method, headers: req.headers },
        (answer) => {
          const status = answer.statusCode ?? 502;
          if (!req.url?.startsWith("/data/") || status !== 200) {
            res.writeHead(status, answer.headers);
            answer.pipe(res);
            return;
          }
          const chunks: Buffer[] = [];
          answer.on("data", (c: Buffer) => chunks.push(c));
          answer.on("end", () => {
            const records = JSON.parse(Buffer.concat(chunks).toString("utf8")) as DataRecord[];
            for (const record of records) {
              if (typeof record[TEXT_ID] === "string") {
                record[TEXT_ID] = textAt(recordS(record.timestamp));
              }
            }
            const body = Buffer.from(
              JSON.stringify(records).replaceAll("🌞", "\\ud83c\\udf1e"),
              "utf8",
            );
            const headers = { ...answer.headers };
            delete headers["transfer-encoding"];
            res.writeHead(200, { ...headers, "content-length": String(body.length) });
            res.end(body);
          });
        },
      );
      upstream.on("error", (error) => res.destroy(error));
      req.pipe(upstream);
    });
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

  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it("every text point reads back as the string the API sent; only the refused one is a dead letter", async () => {
    const clock = new ManualClock(NOW_MS);
    const sim = await startTestSimulator({ now: clock.now, resolutionS: HOUR_S });
    cleanups.push(() => sim.close());
    sim.fleet.addDevice(DEVICE, "gridtied");
    sim.fleet.addValue(DEVICE, RESOURCE, TEXT_ID);
    sim.fleet.addValue(DEVICE, RESOURCE, NUMBER_ID);
    const proxy = await rewritingProxy(sim.url);
    cleanups.push(() => proxy.close());
    const db = await createTestInfluxDb("text_backfill");
    cleanups.push(() => dropTestDb(db));
    const front = await startFront(db.url);
    cleanups.push(() => front.close());
    // every line fits alone, but not every batch of 3 lines: some get a 413
    front.maxBytes = 300;
    const { pipeline } = await openTestPipeline(
      pipelineEnv(sim, { ...db, url: front.url }, tempStateDb(), {
        ENERGY_API_URL: proxy.url,
        INFLUX_BATCH_SIZE: "3",
        ROLLUPS: "false",
      }),
      () => new Date(clock.now()),
    );
    cleanups.push(() => pipeline.close());
    const records = sim.fleet.records(DEVICE, RESOURCE, [TEXT_ID, NUMBER_ID], FROM_S, TO_S);
    const textTimes = records
      .filter((r) => typeof r[TEXT_ID] === "string")
      .map((r) => recordS(r.timestamp));
    const numberPoints = records.filter((r) => typeof r[NUMBER_ID] === "number").length;
    expect(textTimes.length).toBeGreaterThan(40);
    expect(textTimes.filter((t) => textAt(t).includes(REFUSE))).toHaveLength(1);
    const expectedTexts = textTimes
      .filter((t) => !textAt(t).includes(REFUSE))
      .map((t) => [t, textAt(t)]);

    const spec = {
      deviceId: DEVICE,
      resourceId: RESOURCE,
      valueIds: [TEXT_ID, NUMBER_ID],
      fromS: FROM_S,
      toS: TO_S,
      reason: "manual" as const,
    };
    const { job } = queueJob(pipeline.store.jobs, spec, 1, pipeline.now());
    const done = await runBackfillJob(pipeline, testRun(pipeline), job);

    expect(done.status).toBe("done");
    expect(done.points).toBe(textTimes.length + numberPoints - 1);
    const stored = await db.series(
      `SELECT "text" FROM "status_text" WHERE "device_id" = '${DEVICE}'`,
    );
    expect(stored.flatMap((s) => s.values)).toEqual(expectedTexts);
    const numbers = await db.series(
      `SELECT count("value") FROM "status_power" WHERE "device_id" = '${DEVICE}'`,
    );
    expect(numbers[0]?.values).toEqual([[0, numberPoints]]);
    const letters = pipeline.store.deadLetters.list();
    expect(letters.map((l) => [l.kind, l.payload.includes(`text="${REFUSE}\n`)])).toEqual([
      ["line", true],
    ]);
    // the batches were cut at 3 lines, split on 413 and narrowed on 400
    const statuses = new Set(front.requests.map((r) => r.status));
    expect([...statuses].sort()).toEqual([204, 400, 413]);
    for (const r of front.requests.filter((q) => q.status === 204)) {
      expect(r.bytes).toBeLessThanOrEqual(front.maxBytes);
    }
  });
});
