import { jest } from "@jest/globals";
import type { ApiClient, ApiClientOptions } from "../../src/api/api-client.js";
import { ApiError } from "../../src/api/errors.js";
import { RateGate } from "../../src/api/rate-gate.js";
import { recordPages } from "../../src/transform/record-pages.js";
import { answerRecords } from "../support/data-answers.js";
import { useRealTime } from "../support/fake-time.js";
import { captureLogger } from "../support/log-capture.js";
import { clientFor, ManualClock, startTestSimulator } from "../support/simulator.js";
import { withDeadline } from "../support/wait.js";
import {
  closeHostileServers,
  HOSTILE_NOW,
  HOSTILE_QUERY,
  type HostileHandler,
  hostileClient,
  rejection,
} from "./hostile-server.js";
import { VirtualTime } from "./virtual-time.js";

const NOW = HOSTILE_NOW;

afterEach(closeHostileServers);
// a test that failed before its VirtualTime's dispose leaves no fake timers to the next
afterEach(useRealTime);

const QUERY = HOSTILE_QUERY;

/** A client of a hostile server that hands out a token, then answers the rest with `handler`. */
const clientOf = (handler: HostileHandler, options: Partial<ApiClientOptions> = {}) =>
  hostileClient(
    handler,
    { timeoutMs: 5_000, retry: { retries: 5, baseDelayMs: 1, maxDelayMs: 5 }, ...options },
    "deadline-test-token",
  );

/**
 * Fetches GET /data whole, then reads its pages; resolves with the records, or the error it ended
 * with (no record of an answer that never came whole reaches the caller).
 */
async function pull(client: ApiClient, pageSize = 1): Promise<{ records: number; error: unknown }> {
  let records = 0;
  try {
    const answered = await client.data(QUERY);
    for await (const page of recordPages(answered.value, QUERY.values, pageSize)) {
      records += page.records.length;
    }
  } catch (error) {
    return { records, error };
  }
  return { records, error: undefined };
}

function expectDeadline(error: unknown, seconds: string): ApiError {
  expect(error).toBeInstanceOf(ApiError);
  expect(error).toMatchObject({ code: "timeout", retryable: false });
  expect(String(error)).toContain(`got no complete answer within API_DEADLINE_MS (${seconds} s)`);
  return error as ApiError;
}

