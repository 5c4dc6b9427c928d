import { z } from "zod";
import { runCli } from "../../src/cli.js";
import { type AuditHole, holeJobs } from "../../src/pipeline/audit.js";
import type { RecordMember } from "../../src/records/data-record.js";
import type { Simulator } from "../../src/simulator/server.js";
import { StateStore } from "../../src/state/state-store.js";
import { DAY_S } from "../../src/util/utc-time.js";
import { storedJobs } from "../support/backfill-jobs.js";
import { devicePoints, dropTestDb, recordsByResource, truthAnswers } from "../support/bad-data.js";
import { bufferIo } from "../support/cli-io.js";
import { expectedPoints, sortPoints } from "../support/expected-points.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { influxql } from "../support/influxd.js";
import { pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { groupsOf, numberIn, requestCount, requestsFor } from "../support/schema-oracle.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

describe("holeJobs", () => {
  const D = Date.UTC(2026, 0, 5) / 1000;
  const FAR_NOW = D + 365 * DAY_S;
  const hole = (
    deviceId: string,
    resourceId: string,
    dayS: number,
    group: readonly string[],
  ): AuditHole => ({
    deviceId,
    resourceId,
    dayS,
    valueId: group[0] ?? "",
    group,
    apiRecords: 24,
    stored: 0,
    deadLettered: 0,
  });
  const order = (
    jobs: readonly { spec: { deviceId: string; resourceId: string; fromS: number } }[],
  ) =>
    [...jobs].sort(
      (a, b) =>
        a.spec.deviceId.localeCompare(b.spec.deviceId) ||
        a.spec.resourceId.localeCompare(b.spec.resourceId) ||
        a.spec.fromS - b.spec.fromS,
    );

  it("merges consecutive hole days into one job per device resource with the union of the affected groups", () => {
    const holes = [
      hole("dev-a", "all_data", D + DAY_S, ["v3"]),
      hole("dev-a", "all_data", D, ["v1", "v2"]),
      hole("dev-a", "all_data", D + DAY_S, ["v1", "v2"]),
      hole("dev-a", "all_data", D + 2 * DAY_S, ["v4"]),
      hole("dev-a", "battery", D + DAY_S, ["w1"]),
      hole("dev-b", "all_data", D, ["v1", "v2"]),
    ];
    const spec = (deviceId: string, resourceId: string, valueIds: string[], days: number) => ({
      deviceId,
      resourceId,
      valueIds,
      fromS: resourceId === "battery" ? D + DAY_S : D,
      toS: (resourceId === "battery" ? D + DAY_S : D) + days * DAY_S - 1,
      reason: "audit",
    });
    expect(order(holeJobs(holes, FAR_NOW))).toEqual([
      { spec: spec("dev-a", "all_data", ["v1", "v2", "v3", "v4"], 3), chunks: 1 },
      { spec: spec("dev-a", "battery", ["w1"], 1), chunks: 1 },
      { spec: spec("dev-b", "all_data", ["v1", "v2"], 1), chunks: 1 },
    ]);
  });

  it("gives separate runs of hole days separate jobs, each with its own groups", () => {
    const holes = [
      hole("dev-a", "all_data", D, ["v1"]),
      hole("dev-a", "all_data", D + DAY_S, ["v2"]),
      hole("dev-a", "all_data", D + 3 * DAY_S, ["v3"]),
      hole("dev-a", "all_data", D + 5 * DAY_S, ["v1"]),
    ];
    expect(order(holeJobs(holes, FAR_NOW)).map((j) => j.spec)).toEqual([
      expect.objectContaining({ valueIds: ["v1", "v2"], fromS: D, toS: D + 2 * DAY_S - 1 }),
      expect.objectContaining({
        valueIds: ["v3"],
        fromS: D + 3 * DAY_S,
        toS: D + 4 * DAY_S - 1,
      }),
      expect.objectContaining({
        valueIds: ["v1"],
        fromS: D + 5 * DAY_S,
        toS: D + 6 * DAY_S - 1,
      }),
    ]);
  });

  it("counts the chunks of a job (20 values, 7 days each) and caps its end at now", () => {
    const many = Array.from({ length: 25 }, (_, i) => `v${String(i).padStart(2, "0")}`);
    const nine = Array.from({ length: 9 }, (_, i) =>
      hole("dev-a", "all_data", D + i * DAY_S, i === 0 ? many.slice(0, 20) : many.slice(20)),
    );
    const [long] = holeJobs(nine, FAR_NOW);
    // 25 values: 2 groups; 9 days: 2 windows of at most 7 days
    expect(long).toEqual({
      spec: expect.objectContaining({ valueIds: many, fromS: D, toS: D + 9 * DAY_S - 1 }),
      chunks: 4,
    });
    expect(long?.chunks).toBe(requestCount(25, D, D + 9 * DAY_S - 1));

    const nowS = D + DAY_S + 5 * 3600;
    const [today] = holeJobs(
      [hole("dev-a", "all_data", D, ["v1"]), hole("dev-a", "all_data", D + DAY_S, ["v1"])],
      nowS,
    );
    expect(today?.spec).toMatchObject({ fromS: D, toS: nowS });
    expect(today?.chunks).toBe(1);
  });
});

const holeSchema = z.object({
  deviceId: z.string(),
  resourceId: z.string(),
  day: z.string(),
  valueId: z.string(),
  values: z.number(),
  apiRecords: z.number(),
  stored: z.number(),
});
const auditSchema = z.object({
  from: z.string(),
  to: z.string(),
  resources: z.number(),
  days: z.number(),
  samples: z.number(),
  requests: z.number(),
  queries: z.number(),
  holes: z.array(holeSchema),
  unaudited: z.array(z.unknown()),
});

/** True when a member is counted in InfluxDB's `value` field (a number, a boolean, a numeric string). */
function countsAsValue(member: RecordMember | undefined): boolean {
  if (member === null || member === undefined) return false;
  if (typeof member === "string") return numberIn(member) !== undefined;
  return true;
}

describe("energy-etl audit", () => {
  const D0 = Date.UTC(2026, 5, 10) / 1000;
  const D1 = D0 + DAY_S;
  const D2 = D1 + DAY_S;
  const END = D2 + DAY_S - 1;
  const X = "hybrid-site-01";
  const Y = "site A+1";
  const day = (s: number) => new Date(s * 1000).toISOString().slice(0, 10);
  const RANGE = ["--device", X, Y, "--from", day(D0), "--to", day(D2)];
  // the simulator serves up to its clock, days after the audited ones; the CLI runs on real time
  const clock = new ManualClock(Date.UTC(2026, 5, 15, 12));
  let sim: Simulator;
  let db: TestInfluxDb;
  let stateDb: string;
  let env: Record<string, string>;

  async function cli(...argv: string[]) {
    const io = bufferIo(env);
    const code = await runCli(argv, io);
    return { code, out: io.out(), err: io.err() };
  }

  /** An audit with --json: its exit code, its answer and the data requests it made. */
  async function audit() {
    sim.resetLog();
    const { code, out, err } = await cli("audit", ...RANGE, "--json");
    if (out === "") throw new Error(`audit printed nothing (exit ${code}): ${err}`);
    return { code, result: auditSchema.parse(JSON.parse(out)), dataRequests: sim.count("data") };
  }

  /** What InfluxDB must hold for a device over the three days: everything the API has. */
  const truthOf = (deviceId: string) =>
    [...recordsByResource(truthAnswers(sim, deviceId, D0, END))].flatMap(([resourceId, records]) =>
      expectedPoints(deviceId, resourceId, records),
    );

  const resources = () =>
    [X, Y].flatMap((deviceId) =>
      (sim.fleet.resourceIds(deviceId) ?? []).map((resourceId) => ({
        deviceId,
        resourceId,
        values: sim.fleet.valueIds(deviceId, resourceId) ?? [],
      })),
    );

  beforeAll(async () => {
    sim = await startTestSimulator({ now: clock.now, resolutionS: 3600 });
    db = await createTestInfluxDb("audit");
    stateDb = tempStateDb();
    env = pipelineEnv(sim, db, stateDb, { LOG_LEVEL: "warn" });
    const filled = await cli(
      "backfill",
      "--device",
      X,
      Y,
      "--from",
      day(D0),
      "--to",
      new Date(END * 1000).toISOString(),
    );
    expect(filled).toMatchObject({ code: 0 });
    for (const deviceId of [X, Y]) {
      expect(sortPoints(await devicePoints(db, deviceId))).toEqual(sortPoints(truthOf(deviceId)));
    }
  });

  afterAll(async () => {
    await sim.close();
    await dropTestDb(db);
  });

  it("finds a deleted day of one device, for every value group, with a few sample requests; --fix fills exactly it", async () => {
    const clean = await audit();
    expect(clean.code).toBe(0);
    expect(clean.result).toMatchObject({
      from: new Date(D0 * 1000).toISOString(),
      to: new Date(END * 1000).toISOString(),
      resources: resources().length,
      days: 3,
      holes: [],
      unaudited: [],
    });

    // one request per resource per 7-day window (its samples are at most 20), against a refetch
    // of every value group
    const windows = requestCount(1, D0, END);
    const auditRequests = resources().reduce(
      (n, r) => n + Math.ceil(groupsOf(r.values).length / 20) * windows,
      0,
    );
    const refetchRequests = resources().reduce(
      (n, r) => n + requestsFor(r.values, D0, END).length,
      0,
    );
    expect(clean.dataRequests).toBe(auditRequests);
    expect(clean.dataRequests).toBeLessThan(refetchRequests);
    expect(clean.result.samples).toBe(
      resources().reduce((n, r) => n + groupsOf(r.values).length, 0),
    );
    expect(clean.result.queries).toBe(resources().length);

    await influxql(
      db.rawUrl,
      db.bucket,
      `DELETE FROM /.*/ WHERE "device_id" = '${X}' AND time >= ${D1}s AND time < ${D1 + DAY_S}s`,
    );
    const holed = await audit();
    expect(holed.code).toBe(1);
    expect(holed.dataRequests).toBe(auditRequests);
    // exactly day D1 of X: one hole per value group of each of its resources, nothing elsewhere
    const expected = resources()
      .filter((r) => r.deviceId === X)
      .flatMap((r) =>
        groupsOf(r.values).map((group) => {
          const hole = holed.result.holes.find(
            (h) => h.resourceId === r.resourceId && group.includes(h.valueId),
          );
          const valueId = hole?.valueId ?? `(no hole for the group of ${group[0]})`;
          const records = group.includes(valueId)
            ? sim.fleet.records(X, r.resourceId, [valueId], D1, D1 + DAY_S - 1)
            : [];
          return {
            deviceId: X,
            resourceId: r.resourceId,
            day: day(D1),
            valueId,
            values: group.length,
            apiRecords: records.filter((rec) => countsAsValue(rec[valueId])).length,
            stored: 0,
          };
        }),
      );
    const byKey = (h: { resourceId: string; valueId: string }) => `${h.resourceId}/${h.valueId}`;
    const sorted = <T extends { resourceId: string; valueId: string }>(list: readonly T[]) =>
      [...list].sort((a, b) => byKey(a).localeCompare(byKey(b)));
    expect(sorted(holed.result.holes)).toEqual(sorted(expected));
    expect(holed.result.holes.every((h) => h.apiRecords > 0)).toBe(true);

    sim.resetLog();
    const fixed = await cli("audit", ...RANGE, "--fix");
    const fixRequests = sim.count("data");
    const xResources = resources().filter((r) => r.deviceId === X);
    expect(fixed.code).toBe(0);
    expect(fixed.out).toContain(
      `fixed: ${xResources.length}/${xResources.length} backfill jobs done`,
    );
    // the backfill of the holes: every value group of X's resources over day D1 only
    expect(fixRequests).toBe(
      auditRequests +
        xResources.reduce((n, r) => n + requestsFor(r.values, D1, D1 + DAY_S - 1).length, 0),
    );
    const store = StateStore.open(stateDb);
    try {
      const jobs = storedJobs(store).filter((j) => j.reason === "audit");
      expect(jobs.map((j) => [j.deviceId, j.resourceId, j.fromS, j.toS, j.status]).sort()).toEqual(
        xResources.map((r) => [X, r.resourceId, D1, D1 + DAY_S - 1, "done"]).sort(),
      );
    } finally {
      store.close();
    }

    const healed = await audit();
    expect(healed.code).toBe(0);
    expect(healed.result.holes).toEqual([]);
    expect(sortPoints(await devicePoints(db, X))).toEqual(sortPoints(truthOf(X)));
    expect(sortPoints(await devicePoints(db, Y))).toEqual(sortPoints(truthOf(Y)));
  });
});
