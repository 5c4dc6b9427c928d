import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { checkInflux } from "../../src/influx/influx-check.js";
import { InfluxWriteError } from "../../src/influx/write-errors.js";
import { lineBatch } from "../../src/transform/line-protocol.js";
import { MAX_TIMER_MS } from "../../src/util/timers.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { type HungInfluxDb, hungInfluxDb, writerFor } from "../support/influx-writer.js";
import { waitUntil, withDeadline } from "../support/wait.js";

/** Records the delay of every setTimeout the code under test sets, until restored. */
function recordTimerDelays(): { readonly delays: number[]; restore(): void } {
  const real = globalThis.setTimeout;
  const delays: number[] = [];
  const recording = (handler: () => void, ms?: number): NodeJS.Timeout => {
    delays.push(ms ?? 0);
    return real(handler, ms);
  };
  globalThis.setTimeout = Object.assign(recording, real) as unknown as typeof setTimeout;
  return {
    delays,
    restore: () => {
      globalThis.setTimeout = real;
    },
  };
}

/** Generous bound of waits that must end (never asserted as a duration). */
const BOUND_MS = 20_000;

async function writeError(promise: Promise<unknown>): Promise<InfluxWriteError> {
  try {
    await withDeadline(promise, BOUND_MS, "the write");
  } catch (error) {
    expect(error).toBeInstanceOf(InfluxWriteError);
    return error as InfluxWriteError;
  }
  throw new Error("expected an InfluxWriteError");
}

interface Answer {
  readonly status: number;
  readonly headers?: Record<string, string>;
}

