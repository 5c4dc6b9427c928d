import { ApiClient } from "../../src/api/api-client.js";
import { MAX_TOKEN_RENEWALS_PER_REQUEST } from "../../src/api/api-request.js";
import type { DataQuery } from "../../src/api/data-stream.js";
import { ApiError } from "../../src/api/errors.js";
import { RateGate } from "../../src/api/rate-gate.js";
import { scrubSecrets } from "../../src/logger.js";
import { answerRecords } from "../support/data-answers.js";
import { useRealTime } from "../support/fake-time.js";
import { captureLogger } from "../support/log-capture.js";
import { clientFor, ManualClock, startTestSimulator } from "../support/simulator.js";
import { withDeadline } from "../support/wait.js";
import { answerToken, closeHostileServers, hostileServer, rejection } from "./hostile-server.js";
import { VirtualTime } from "./virtual-time.js";

const NOW = Date.UTC(2026, 5, 15, 12, 0, 0);
const HOUR_MS = 3_600_000;

afterEach(closeHostileServers);
// a test that failed before its VirtualTime's dispose leaves no fake timers to the next
afterEach(useRealTime);

/** A deterministic source of retry jitter. */
function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 48_271) % 2_147_483_647;
    return state / 2_147_483_647;
  };
}

describe("access token under load (issue 10)", () => {
  it("short TTL + low rate + high concurrency + 5xx and 429 faults, many chunks queued: completes with no auth failure", async () => {
    const clock = new ManualClock(NOW);
    const time = new VirtualTime(clock);
    // the simulator, the client and the rate gate (its queue on jest's fake timers, which
    // VirtualTime fires in step with the clock) share one virtual clock: tokens expire by it,
    // the simulator's one-second rate windows run on it, and every wait advances it
    const sim = await startTestSimulator({
      now: clock.now,
      rateClock: clock.now,
      tokenTtlS: 6,
      rateLimit: { perSecond: 1 },
      faults: { errorRate: 0.15 },
    });
    try {
      const gate = new RateGate({ ratePerSecond: 2, now: clock.now, sleep: time.sleep });
      const { client } = clientFor(sim, {
        now: clock.now,
        sleep: time.sleep,
        gate,
        telemetry: time.telemetry,
        random: seededRandom(7),
        retry: { retries: 10, baseDelayMs: 500, maxDelayMs: 30_000 },
      });
      const queries: DataQuery[] = [];
      for (const deviceId of sim.fleet.deviceIds().slice(0, 4)) {
        const values = (sim.fleet.valueIds(deviceId, "all_data") ?? [])
          .filter((v) => v !== "values_id")
          .slice(0, 3);
        for (let h = 48; h > 0; h -= 3) {
          queries.push({
            deviceId,
            resourceId: "all_data",
            values,
            from: new Date(NOW - h * HOUR_MS),
            to: new Date(NOW - (h - 3) * HOUR_MS),
          });
        }
      }
      expect(queries).toHaveLength(64);

      const counts: number[] = [];
      const failures: string[] = [];
      let next = 0;
      const worker = async (): Promise<void> => {
        for (let i = next++; i < queries.length; i = next++) {
          const query = queries[i];
          if (query === undefined) return;
          try {
            counts[i] = (await answerRecords(client, query)).length;
          } catch (error) {
            failures.push(
              error instanceof ApiError ? `${error.code}: ${error.message}` : String(error),
            );
          }
        }
      };
      // API_CONCURRENCY=8 at API_RATE_LIMIT=2 against a 6 s token
      await time.run(Promise.all(Array.from({ length: 8 }, worker)));

      expect(failures).toEqual([]);
      queries.forEach((q, i) => {
        const fromS = q.from.getTime() / 1000;
        const expected = sim.fleet.records(
          q.deviceId,
          q.resourceId,
          q.values,
          fromS,
          fromS + 3 * 3600,
        );
        expect(counts[i]).toBe(expected.length);
      });
      const elapsedMs = clock.nowMs - NOW;
      const tokens = sim.count("create_token", 200);
      const figures = {
        virtualSeconds: elapsedMs / 1000,
        requests: sim.requests.length,
        createToken: tokens,
        createTokenAttempts: sim.count("create_token"),
        http401: sim.count(undefined, 401),
        http429: sim.count(undefined, 429),
        http5xx: sim.requests.filter((r) => r.status >= 500).length,
      };
      if (process.env.REPORT_FIGURES) process.stdout.write(`${JSON.stringify(figures)}\n`);
      // the token is read after the slot: never refused, so never renewed early
      expect(figures.http401).toBe(0);
      expect(figures.http429).toBeGreaterThan(0);
      expect(figures.http5xx).toBeGreaterThan(0);
      // one token per 5.4 s (6 s minus the renewal margin) of virtual time at most
      expect(tokens).toBeLessThanOrEqual(Math.floor(elapsedMs / 5400) + 1);
    } finally {
      time.dispose();
      await sim.close();
    }
  });

  it("reads the token after the rate-gate slot: queue waits longer than the token's life cause no 401 and no burst", async () => {
    const clock = new ManualClock(NOW);
    const time = new VirtualTime(clock);
    // a 10 s token (renewed 1 s before expiry) and a slot every 2 s: 8 requests queued at once
    // wait up to 18 s, longer than the token lives
    const sim = await startTestSimulator({ now: clock.now, tokenTtlS: 10 });
    try {
      const gate = new RateGate({ ratePerSecond: 0.5, now: clock.now, sleep: time.sleep });
      const { client } = clientFor(sim, {
        now: clock.now,
        sleep: time.sleep,
        gate,
        telemetry: time.telemetry,
      });
      await time.run(Promise.all(Array.from({ length: 8 }, () => client.listDevices())));
      expect(sim.count(undefined, 401)).toBe(0);
      // a renewal takes the slot of the request that needs it, which takes the next slot: every
      // request has a slot of its own, 2 s apart
      expect(sim.requests.map((r) => `${(r.atMs - NOW) / 1000} ${r.endpoint}`)).toEqual([
        "0 create_token",
        "2 devices",
        "4 devices",
        "6 devices",
        "8 devices",
        "10 create_token",
        "12 devices",
        "14 devices",
        "16 devices",
        "18 devices",
      ]);
    } finally {
      time.dispose();
      await sim.close();
    }
  });

  it("survives a 401 twice in one request (the token expires again after a 5xx retry)", async () => {
    const clock = new ManualClock(NOW);
    const sim = await startTestSimulator({ now: clock.now });
    try {
      let refused = 0;
      const { client } = clientFor(sim, {
        now: clock.now,
        telemetry: {
          attemptSent: () => undefined,
          attemptEnded: (attempt) => {
            // after the first refusal, the renewed token's request meets a 5xx
            if (attempt.status === 401 && ++refused === 1) {
              sim.faults = { errorRate: 1, endpoints: ["devices"] };
            }
          },
          retried: () => undefined,
        },
        sleep: async () => {
          // while the request waits to retry the 5xx, its token is revoked again
          sim.faults = {};
          sim.revokeTokens();
        },
      });
      await client.listDevices();
      sim.revokeTokens();
      sim.resetLog();
      const devices = (await client.listDevices()).value;
      expect(devices.device_ids).toContain("hybrid-site-01");
      const shown = (status: number): string => (status >= 500 ? "5xx" : String(status));
      expect(sim.requests.map((r) => `${r.endpoint} ${shown(r.status)}`)).toEqual([
        "devices 401",
        "create_token 200",
        "devices 5xx",
        "devices 401",
        "create_token 200",
        "devices 200",
      ]);
    } finally {
      await sim.close();
    }
  });

  it("renews for each refused token, and gives up with a clear auth_failed after the bound", async () => {
    let issued = 0;
    const sent: string[] = [];
    const server = await hostileServer((req, res, path) => {
      if (path === "/create_token") return answerToken(res, `refused-token-${++issued}`);
      sent.push(req.headers.authorization ?? "");
      res.writeHead(401, { "content-type": "application/json" });
      res.end('{"error":"token expired"}');
    });
    const client = new ApiClient({
      baseUrl: server.url,
      apiKey: "key-refusing",
      user: "u",
      password: "pw-refusing",
      timeoutMs: 2_000,
      retry: { retries: 0, baseDelayMs: 1, maxDelayMs: 1 },
      logger: captureLogger().logger,
    });
    const error = await withDeadline(rejection(client.listDevices()), 10_000, "listDevices");
    expect(error).toMatchObject({ code: "auth_failed", status: 401, retryable: false });
    expect(String(error)).toMatch(
      /GET \/devices refused the access token \(HTTP 401\) even after renewing it 3 times.*token expired/,
    );
    expect(MAX_TOKEN_RENEWALS_PER_REQUEST).toBe(3);
    expect(issued).toBe(1 + MAX_TOKEN_RENEWALS_PER_REQUEST);
    expect(sent).toEqual([1, 2, 3, 4].map((n) => `Bearer refused-token-${n}`));
  });
});