describe("API_DEADLINE_MS bounds one request as a whole", () => {
  it("a server that accepts and never answers: timeout naming API_DEADLINE_MS", async () => {
    const { client, paths } = await clientOf(
      () => {
        // never answers
      },
      { deadlineMs: 800 },
    );
    const error = await withDeadline(rejection(client.listDevices()), 10_000, "listDevices");
    const failure = expectDeadline(error, "0.8");
    expect(failure.message).toMatch(/after 1 attempt\b/);
    expect(paths).toEqual(["/create_token", "/devices"]);
  }, 15_000);

  it("says what it waits for when the API does not answer: debug first, info near API_TIMEOUT_MS (once a minute each)", async () => {
    const { logger, lines } = captureLogger("debug");
    // the client's clock: real time plus a skip (a slow token under load has its own minute)
    let skippedMs = 0;
    let held = false;
    const { client } = await clientOf(
      (_req, res) => {
        // GET /devices is answered until the token is held (a retry of it too); then never
        if (held) return;
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ device_ids: [] }));
      },
      {
        slowNoticeMs: 50,
        timeoutMs: 600,
        deadlineMs: 1_000,
        logger,
        now: () => Date.now() + skippedMs,
      },
    );
    await client.listDevices();
    held = true;
    skippedMs = 61_000;
    const before = lines.length;
    const requests = [rejection(client.listDevices()), rejection(client.listDevices())];
    await withDeadline(Promise.all(requests), 10_000, "two requests that time out");
    const notices = lines
      .slice(before)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter(
        (event) =>
          event.msg === "waiting for the API: no answer yet (gives up after API_TIMEOUT_MS)",
      );
    // a slow first answer is no outage: debug; half of API_TIMEOUT_MS gone: info; two requests
    // and their retries within the minute say it once each
    expect(notices).toEqual([
      expect.objectContaining({ level: "debug", endpoint: "GET /devices", waitedMs: 50 }),
      expect.objectContaining({ level: "info", endpoint: "GET /devices", waitedMs: 300 }),
    ]);
  }, 15_000);

  it("an error body trickled 1 byte every 200 ms: timeout naming API_DEADLINE_MS", async () => {
    const { client } = await clientOf(
      (_req, res) => {
        res.writeHead(500, { "content-type": "text/plain" });
        const drip = setInterval(() => res.write("x"), 200);
        res.on("close", () => clearInterval(drip));
      },
      { timeoutMs: 1_000, deadlineMs: 1_500 },
    );
    const { error } = await withDeadline(pull(client), 10_000, "data");
    expectDeadline(error, "1.5");
  }, 15_000);

  it("a 2xx answer dripping one record every 2 s: timeout naming API_DEADLINE_MS", async () => {
    const { client } = await clientOf(
      (_req, res) => {
        res.writeHead(200, { "content-type": "application/json" });
        let n = 0;
        const record = (): string =>
          `${n++ === 0 ? "[" : ","}{"timestamp":"2026-06-15T11:${String(n).padStart(2, "0")}:00","v1":1}`;
        res.write(record());
        const drip = setInterval(() => res.write(record()), 2_000);
        res.on("close", () => clearInterval(drip));
      },
      { timeoutMs: 3_000, deadlineMs: 2_500 },
    );
    const { records, error } = await withDeadline(pull(client), 10_000, "data");
    expectDeadline(error, "2.5");
    // the records that did arrive never reach the caller: only a whole answer does
    expect(records).toBe(0);
  }, 15_000);

  it("an endless error body is read up to 64 KiB only; the request goes on to its retries", async () => {
    const { client, paths } = await clientOf(
      (_req, res) => {
        res.writeHead(503, { "content-type": "text/plain" });
        const chunk = "y".repeat(16 * 1024);
        const flood = (): void => {
          if (!res.destroyed && res.write(chunk)) setImmediate(flood);
          else if (!res.destroyed) res.once("drain", flood);
        };
        flood();
      },
      { retry: { retries: 2, baseDelayMs: 1, maxDelayMs: 1 } },
    );
    const { error } = await withDeadline(pull(client), 10_000, "data");
    expect(error).toMatchObject({ code: "server_error", status: 503, attempts: 3 });
    expect(paths.filter((p) => p.startsWith("/data/"))).toHaveLength(3);
  }, 15_000);

  it("a retry whose wait would pass the deadline fails at once, saying so", async () => {
    const sleeps: number[] = [];
    const { client, paths } = await clientOf(
      (_req, res) => {
        res.writeHead(503, { "retry-after": "120" });
        res.end();
      },
      { deadlineMs: 60_000, sleep: async (ms) => void sleeps.push(ms) },
    );
    const error = await rejection(client.listDevices());
    const failure = expectDeadline(error, "60");
    expect(failure.message).toContain(
      "the next retry would wait 2 min (Retry-After: 120), past the deadline",
    );
    expect(sleeps).toEqual([]);
    expect(paths).toEqual(["/create_token", "/devices"]);
  });

  it("does not count the wait for the rate gate; the caller reads the answer after the request", async () => {
    const clock = new ManualClock(NOW);
    // a slot every 1000 s of virtual time (the gate's queue on fake timers), a 5 s deadline
    const time = new VirtualTime(clock);
    const sim = await startTestSimulator({ now: clock.now });
    try {
      const gate = new RateGate({ ratePerSecond: 0.001, now: clock.now, sleep: time.sleep });
      const { client } = clientFor(sim, {
        now: clock.now,
        gate,
        deadlineMs: 5_000,
        telemetry: time.telemetry,
      });
      const query = {
        ...QUERY,
        deviceId: "hybrid-site-01",
        values: ["e_03_01_00_000_total_solar_power"],
      };
      await time.run(answerRecords(client, query));
      let records = 0;
      const answered = await time.run(client.data(query));
      // the caller's time on the answer comes after the request ended: no deadline runs
      for await (const page of recordPages(answered.value, query.values, 10)) {
        records += page.records.length;
        clock.advance(600_000); // ten minutes on each page
      }
      expect(records).toBe(61);
      expect(clock.nowMs - NOW).toBeGreaterThan(7 * 600_000);
      // the token, the first data request and the second: three slots 1000 s apart
      expect(jest.now() - NOW).toBe(2_000_000);
    } finally {
      time.dispose();
      await sim.close();
    }
  });
});
