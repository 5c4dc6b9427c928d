import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ApiClient } from "../../src/api/api-client.js";
import { ApiError } from "../../src/api/errors.js";
import type { Simulator } from "../../src/simulator/server.js";
import { recordPages } from "../../src/transform/record-pages.js";
import { answerPages, answerRecords } from "../support/data-answers.js";
import { captureLogger } from "../support/log-capture.js";
import { clientFor, ManualClock, startTestSimulator } from "../support/simulator.js";

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const NOW = Date.UTC(2026, 5, 15, 12, 0, 0);

async function expectApiError(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return error as ApiError;
  }
  throw new Error("expected an ApiError, the call succeeded");
}

describe("ApiClient against the simulator over HTTP", () => {
  let sim: Simulator;
  let clock: ManualClock;

  beforeEach(async () => {
    clock = new ManualClock(NOW);
    sim = await startTestSimulator({
      now: clock.now,
      rateClock: clock.now,
      users: [
        { user: "demo", password: "demo-password" },
        { user: "fresh", otp: "otp-123" },
      ],
    });
  });
  afterEach(() => sim.close());

  describe("password and token flow (spec 5)", () => {
    it("sets a password with the one-time password, then obtains a token with it", async () => {
      const fresh = clientFor(sim, { user: "fresh", password: "n3w-Secret" }).client;
      expect((await expectApiError(fresh.listDevices())).code).toBe("auth_failed");

      const wrongOtp = await expectApiError(fresh.setPassword("fresh", "otp-999", "n3w-Secret"));
      expect(wrongOtp).toMatchObject({ code: "auth_failed", status: 401, retryable: false });

      await fresh.setPassword("fresh", "otp-123", "n3w-Secret");
      const devices = (await fresh.listDevices()).value;
      expect(devices.device_ids.length).toBeGreaterThanOrEqual(4);

      const reused = await expectApiError(fresh.setPassword("fresh", "otp-123", "other"));
      expect(reused.status).toBe(401);
      expect(sim.count("create_token", 200)).toBe(1);
    });

    it("reports wrong credentials as auth_failed without revealing them", async () => {
      const { client, lines } = clientFor(sim, { password: "wrong-password-value" });
      const error = await expectApiError(client.listDevices());
      expect(error).toMatchObject({
        code: "auth_failed",
        status: 401,
        endpoint: "POST /create_token",
      });
      expect(error.message).not.toContain("wrong-password-value");
      expect(lines.join("\n")).not.toContain("wrong-password-value");
    });

    it("sends the API key: a wrong one is refused with 403", async () => {
      const { client } = clientFor(sim, { apiKey: "not-the-key" });
      expect(await expectApiError(client.listDevices())).toMatchObject({
        code: "auth_failed",
        status: 403,
      });
    });
  });

  describe("token renewal", () => {
    it("renews before expiry (expires_in minus a margin), never hitting a 401", async () => {
      sim.tokenTtlS = 100;
      const { client } = clientFor(sim, { now: clock.now });
      await client.listDevices();
      clock.advance(85_000);
      await client.listDevices();
      expect(sim.count("create_token")).toBe(1);
      clock.advance(6_000); // 91 s: inside the 10 s margin of a 100 s token
      await client.listDevices();
      expect(sim.count("create_token")).toBe(2);
      expect(sim.count(undefined, 401)).toBe(0);
    });

    it("renews once after a 401 and repeats the request", async () => {
      const { client } = clientFor(sim, { now: clock.now });
      await client.listDevices();
      sim.revokeTokens();
      await client.listDevices();
      expect(sim.count("devices", 401)).toBe(1);
      expect(sim.count("create_token")).toBe(2);
    });

    it("fails with a clear auth_failed after 3 renewals when every token is refused", async () => {
      const fake = await fakeApi((path) =>
        path === "/create_token"
          ? { status: 200, body: '{"token":"fake-token-refused","expires_in":3600}' }
          : { status: 401, body: '{"error":"invalid token"}' },
      );
      const client = new ApiClient({ ...clientOptions(sim, clock), baseUrl: fake.url });
      const error = await expectApiError(client.listDevices());
      expect(error).toMatchObject({ code: "auth_failed", status: 401, retryable: false });
      expect(error.message).toContain("invalid token");
      expect(error.message).toContain("even after renewing it 3 times");
      // the first token and 3 renewals (MAX_TOKEN_RENEWALS_PER_REQUEST), each refused
      expect(fake.paths).toEqual(Array(4).fill(["/create_token", "/devices"]).flat());
    });

    it("shares one create_token call among many concurrent requests (single flight)", async () => {
      const { client } = clientFor(sim, { now: clock.now });
      const many = Array.from({ length: 40 }, (_, i) =>
        i % 2 ? client.listDevices() : client.listResources("hybrid-site-01"),
      );
      await Promise.all(many);
      expect(sim.count("create_token")).toBe(1);

      sim.revokeTokens();
      await Promise.all(Array.from({ length: 40 }, () => client.listDevices()));
      expect(sim.count("create_token")).toBe(2);
    });
  });

  describe("retries", () => {
    it("honours Retry-After (seconds) on 429, tells the caller, then succeeds", async () => {
      sim.rateLimit = { perSecond: 2 };
      const sleeps: number[] = [];
      const rateLimited: number[] = [];
      const { client } = clientFor(sim, {
        now: clock.now,
        sleep: async (ms) => {
          sleeps.push(ms);
          clock.advance(ms);
        },
        telemetry: {
          attemptSent: () => undefined,
          attemptEnded: () => undefined,
          retried: (retry) => {
            if (retry.code === "rate_limited") rateLimited.push(retry.delayMs);
          },
        },
      });
      await client.listDevices(); // create_token + devices spend this second's budget
      const devices = (await client.listDevices()).value; // 429, wait, 200
      expect(devices.device_ids.length).toBeGreaterThan(0);
      expect(sim.count("devices", 429)).toBe(1);
      expect(sleeps).toHaveLength(1);
      expect(sleeps[0]).toBeGreaterThanOrEqual(1000);
      expect(rateLimited).toEqual(sleeps);
    });

    it("honours Retry-After as an HTTP date", async () => {
      sim.rateLimit = { perSecond: 1, retryAfterStyle: "http-date" };
      const sleeps: number[] = [];
      const { client } = clientFor(sim, {
        now: clock.now,
        sleep: async (ms) => {
          sleeps.push(ms);
          clock.advance(ms);
        },
      });
      await client.listDevices();
      expect(sim.count(undefined, 429)).toBeGreaterThanOrEqual(1);
      // the simulator's date is two seconds after the current one: 2 s from NOW (a whole second)
      expect(sleeps[0]).toBe(2000);
    });

    it("retries 5xx (JSON, text and empty bodies) until success", async () => {
      sim.faults = { errorRate: 1, endpoints: ["devices"] };
      let sleeps = 0;
      const flaky = clientFor(sim, {
        sleep: async () => {
          sleeps++;
          if (sleeps === 3) sim.faults = {};
        },
      }).client;
      const devices = (await flaky.listDevices()).value;
      expect(devices.device_ids).toContain("hybrid-site-01");
      const failures = sim.requests.filter((r) => r.endpoint === "devices" && r.status >= 500);
      expect(failures.map((r) => r.status).sort()).toEqual([500, 502, 503]);
    });

    it("gives up after the bound with the last error, counting the attempts", async () => {
      sim.faults = { errorRate: 1, endpoints: ["devices"] };
      const { client, lines } = clientFor(sim, {
        retry: { retries: 2, baseDelayMs: 1, maxDelayMs: 2 },
      });
      const error = await expectApiError(client.listDevices());
      expect(error).toMatchObject({ code: "server_error", retryable: true, attempts: 3 });
      expect(sim.count("devices")).toBe(3);
      expect(lines.filter((l) => l.includes("request failed, retrying"))).toHaveLength(2);
    });

    it("retries dropped connections as network errors", async () => {
      sim.faults = { dropRate: 1, endpoints: ["devices"] };
      const { client } = clientFor(sim, { retry: { retries: 1, baseDelayMs: 1, maxDelayMs: 1 } });
      const error = await expectApiError(client.listDevices());
      expect(error).toMatchObject({ code: "network", retryable: true, attempts: 2 });
    });

    it("classifies a slow answer as a timeout", async () => {
      sim.faults = { delayMs: 500, endpoints: ["devices"] };
      const { client } = clientFor(sim, {
        timeoutMs: 100,
        retry: { retries: 0, baseDelayMs: 1, maxDelayMs: 1 },
      });
      expect(await expectApiError(client.listDevices())).toMatchObject({ code: "timeout" });
    });
  });

  describe("malformed bodies", () => {
    it("turns a truncated body into invalid_response naming endpoint, status and excerpt", async () => {
      sim.faults = { malformedRate: 1, endpoints: ["resources"] };
      const { client } = clientFor(sim, { retry: { retries: 1, baseDelayMs: 1, maxDelayMs: 1 } });
      const error = await expectApiError(client.listResources("hybrid-site-01"));
      expect(error).toMatchObject({
        code: "invalid_response",
        status: 200,
        endpoint: "GET /hybrid-site-01/resources",
        attempts: 2,
      });
      expect(error.message).toContain("GET /hybrid-site-01/resources");
      expect(error.bodyExcerpt).toMatch(/^\{"device_id"/);
    });

    it("turns a body of the wrong shape into a final invalid_response", async () => {
      const fake = await fakeApi((path) => ({
        status: 200,
        body:
          path === "/create_token"
            ? '{"token":"fake-token-shapes","expires_in":60}'
            : path === "/devices"
              ? '{"device_ids":"not-a-list"}'
              : '[{"timestamp":"yesterday","values_id":1}]',
      }));
      const client = new ApiClient({ ...clientOptions(sim, clock), baseUrl: fake.url });
      const error = await expectApiError(client.listDevices());
      expect(error).toMatchObject({ code: "invalid_response", retryable: false, status: 200 });
      expect(error.message).toContain("device_ids");
      expect(error.message).toContain("not-a-list");
      // a record of the wrong shape is one bad row (test/transform/record-decoder.test.ts): the
      // answer goes on without it
      const pages = await answerPages(client, {
        deviceId: "d",
        resourceId: "all_data",
        values: ["x"],
        from: new Date(NOW - HOUR_MS),
        to: new Date(NOW),
      });
      expect(pages.flatMap((p) => p.records)).toEqual([]);
    });

    it("hands on a record with its good members only, in pages of three (its bad ones: record-decoder.test.ts)", async () => {
      // ten records, pages of three: bad members in the first, third, fourth and last record
      const A = "e_03_01_00_000_total_solar_power";
      const B = "e_03_01_00_000_total_load_power";
      const badAt = new Set([0, 2, 3, 9]);
      const texts = Array.from({ length: 10 }, (_, k) => {
        const timestamp = `2026-06-15T0${k}:00:00`;
        return badAt.has(k)
          ? `{"timestamp":"${timestamp}","values_id":1,"${A}":1e400,"${B}":${k}}`
          : JSON.stringify({ timestamp, values_id: 1, [A]: k, [B]: k });
      });
      const fake = await fakeApi((path) => ({
        status: 200,
        body:
          path === "/create_token"
            ? '{"token":"fake-token-members","expires_in":60}'
            : `[${texts.join(",")}]`,
      }));
      const client = new ApiClient({ ...clientOptions(sim, clock), baseUrl: fake.url });
      const query = {
        deviceId: "d",
        resourceId: "all_data",
        values: [A, B],
        from: new Date(NOW - HOUR_MS),
        to: new Date(NOW),
      };
      const pages = await answerPages(client, query, { pageSize: 3 });
      expect(pages.map((p) => p.records.length)).toEqual([3, 3, 3, 1]);
      const records = pages.flatMap((p) => p.records);
      expect(records.map((r) => r[B])).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      for (const [k, record] of records.entries()) {
        expect({ k, has: A in record }).toEqual({ k, has: !badAt.has(k) });
      }
    });
  });

  describe("ids in paths", () => {
    it.each(["site A+1", "a/../devices", "ünï cödé?#%"])(
      "sends %j as one path segment",
      async (id) => {
        if (!sim.fleet.deviceIds().includes(id)) sim.fleet.addDevice(id, "gridtied");
        const { client } = clientFor(sim, { now: clock.now });
        const resources = (await client.listResources(id)).value;
        expect(resources.device_id).toBe(id);
        const values = (await client.listValues(id, "all_data")).value;
        expect(values.device_id).toBe(id);
        const records = await answerRecords(client, {
          deviceId: id,
          resourceId: "all_data",
          values: ["e_03_01_00_000_total_solar_power"],
          from: new Date(NOW - HOUR_MS),
          to: new Date(NOW),
        });
        expect(records.length).toBe(61);
        const seen = sim.requests
          .filter((r) => r.endpoint !== "create_token")
          .map((r) => r.segments);
        expect(seen).toEqual([
          [id, "resources"],
          [id, "all_data", "values"],
          ["data", id, "all_data"],
        ]);
      },
    );

    it("refuses ids that no URL can carry", async () => {
      const { client } = clientFor(sim);
      const error = await expectApiError(client.listResources(".."));
      expect(error.message).toContain('cannot address the id ".."');
      expect(sim.requests).toHaveLength(0);
    });
  });

  describe("GET /data at spec 8's limits", () => {
    it("sends exactly 20 values over exactly 7 days, comma-joined, times as YYYYMMDDTHHMMSS", async () => {
      const { client } = clientFor(sim, { now: clock.now });
      const all = (await client.listValues("hybrid-site-01", "all_data")).value.values;
      const twenty = all.filter((v) => v !== "values_id").slice(0, 20);
      const records = await answerRecords(client, {
        deviceId: "hybrid-site-01",
        resourceId: "all_data",
        values: twenty,
        from: new Date(NOW - 7 * DAY_MS),
        to: new Date(NOW),
      });
      expect(records.length).toBeGreaterThan(7 * 1440);
      const sent = sim.requests.find((r) => r.endpoint === "data");
      expect(sent?.query).toEqual({
        values: twenty.join(","),
        from: "20260608T120000",
        to: "20260615T120000",
      });
    });
  });
});

function clientOptions(sim: Simulator, clock: ManualClock) {
  return {
    baseUrl: sim.url,
    apiKey: sim.apiKey,
    user: "demo",
    password: "demo-password",
    timeoutMs: 2_000,
    retry: { retries: 3, baseDelayMs: 5, maxDelayMs: 20 },
    logger: captureLogger().logger,
    now: clock.now,
  };
}

const fakeServers: Server[] = [];
afterEach(async () => {
  await Promise.all(fakeServers.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))));
});

