import { z } from "zod";
import { runCli } from "../../src/cli.js";
import type { Simulator } from "../../src/simulator/server.js";
import { StateStore } from "../../src/state/state-store.js";
import type { Cursor } from "../../src/state/types.js";
import { DAY_S } from "../../src/util/utc-time.js";
import { storedJobs } from "../support/backfill-jobs.js";
import { dropTestDb } from "../support/bad-data.js";
import { bufferIo } from "../support/cli-io.js";
import { asTerminal } from "../support/fake-tty.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { influxql } from "../support/influxd.js";
import { pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

const HOUR_MS = 3_600_000;
const X = "hybrid-site-01";
const D0 = Date.UTC(2026, 5, 13) / 1000;
const D1 = D0 + DAY_S;
const D2 = D1 + DAY_S;
const day = (s: number) => new Date(s * 1000).toISOString().slice(0, 10);

const auditJson = z.object({
  from: z.string(),
  to: z.string(),
  resources: z.number(),
  days: z.number(),
  dataRequests: z.number(),
  catalogRequests: z.number(),
  holes: z.array(z.unknown()),
  notSynced: z.array(
    z.object({
      deviceId: z.string(),
      resourceId: z.string(),
      syncedUntil: z.string().nullable(),
      apiRecords: z.number(),
    }),
  ),
});

describe("energy-etl audit after a sync, as the API's clock moves on", () => {
  // the simulator's clock, before noon: the audited range ends 2 days and a few hours after --from
  const clock = new ManualClock(Date.UTC(2026, 5, 15, 4, 30));
  let sim: Simulator;
  let db: TestInfluxDb;
  let stateDb: string;
  let env: Record<string, string>;

  async function cli(...argv: string[]) {
    const io = bufferIo(env);
    const code = await runCli(argv, io);
    return { code, out: io.out(), err: io.err() };
  }

  function cursors(): Cursor[] {
    const store = StateStore.open(stateDb);
    try {
      return store.cursors.list().filter((c) => c.deviceId === X);
    } finally {
      store.close();
    }
  }

  /** Per resource of X: the records the API has after its cursor's newest record, up to now. */
  function unsynced(): { resourceId: string; syncedUntil: number; records: number }[] {
    const nowS = clock.now() / 1000;
    return cursors().map((c) => {
      const syncedUntil = c.newestRecordS ?? c.startedS - 1;
      const values = sim.fleet.valueIds(X, c.resourceId) ?? [];
      const records = sim.fleet.records(X, c.resourceId, values, syncedUntil + 1, nowS);
      return {
        resourceId: c.resourceId,
        syncedUntil,
        records: new Set(records.map((r) => r.timestamp)).size,
      };
    });
  }

  const catalogRequests = () => sim.count("devices") + sim.count("resources") + sim.count("values");

  beforeAll(async () => {
    sim = await startTestSimulator({ now: clock.now, resolutionS: 3600 });
    db = await createTestInfluxDb("audit_unsynced");
    stateDb = tempStateDb();
    env = pipelineEnv(sim, db, stateDb, { SYNC_START: day(D0), LOG_LEVEL: "warn" });
  });

  afterAll(async () => {
    await sim.close();
    await dropTestDb(db);
  });

  it("audit --fix, then audit: what is newer than the last sync is named 'not synced yet', not a hole (exit 0); the summary's days and requests are those listed and made", async () => {
    expect(await cli("sync", "--device", X)).toMatchObject({ code: 0 });
    const resources = sim.fleet.resourceIds(X) ?? [];
    expect(
      cursors()
        .map((c) => c.resourceId)
        .sort(),
    ).toEqual([...resources].sort());
    // a real hole below the cursors: day D1 of X
    await influxql(
      db.rawUrl,
      db.bucket,
      `DELETE FROM /.*/ WHERE "device_id" = '${X}' AND time >= ${D1}s AND time < ${D2}s`,
    );

    clock.advance(3 * HOUR_MS);
    const fixed = await cli("audit", "--device", X, "--from", day(D0), "--fix");
    expect(fixed.err).toBe("");
    expect(fixed.code).toBe(0);
    // exactly the deleted day is fixed; the hours after the sync are no hole
    expect(fixed.out).toContain(
      `fixed: ${resources.length}/${resources.length} backfill jobs done`,
    );
    const store = StateStore.open(stateDb);
    try {
      const jobs = storedJobs(store).filter((j) => j.reason === "audit");
      expect(jobs.map((j) => [j.resourceId, day(j.fromS), day(j.toS), j.status]).sort()).toEqual(
        resources.map((r) => [r, day(D1), day(D1), "done"]).sort(),
      );
    } finally {
      store.close();
    }
    const tailBefore = unsynced().reduce((n, r) => n + r.records, 0);
    expect(tailBefore).toBeGreaterThan(0);
    expect(fixed.out).toContain(`not synced yet: ${tailBefore} records`);

    // the API's clock moves on: one more record per resource, still no hole
    clock.advance(HOUR_MS);
    const tail = unsynced();
    const tailRecords = tail.reduce((n, r) => n + r.records, 0);
    expect(tailRecords).toBeGreaterThan(tailBefore);
    sim.resetLog();
    const io = bufferIo(env);
    asTerminal(io.stderr, 140);
    const to = new Date(clock.now()).toISOString();
    const code = await runCli(["audit", "--device", X, "--from", day(D0), "--to", to], io);
    const out = io.out();
    expect(code).toBe(0);
    const dataRequests = sim.count("data");
    expect(dataRequests).toBeGreaterThan(0);
    // three days listed, three counted: D0, D1 and today up to now
    expect(out).toContain(
      `audit ${day(D0)} .. ${day(D2)}: ${resources.length} device resources x 3 days, `,
    );
    expect(out).toContain(`${dataRequests} data requests, ${catalogRequests()} catalog requests`);
    expect(out).toContain("no holes");
    expect(out).toContain(`not synced yet: ${tailRecords} records`);
    // the progress bar counts the data requests the summary names
    const bar = [...io.err().matchAll(/(\d+)\/(\d+) data requests/g)].at(-1);
    expect([bar?.[1], bar?.[2]]).toEqual([String(dataRequests), String(dataRequests)]);

    sim.resetLog();
    const json = await cli("audit", "--device", X, "--from", day(D0), "--to", to, "--json");
    expect(json.code).toBe(0);
    const result = auditJson.parse(JSON.parse(json.out));
    expect(result).toMatchObject({
      days: 3,
      holes: [],
      dataRequests: sim.count("data"),
      catalogRequests: catalogRequests(),
    });
    const byResource = (list: readonly { resourceId: string }[]) =>
      [...list].sort((a, b) => a.resourceId.localeCompare(b.resourceId));
    expect(byResource(result.notSynced)).toEqual(
      byResource(
        tail
          .filter((r) => r.records > 0)
          .map((r) => ({
            deviceId: X,
            resourceId: r.resourceId,
            syncedUntil: new Date(r.syncedUntil * 1000).toISOString(),
            apiRecords: r.records,
          })),
      ),
    );
  });
});
