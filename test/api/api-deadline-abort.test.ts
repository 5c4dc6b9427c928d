import { RateGate } from "../../src/api/rate-gate.js";
import { waitUntil, withDeadline } from "../support/wait.js";
import {
  answerToken,
  closeHostileServers,
  HOSTILE_QUERY,
  hostileClient,
  rejection,
} from "./hostile-server.js";

afterEach(closeHostileServers);

const QUERY = HOSTILE_QUERY;
const clientOf = hostileClient;

/** Until `paths` holds `path` (the server saw the request). */
async function seen(paths: string[], path: string): Promise<void> {
  await waitUntil(() => paths.includes(path), `a request to ${path}`, { timeoutMs: 5_000 });
}

describe("ApiClient.abort() for shutdown", () => {
  it("ends an in-flight data() and a request waiting in the gate at once, with code aborted; later calls fail at once", async () => {
    const gate = new RateGate({ ratePerSecond: 1_000 });
    const { client, paths } = await clientOf(
      (_req, res, path) => {
        if (path === "/create_token") return answerToken(res, "abort-test-token");
        // one record, then silence: the answer stays open
        res.writeHead(200, { "content-type": "application/json" });
        res.write('[{"timestamp":"2026-06-15T11:00:00","v1":1},', () => firstPage());
      },
      { gate },
    );
    let firstPage = (): void => undefined;
    const gotFirst = new Promise<void>((resolve) => {
      firstPage = resolve;
    });
    const inFlight = client.data(QUERY);
    await withDeadline(gotFirst, 5_000, "the first record sent");
    gate.pause(1_000_000_000); // 11.6 days: the next request waits in the gate
    const waiting = client.listDevices();
    await new Promise((resolve) => setImmediate(resolve));
    client.abort("the service is stopping");

    const [dataError, gateError] = await withDeadline(
      Promise.all([rejection(inFlight), rejection(waiting)]),
      5_000,
      "aborted calls",
    );
    expect(dataError).toMatchObject({ code: "aborted", retryable: false });
    expect(String(dataError)).toContain("GET /data/dev/all_data aborted: the service is stopping");
    expect(gateError).toMatchObject({ code: "aborted", endpoint: "GET /devices" });
    expect(paths).not.toContain("/devices");

    await expect(client.listResources("dev")).rejects.toMatchObject({ code: "aborted" });
    await expect(client.accessToken()).rejects.toMatchObject({ code: "aborted" });
    const later = client.data(QUERY);
    await expect(later).rejects.toMatchObject({ code: "aborted" });
    expect(paths).toEqual(["/create_token", "/data/dev/all_data"]);
  });

  it("ends a backoff sleep (a 5-minute Retry-After) and a wait for a token renewal at once", async () => {
    let offsetMs = 0;
    let tokens = 0;
    const { client, paths } = await clientOf(
      (_req, res, path) => {
        if (path === "/create_token") {
          if (++tokens === 1) return answerToken(res, "first-abort-token", 60);
          return; // the renewal never gets an answer
        }
        if (path === "/devices") {
          res.writeHead(429, { "retry-after": "300" });
          res.end();
          return;
        }
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"device_id":"dev","resource_ids":[]}');
      },
      { now: () => Date.now() + offsetMs, deadlineMs: 900_000 },
    );
    const backingOff = client.listDevices();
    await seen(paths, "/devices");
    // the 60 s token is due for renewal: two requests wait for one renewal
    offsetMs = 120_000;
    const renewing = [client.listResources("dev"), client.listResources("dev")];
    await waitUntil(() => tokens >= 2, "the renewal", { timeoutMs: 5_000 });
    client.abort();
    const errors = await withDeadline(
      Promise.all([backingOff, ...renewing].map(rejection)),
      5_000,
      "aborted calls",
    );
    for (const error of errors) {
      expect(error).toMatchObject({ code: "aborted" });
      expect(String(error)).toContain("aborted: the API client was shut down");
    }
    expect(paths.filter((p) => p === "/devices")).toHaveLength(1);
    expect(paths.filter((p) => p.endsWith("/resources"))).toHaveLength(0);
  });

  it("a call's own AbortSignal ends that call only", async () => {
    const { client, paths } = await clientOf((_req, res, path) => {
      if (path === "/create_token") return answerToken(res, "signal-test-token");
      if (path === "/devices") return; // never answers
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"device_id":"dev","resource_ids":[]}');
    });
    const controller = new AbortController();
    const call = client.listDevices({ signal: controller.signal });
    // the request is out (and never answered) when the signal ends it
    await seen(paths, "/devices");
    controller.abort("the tick was cancelled");
    const error = await withDeadline(rejection(call), 5_000, "listDevices");
    expect(error).toMatchObject({ code: "aborted" });
    expect(String(error)).toContain("GET /devices aborted: the tick was cancelled");
    expect((await client.listResources("dev")).value).toEqual({
      device_id: "dev",
      resource_ids: [],
    });
    await expect(client.listResources("dev", { signal: controller.signal })).rejects.toMatchObject({
      code: "aborted",
    });
  });
});