describe("credentials and tokens as secrets", () => {
  it("registers the Basic credential when the client is made, and each token when it arrives", async () => {
    const server = await hostileServer((req, res, path) => {
      if (path === "/create_token") return answerToken(res, "echoed-access-token-0042");
      // an API that echoes the request's headers in its error bodies
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ headers: req.headers }));
    });
    const { logger, lines } = captureLogger();
    const client = new ApiClient({
      baseUrl: server.url,
      apiKey: "key-of-echo-test",
      user: "echo-user",
      password: "echo-pass",
      timeoutMs: 2_000,
      retry: { retries: 1, baseDelayMs: 1, maxDelayMs: 1 },
      logger,
    });
    const basic = Buffer.from("echo-user:echo-pass").toString("base64");
    expect(scrubSecrets(`Basic ${basic} / echo-user:echo-pass`)).toBe(
      "Basic [REDACTED] / [REDACTED]",
    );

    const error = await rejection(client.listDevices());
    expect(error).toMatchObject({ code: "server_error", status: 500 });
    const text = `${String(error)} ${JSON.stringify(error)} ${lines.join("\n")}`;
    expect(text).toContain("[REDACTED]");
    expect(text).not.toContain("echoed-access-token-0042");
    expect(text).not.toContain("key-of-echo-test");
  });

  it("an echoed Basic header in a refused create_token is redacted", async () => {
    const server = await hostileServer((req, res) => {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: `bad credentials: ${req.headers.authorization}` }));
    });
    const client = new ApiClient({
      baseUrl: server.url,
      apiKey: "key-2",
      user: "basic-user",
      password: "basic-pw",
      timeoutMs: 2_000,
      retry: { retries: 0, baseDelayMs: 1, maxDelayMs: 1 },
      logger: captureLogger().logger,
    });
    const error = await rejection(client.listDevices());
    expect(error).toMatchObject({ code: "auth_failed", endpoint: "POST /create_token" });
    const basic = Buffer.from("basic-user:basic-pw").toString("base64");
    expect(String(error)).toContain("bad credentials: Basic [REDACTED]");
    expect(`${String(error)} ${JSON.stringify(error)}`).not.toContain(basic);
  });

  it("a malformed create_token answer never quotes the new token", async () => {
    const server = await hostileServer((_req, res, path) => {
      if (path !== "/create_token") return res.end();
      // a token, but expires_in of the wrong type: the answer fails validation
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ token: "tkn-LEAKED-0001", expires_in: "3600" }));
    });
    const { logger, lines } = captureLogger();
    const client = new ApiClient({
      baseUrl: server.url,
      apiKey: "key-3",
      user: "malformed-user",
      password: "malformed-pw",
      timeoutMs: 2_000,
      retry: { retries: 0, baseDelayMs: 1, maxDelayMs: 1 },
      logger,
    });
    const error = await rejection(client.listDevices());
    expect(error).toMatchObject({ code: "invalid_response", endpoint: "POST /create_token" });
    const text = `${String(error)} ${JSON.stringify(error)} ${lines.join("\n")}`;
    expect(text).toContain("expires_in");
    expect(text).not.toContain("tkn-LEAKED-0001");
  });
});