/** A fake InfluxDB on loopback that answers each request with `answer(n)` (n from 1) and counts. */
async function fakeInflux(answer: (n: number) => Answer) {
  const paths: string[] = [];
  const server = createServer((req, res) => {
    paths.push(req.url ?? "");
    req.resume();
    req.on("end", () => {
      const { status, headers } = answer(paths.length);
      res.writeHead(status, { "content-type": "application/json", ...headers });
      res.end(
        status === 204 ? undefined : JSON.stringify({ code: "x", message: `status ${status}` }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => paths.length,
    paths,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const target = (url: string) => ({ url, token: "t", org: "o", bucket: "b", api: "v2" as const });
const LINE = "m,device_id=d value=1 1700000000";

describe("InfluxWriter: one write() is bounded by INFLUX_DEADLINE_MS", () => {
  let hung: HungInfluxDb;
  beforeEach(async () => {
    hung = await hungInfluxDb();
  });
  afterEach(() => hung.close());

  it("a hung InfluxDB (accepts, never answers): the write rejects at the deadline, its request aborted", async () => {
    // the per-request timeout alone (60 s) would hold the write: the deadline ends it
    const { writer } = writerFor(target(hung.url), { deadlineMs: 1000, timeoutMs: 60_000 });
    const error = await writeError(writer.write(lineBatch([LINE])));
    expect(error).toMatchObject({ code: "unavailable", fatal: false });
    expect(error.message).toMatch(
      /^InfluxDB write did not finish within 1 s \(INFLUX_DEADLINE_MS=1000\)/,
    );
    expect(hung.connections()).toBe(1);
    await hung.allClosed();
    await withDeadline(writer.close(), BOUND_MS, "close()");
  });

  it("the deadline covers backoff waits too: a wait that never ends is cut at the deadline", async () => {
    const fake = await fakeInflux(() => ({ status: 503 }));
    try {
      const { writer } = writerFor(target(fake.url), {
        deadlineMs: 1000,
        retry: { retries: 20, baseDelayMs: 10, maxDelayMs: 10 },
        sleep: () => new Promise<void>(() => undefined),
      });
      const error = await writeError(writer.write(lineBatch([LINE])));
      expect(error.message).toMatch(
        /^InfluxDB write did not finish within 1 s \(INFLUX_DEADLINE_MS=1000\); last failure: HTTP 503: status 503$/,
      );
      expect(fake.requests()).toBe(1);
    } finally {
      await fake.close();
    }
  });
});

describe("InfluxWriter: Retry-After is honoured up to INFLUX_RETRY_AFTER_MAX", () => {
  it.each([429, 503])(
    "HTTP %i with Retry-After: 1000000000: one request, the write fails at once, no timer past 2^31-1 ms",
    async (status) => {
      const fake = await fakeInflux(() => ({
        status,
        headers: { "retry-after": "1000000000" },
      }));
      // jest's sandboxed `process` never sees the real process's warnings, so this watches their
      // cause instead: a delay a timer cannot hold (Node warns and fires it after 1 ms)
      const timers = recordTimerDelays();
      try {
        // the real (default) sleep: an overflowing timer would fire after 1 ms, again and again
        const { writer } = writerFor(target(fake.url), {
          retry: { retries: 5, baseDelayMs: 10, maxDelayMs: 50 },
        });
        const error = await writeError(writer.write(lineBatch([LINE, LINE])));
        expect(error).toMatchObject({ code: "unavailable", status, fatal: false });
        expect(error.message).toBe(
          "InfluxDB asked to wait 11574 days (Retry-After: 1000000000), more than " +
            "INFLUX_RETRY_AFTER_MAX (10 min): the write of 2 lines fails now",
        );
        expect(fake.requests()).toBe(1);
        expect(timers.delays.filter((ms) => !(ms <= MAX_TIMER_MS))).toEqual([]);
      } finally {
        timers.restore();
        await fake.close();
      }
    },
  );

  it("a Retry-After within the cap is waited (never less); one beyond it fails without a wait", async () => {
    const answers: Answer[] = [
      { status: 429, headers: { "retry-after": "600" } },
      { status: 204 },
      { status: 429, headers: { "retry-after": "601" } },
    ];
    const fake = await fakeInflux((n) => answers[n - 1] ?? { status: 204 });
    try {
      const sleeps: number[] = [];
      const { writer } = writerFor(target(fake.url), {
        retryAfterMaxMs: 600_000,
        deadlineMs: 3_600_000,
        sleep: async (ms) => {
          sleeps.push(ms);
        },
      });
      await expect(writer.write(lineBatch([LINE]))).resolves.toEqual({ written: 1, rejected: [] });
      expect(sleeps).toEqual([600_000]);
      expect(fake.requests()).toBe(2);

      const error = await writeError(writer.write(lineBatch([LINE])));
      expect(error.message).toMatch(
        /^InfluxDB asked to wait 10 min \(Retry-After: 601\), more than INFLUX_RETRY_AFTER_MAX \(10 min\)/,
      );
      expect(sleeps).toEqual([600_000]);
      expect(fake.requests()).toBe(3);
    } finally {
      await fake.close();
    }
  });

  it("a Retry-After that would outlast the deadline fails the write now, not at the deadline", async () => {
    const fake = await fakeInflux(() => ({ status: 429, headers: { "retry-after": "60" } }));
    try {
      const sleeps: number[] = [];
      const { writer } = writerFor(target(fake.url), {
        deadlineMs: 5000,
        sleep: async (ms) => {
          sleeps.push(ms);
        },
      });
      const error = await writeError(writer.write(lineBatch([LINE])));
      expect(error.message).toMatch(
        /^InfluxDB write did not finish within 5 s \(INFLUX_DEADLINE_MS=5000\); last failure: HTTP 429/,
      );
      expect(sleeps).toEqual([]);
      expect(fake.requests()).toBe(1);
    } finally {
      await fake.close();
    }
  });
});

describe("InfluxWriter.abort()", () => {
  let hung: HungInfluxDb;
  beforeEach(async () => {
    hung = await hungInfluxDb();
  });
  afterEach(() => hung.close());

  it("ends a hung write at once; pending and later writes reject (fatal); close() resolves", async () => {
    const { writer } = writerFor(target(hung.url), { timeoutMs: 60_000 });
    const inFlight = writer.write(lineBatch([LINE]));
    const second = writer.write(lineBatch([LINE]));
    await hung.connected();
    writer.abort("shutting down");
    for (const write of [inFlight, second, writer.write(lineBatch([LINE]))]) {
      const error = await writeError(write);
      expect(error).toMatchObject({
        code: "unavailable",
        fatal: true,
        message: "aborted: shutting down",
      });
    }
    await withDeadline(writer.close(), BOUND_MS, "close() after abort()");
    await hung.allClosed();
    await expect(writer.check()).rejects.toThrow("aborted: shutting down");
  });

  it("ends a write waiting out a backoff (its timer cleared)", async () => {
    const fake = await fakeInflux(() => ({ status: 503, headers: { "retry-after": "100" } }));
    try {
      const { writer } = writerFor(target(fake.url), {
        retry: { retries: 5, baseDelayMs: 1000, maxDelayMs: 1000 },
      });
      const write = writer.write(lineBatch([LINE]));
      await waitUntil(() => fake.requests() > 0, "the first request", {
        timeoutMs: BOUND_MS,
        intervalMs: 10,
      });
      writer.abort("stop");
      await expect(writeError(write)).resolves.toMatchObject({ message: "aborted: stop" });
      await withDeadline(writer.close(), BOUND_MS, "close()");
      expect(fake.requests()).toBe(1);
    } finally {
      await fake.close();
    }
  });

  it("ends a readiness check in flight", async () => {
    const { writer } = writerFor(target(hung.url), { timeoutMs: 60_000 });
    const check = writer.check();
    await hung.connected();
    writer.abort("shutdown");
    await expect(withDeadline(check, BOUND_MS, "check()")).rejects.toThrow("aborted: shutdown");
    await hung.allClosed();
  });
});

describe("checkInflux: one bounded, abortable request", () => {
  let db: TestInfluxDb;
  beforeAll(async () => {
    db = await createTestInfluxDb("check_once");
  });

  /** A pass-through proxy in front of the test InfluxDB that records every request. */
  async function recordingProxy() {
    const paths: string[] = [];
    const server = createServer((req, res) => {
      paths.push(`${req.method} ${req.url}`);
      const upstream = request(
        new URL(req.url ?? "/", db.url),
        { method: req.method, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      req.pipe(upstream);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      paths,
      close: () =>
        new Promise<void>((r) => {
          server.closeAllConnections();
          server.close(() => r());
        }),
    };
  }

  it.each([
    ["passes", {}, undefined],
    ["token refused", { token: "bad-token" }, /refused the token \(HTTP 401\)/],
    ["bucket missing", { bucket: "absent" }, /no bucket absent/],
  ])("%s with exactly one request (a zero-line write; no /ping)", async (_name, over, message) => {
    const proxy = await recordingProxy();
    try {
      const check = checkInflux({
        url: proxy.url,
        api: "v2",
        token: db.token,
        org: db.org,
        bucket: db.bucket,
        timeoutMs: 5000,
        ...over,
      });
      if (message) await expect(check).rejects.toThrow(message);
      else await expect(check).resolves.toBeUndefined();
      expect(proxy.paths).toHaveLength(1);
      expect(proxy.paths[0]).toMatch(/^POST \/api\/v2\/write\?/);
    } finally {
      await proxy.close();
    }
  });

  describe("against a hung InfluxDB", () => {
    let hung: HungInfluxDb;
    beforeEach(async () => {
      hung = await hungInfluxDb();
    });
    afterEach(() => hung.close());

    it("ends after timeoutMs as not reachable, in one line", async () => {
      const error = await writeError(checkInflux({ ...target(hung.url), timeoutMs: 500 }));
      expect(error.message).toBe(
        `InfluxDB at ${hung.url} is not reachable (no answer within 0.5 s): check INFLUX_URL and that InfluxDB is running`,
      );
      await hung.allClosed();
    });

    it("ends at once when its AbortSignal aborts", async () => {
      const controller = new AbortController();
      const check = checkInflux({ ...target(hung.url), timeoutMs: 60_000 }, controller.signal);
      await hung.connected();
      controller.abort(new Error("readiness check abandoned"));
      const error = await writeError(check);
      expect(error.message).toBe("aborted: readiness check abandoned");
      await hung.allClosed();
    });
  });
});

describe("InfluxWriter with gzip", () => {
  it("gzips the body through the transport; the real influxd stores every line", async () => {
    const db = await createTestInfluxDb("gzip");
    const { writer } = writerFor(db, { gzip: true });
    const lines = Array.from(
      { length: 300 },
      (_, i) => `g,device_id=d value=${i} ${1_700_000_000 + i}`,
    );
    await expect(writer.write(lineBatch(lines))).resolves.toEqual({ written: 300, rejected: [] });
    const [series] = await db.series("SELECT count(value) FROM g");
    expect(series?.values[0]?.[1]).toBe(300);
  });
});
