import { ApiClient, type ApiClientOptions } from "../../src/api/api-client.js";
import { ApiError } from "../../src/api/errors.js";
import { RateGate } from "../../src/api/rate-gate.js";
import { captureLogger } from "../support/log-capture.js";
import { withDeadline } from "../support/wait.js";
import { answerToken, closeHostileServers, hostileServer, rejection } from "./hostile-server.js";

afterEach(closeHostileServers);

/**
 * A server that answers GET /devices with `status` and `Retry-After: retryAfter` the first time,
 * then 200; and every other path with a small valid answer.
 */
async function refusing(status: number, retryAfter: string) {
  let devices = 0;
  const server = await hostileServer((_req, res, path) => {
    if (path === "/create_token") return answerToken(res, "retry-after-test-token");
    if (path === "/devices" && devices++ === 0) {
      res.writeHead(status, { "content-type": "application/json", "retry-after": retryAfter });
      res.end('{"error":"slow down"}');
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      path === "/devices"
        ? '{"device_ids":["d"]}'
        : '{"device_id":"d","resource_ids":["all_data"]}',
    );
  });
  return server;
}

function client(url: string, options: Partial<ApiClientOptions> = {}): ApiClient {
  return new ApiClient({
    baseUrl: url,
    apiKey: "retry-after-key",
    user: "u",
    password: "retry-after-pw",
    timeoutMs: 2_000,
    retry: { retries: 5, baseDelayMs: 5, maxDelayMs: 20 },
    logger: captureLogger().logger,
    ...options,
  });
}

describe("Retry-After is honoured up to API_RETRY_AFTER_MAX", () => {
  it("Retry-After: 1000000000 fails at once with a clear message, 1 request, no timer warning, the gate not paused", async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => {
      warnings.push(warning);
    };
    process.on("warning", onWarning);
    try {
      const server = await refusing(429, "1000000000");
      // the real rate gate and the real sleeps: nothing injected
      const gate = new RateGate({ ratePerSecond: 50 });
      const api = client(server.url, { gate });
      const error = await withDeadline(rejection(api.listDevices()), 5_000, "listDevices");
      expect(error).toBeInstanceOf(ApiError);
      expect(error).toMatchObject({ code: "rate_limited", status: 429, retryable: false });
      expect(String(error)).toContain(
        "GET /devices answered HTTP 429 asking to wait 11574 days (Retry-After: 1000000000), " +
          "longer than API_RETRY_AFTER_MAX (10 min): not retried",
      );
      expect(server.paths.filter((p) => p === "/devices")).toHaveLength(1);
      // the gate goes on, not paused for the Retry-After: another request through it is answered
      await withDeadline(api.listResources("d"), 5_000, "listResources");
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.name === "TimeoutOverflowWarning")).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("a Retry-After beyond a small cap fails the request (429: rate_limited, 503: server_error)", async () => {
    const sleeps: number[] = [];
    const sleep = async (ms: number): Promise<void> => void sleeps.push(ms);
    const limited = await refusing(429, "10");
    const error = await rejection(
      client(limited.url, { retryAfterMaxMs: 5_000, sleep }).listDevices(),
    );
    expect(error).toMatchObject({ code: "rate_limited", retryable: false, attempts: 1 });
    expect(String(error)).toContain(
      "asking to wait 10 s (Retry-After: 10), longer than API_RETRY_AFTER_MAX (5 s)",
    );
    const failing = await refusing(503, "Fri, 31 Dec 2100 23:59:59 GMT");
    const error503 = await rejection(
      client(failing.url, { retryAfterMaxMs: 5_000, sleep }).listDevices(),
    );
    expect(error503).toMatchObject({ code: "server_error", status: 503, retryable: false });
    expect(String(error503)).toContain("(Retry-After: Fri, 31 Dec 2100 23:59:59 GMT)");
    expect(sleeps).toEqual([]);
    expect(limited.paths.filter((p) => p === "/devices")).toHaveLength(1);
    expect(failing.paths.filter((p) => p === "/devices")).toHaveLength(1);
  });

  it("a Retry-After within the cap is honoured: waited for, the gate paused, then retried", async () => {
    const sleeps: number[] = [];
    const paused: number[] = [];
    const server = await refusing(429, "3");
    const api = client(server.url, {
      retryAfterMaxMs: 5_000,
      sleep: async (ms) => void sleeps.push(ms),
      gate: { take: async () => undefined, pause: (ms) => void paused.push(ms) },
    });
    expect(await api.listDevices()).toMatchObject({ value: { device_ids: ["d"] }, requests: 2 });
    expect(sleeps).toEqual([3_000]);
    expect(paused).toEqual([3_000]);
    expect(server.paths.filter((p) => p === "/devices")).toHaveLength(2);
  });
});
