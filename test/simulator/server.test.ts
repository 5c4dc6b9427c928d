import got from "got";
import type { Simulator } from "../../src/simulator/server.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

const NOW = Date.UTC(2026, 5, 15, 12, 0, 0);
const basic = (user: string, pw: string) =>
  `Basic ${Buffer.from(`${user}:${pw}`).toString("base64")}`;

describe("simulator over HTTP", () => {
  let sim: Simulator;
  let clock: ManualClock;
  let token: string;
  const http = got.extend({ throwHttpErrors: false, retry: { limit: 0 } });
  const get = (path: string, searchParams?: Record<string, string>) =>
    http.get(`${sim.url}/${path}`, {
      headers: { authorization: `Bearer ${token}` },
      searchParams,
    });

  beforeEach(async () => {
    clock = new ManualClock(NOW);
    sim = await startTestSimulator({
      now: clock.now,
      rateClock: clock.now,
      tokenTtlS: 60,
      users: [{ user: "u", otp: "1234" }],
    });
    const set = await http.post(`${sim.url}/set_password`, {
      headers: {
        authorization: `Bearer ${Buffer.from("1234").toString("base64")}`,
        "x-api-key": sim.apiKey,
      },
      json: { user: "u", pw: "pw" },
    });
    expect(set.statusCode).toBe(200);
    const created = await http.post(`${sim.url}/create_token`, {
      headers: { authorization: basic("u", "pw"), "x-api-key": sim.apiKey },
    });
    expect(created.statusCode).toBe(200);
    const body = JSON.parse(created.body) as { token: string; expires_in: number };
    expect(body.expires_in).toBe(60);
    token = body.token;
  });
  afterEach(() => sim.close());

  describe("auth (spec 5)", () => {
    it.each([
      ["missing x-api-key", {}, 403],
      ["wrong x-api-key", { "x-api-key": "nope" }, 403],
      ["wrong password", { "x-api-key": "KEY", authorization: basic("u", "bad") }, 401],
      ["unknown user", { "x-api-key": "KEY", authorization: basic("x", "pw") }, 401],
      ["no Authorization", { "x-api-key": "KEY" }, 401],
    ])("create_token with %s -> %i", async (_name, headers: Record<string, string>, status) => {
      if (headers["x-api-key"] === "KEY") headers["x-api-key"] = sim.apiKey;
      const res = await http.post(`${sim.url}/create_token`, { headers });
      expect(res.statusCode).toBe(status);
      expect(JSON.parse(res.body)).toHaveProperty("error");
    });

    it("refuses data without a bearer token, with an unknown one and with an expired one", async () => {
      expect((await http.get(`${sim.url}/devices`)).statusCode).toBe(401);
      expect(
        (await http.get(`${sim.url}/devices`, { headers: { authorization: "Bearer forged" } }))
          .statusCode,
      ).toBe(401);
      expect((await get("devices")).statusCode).toBe(200);
      clock.advance(60_000);
      const expired = await get("devices");
      expect(expired.statusCode).toBe(401);
      expect(expired.body).toContain("expired");
    });

    it("uses a one-time password only once", async () => {
      const again = await http.post(`${sim.url}/set_password`, {
        headers: {
          authorization: `Bearer ${Buffer.from("1234").toString("base64")}`,
          "x-api-key": sim.apiKey,
        },
        json: { user: "u", pw: "other" },
      });
      expect(again.statusCode).toBe(401);
    });
  });

  describe("endpoints (spec 4)", () => {
    it("lists devices, resources and values", async () => {
      const devices = JSON.parse((await get("devices")).body) as { device_ids: string[] };
      expect(devices.device_ids).toEqual(
        expect.arrayContaining(["hybrid-site-01", "offgrid-genset-02", "audit-box-03", "site A+1"]),
      );
      const resources = JSON.parse((await get("hybrid-site-01/resources")).body);
      expect(resources).toEqual({
        device_id: "hybrid-site-01",
        resource_ids: expect.arrayContaining(["all_data"]),
      });
      const values = JSON.parse((await get("audit-box-03/all_data/values")).body);
      expect(values.values).toContain("e_00_00_00_000_days_remaining");
    });

    it.each([
      ["unknown device", "nope/resources"],
      ["unknown device (values)", "nope/all_data/values"],
      ["unknown resource", "hybrid-site-01/nope/values"],
      ["unknown route", "hybrid-site-01/all_data/nope/deeper"],
    ])("%s -> 404 with a JSON error", async (_name, path) => {
      const res = await get(path);
      expect(res.statusCode).toBe(404);
      expect(JSON.parse(res.body)).toHaveProperty("error");
    });
  });

  describe("data limits (spec 8) and parameters", () => {
    const q = (values: string, from = "20260614T120000", to = "20260615T120000") => ({
      values,
      from,
      to,
    });
    const many = (n: number) =>
      Array.from(
        { length: n },
        (_, i) => `e_03_01_00_000_total_solar_power${i === 0 ? "" : `_${i}`}`,
      );

    it.each([
      ["21 values", q(many(21).join(",")), 400, /too many values/],
      [
        "7 days and 1 second",
        q("e_03_01_00_000_total_solar_power", "20260608T115959"),
        400,
        /at most 7 days/,
      ],
      [
        "a malformed from",
        q("e_03_01_00_000_total_solar_power", "2026-06-14"),
        400,
        /malformed from/,
      ],
      [
        "an impossible to",
        q("e_03_01_00_000_total_solar_power", "20260614T120000", "20260231T000000"),
        400,
        /malformed to/,
      ],
      [
        "to before from",
        q("e_03_01_00_000_total_solar_power", "20260615T120000", "20260614T120000"),
        400,
        /before/,
      ],
      ["values_id", q("values_id"), 400, /must not be requested/],
      [
        "spaces in values",
        q("e_03_01_00_000_total_solar_power, protocol_id"),
        400,
        /without spaces/,
      ],
      ["an unknown value", q("e_03_01_00_000_nope"), 404, /unknown value id/],
      [
        "no values",
        { from: "20260614T120000", to: "20260615T120000" },
        400,
        /missing parameter: values/,
      ],
      ["no from", { values: "protocol_id", to: "20260615T120000" }, 400, /from and to/],
    ])("%s -> %i", async (_name, params, status, message) => {
      const res = await get("data/hybrid-site-01/all_data", params as Record<string, string>);
      expect(res.statusCode).toBe(status);
      const body = JSON.parse(res.body) as { error: string };
      expect(body.error).toMatch(message);
    });

    it("accepts exactly 7 days and serves both ends inclusive", async () => {
      const res = await get(
        "data/site%20A%2B1/all_data",
        q("e_03_01_00_000_total_load_power", "20260608T120000"),
      );
      expect(res.statusCode).toBe(200);
      const records = JSON.parse(res.body) as { timestamp: string }[];
      expect(records).toHaveLength(7 * 1440 + 1);
      expect(records[0]?.timestamp).toBe("2026-06-08T12:00:00");
      expect(records.at(-1)?.timestamp).toBe("2026-06-15T12:00:00");
    });

    it("serves nothing from the future", async () => {
      const res = await get(
        "data/hybrid-site-01/all_data",
        q("e_03_01_00_000_total_load_power", "20260615T115900", "20260616T000000"),
      );
      const records = JSON.parse(res.body) as { timestamp: string }[];
      expect(records.map((r) => r.timestamp)).toEqual([
        "2026-06-15T11:59:00",
        "2026-06-15T12:00:00",
      ]);
    });
  });

  describe("determinism", () => {
    const fetchDay = async (seed: number) => {
      const other = await startTestSimulator({ seed, now: () => NOW });
      const tokenRes = await http.post(`${other.url}/create_token`, {
        headers: { authorization: basic("demo", "demo-password"), "x-api-key": other.apiKey },
      });
      const t = (JSON.parse(tokenRes.body) as { token: string }).token;
      const res = await http.get(`${other.url}/data/hybrid-site-01/all_data`, {
        headers: { authorization: `Bearer ${t}` },
        searchParams: {
          values: "e_03_01_00_000_total_solar_power,e_03_07_04_000_total_solar_energy,alarm_name",
          from: "20260601T000000",
          to: "20260602T000000",
        },
      });
      await other.close();
      return res.body;
    };

    it("serves the same bytes for the same seed, different data for another", async () => {
      const [a, b, c] = [await fetchDay(7), await fetchDay(7), await fetchDay(8)];
      expect(a).toBe(b);
      expect(a).not.toBe(c);
    });
  });

  describe("test knobs", () => {
    it("rate limits past N requests per second with Retry-After", async () => {
      sim.rateLimit = { perSecond: 3 };
      const statuses = [];
      for (let i = 0; i < 5; i++) statuses.push((await get("devices")).statusCode);
      expect(statuses).toEqual([200, 200, 200, 429, 429]);
      const limited = await get("devices");
      expect(limited.headers["retry-after"]).toBe("1");
      clock.advance(1000);
      expect((await get("devices")).statusCode).toBe(200);
    });

    it("serves cached answers only while no data fault is active", async () => {
      const cached = await startTestSimulator({ now: () => NOW, cacheResponses: true });
      try {
        const tokenRes = await http.post(`${cached.url}/create_token`, {
          headers: { authorization: basic("demo", "demo-password"), "x-api-key": cached.apiKey },
        });
        const t = (JSON.parse(tokenRes.body) as { token: string }).token;
        const fetchHour = async () =>
          (
            await http.get(`${cached.url}/data/hybrid-site-01/all_data`, {
              headers: { authorization: `Bearer ${t}` },
              searchParams: {
                values: "e_03_01_00_000_total_solar_power",
                from: "20260615T100000",
                to: "20260615T110000",
              },
            })
          ).body;
        const plain = await fetchHour();
        cached.dataFaults = { poisonRate: 1 };
        const poisoned = await fetchHour();
        expect(poisoned).toContain('"e_03_01_00_000_total_solar_power":1e400');
        cached.dataFaults = {};
        expect(await fetchHour()).toBe(plain);
      } finally {
        await cached.close();
      }
    });

    it("injects 5xx, dropped connections and truncated bodies at the configured shares", async () => {
      sim.faults = { errorRate: 0.3, dropRate: 0.1, malformedRate: 0.1, endpoints: ["devices"] };
      const outcomes = { ok: 0, error: 0, dropped: 0, malformed: 0 };
      for (let i = 0; i < 200; i++) {
        try {
          const res = await get("devices");
          if (res.statusCode >= 500) outcomes.error++;
          else {
            try {
              JSON.parse(res.body);
              outcomes.ok++;
            } catch {
              outcomes.malformed++;
            }
          }
        } catch {
          outcomes.dropped++;
        }
      }
      expect(outcomes.error).toBeGreaterThan(35);
      expect(outcomes.error).toBeLessThan(85);
      expect(outcomes.dropped).toBeGreaterThan(5);
      expect(outcomes.malformed).toBeGreaterThan(5);
      expect(outcomes.ok).toBeGreaterThan(70);
      expect(sim.count("devices")).toBe(200);
    });
  });
});