/** A hand-written stand-in for answers the simulator never gives (wrong shapes, endless 401s). */
async function fakeApi(
  answer: (path: string) => { status: number; body: string },
): Promise<{ server: Server; url: string; paths: string[] }> {
  const paths: string[] = [];
  const server = createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0] ?? "";
    paths.push(path);
    const { status, body } = answer(path);
    res.writeHead(status, { "content-type": "application/json" });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  fakeServers.push(server);
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, paths };
}

describe("record validation", () => {
  it("the fast record check, the detailed schema and an independent zod schema agree (property)", async () => {
    const { dataRecordSchema } = await import("../../src/records/data-record.js");
    const { keepRequested } = await import("../../src/transform/screen-answer.js");
    const fc = (await import("fast-check")).default;
    const { z } = await import("zod");
    const member = z.union([z.number(), z.string(), z.boolean(), z.null()]);
    const reference = z
      .object({
        timestamp: z
          .string()
          .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/)
          .refine((t) => {
            const ms = Date.parse(`${t}Z`);
            return !Number.isNaN(ms) && new Date(ms).toISOString().slice(0, 19) === t;
          }),
        values_id: member.optional(),
      })
      .catchall(member);
    const memberArb = fc.oneof(
      fc.double(),
      fc.constantFrom(Number.POSITIVE_INFINITY, Number.NaN),
      fc.string(),
      fc.boolean(),
      fc.constant(null),
      fc.object(),
      fc.array(fc.nat()),
    );
    const timestamp = fc.oneof(
      fc
        .date({ min: new Date("1970-01-01"), max: new Date("2100-01-01"), noInvalidDate: true })
        .map((d) => d.toISOString().slice(0, 19)),
      fc.constantFrom(
        "2026-02-30T00:00:00",
        "2026-06-10T24:00:00",
        "yesterday",
        "2026-06-10 12:00:00",
      ),
      fc.integer(),
    );
    fc.assert(
      fc.property(
        fc.record({ timestamp, values_id: memberArb }, { requiredKeys: [] }),
        fc.dictionary(fc.string({ maxLength: 6 }), memberArb, { maxKeys: 4 }),
        (base, extra) => {
          const record = { ...extra, ...base };
          const expected = reference.safeParse(record).success;
          expect(dataRecordSchema.safeParse(record).success).toBe(expected);
          // only timestamp and values_id decide whether it is a record
          const bare = reference.safeParse({
            timestamp: record.timestamp,
            values_id: record.values_id,
          }).success;
          const isRecord =
            bare ||
            (!("values_id" in record) &&
              reference.safeParse({ timestamp: record.timestamp }).success);
          // every member requested: the hot-path check judges all of them, removes none as
          // unrequested, and sets aside exactly the requested members of a record that are bad
          const all = new Set(Object.keys(record));
          const removed: string[] = [];
          const bad: { valueId: string; value: unknown }[] = [];
          const original: Record<string, unknown> = record;
          const copy: Record<string, unknown> = { ...record };
          expect(keepRequested(copy, all, removed, bad)).toBe(isRecord);
          expect(removed).toEqual([]);
          const badIds = Object.keys(original).filter(
            (k) => k !== "timestamp" && k !== "values_id" && !member.safeParse(original[k]).success,
          );
          expect(bad.map((m) => m.valueId)).toEqual(isRecord ? badIds : []);
          if (isRecord) {
            expect(bad.length === 0).toBe(expected);
            expect(dataRecordSchema.safeParse(copy).success).toBe(true);
            expect(Object.keys(copy)).toEqual(
              Object.keys(record).filter((k) => !badIds.includes(k)),
            );
          }
          // nothing requested: only timestamp and values_id are judged, the rest is removed
          const none: { valueId: string; value: unknown }[] = [];
          expect(keepRequested({ ...record }, new Set(), [], none)).toBe(isRecord);
          expect(none).toEqual([]);
        },
      ),
      { seed: 11, numRuns: 500 },
    );
  });
});

describe("streamed GET /data and slow writes", () => {
  it("API_TIMEOUT_MS bounds the API's silence; the caller's slow writes come after the answer", async () => {
    const sim = await startTestSimulator({ now: () => Date.UTC(2026, 5, 15, 12) });
    try {
      const { client } = clientFor(sim, {
        timeoutMs: 300,
        retry: { retries: 0, baseDelayMs: 1, maxDelayMs: 1 },
      });
      let batches = 0;
      let records = 0;
      const query = {
        deviceId: "site A+1",
        resourceId: "all_data",
        values: ["e_03_01_00_000_total_solar_power"],
        from: new Date(Date.UTC(2026, 5, 12, 12)),
        to: new Date(Date.UTC(2026, 5, 15, 12)),
      };
      const answered = await client.data(query);
      for await (const page of recordPages(answered.value, query.values, 1000)) {
        records += page.records.length;
        if (page.records.length > 0) batches++;
        await new Promise((r) => setTimeout(r, 250));
      }
      expect(records).toBe(3 * 1440 + 1);
      expect(batches).toBe(5);
    } finally {
      await sim.close();
    }
  });
});
