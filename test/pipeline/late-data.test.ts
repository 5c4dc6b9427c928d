/**
 * Cursors that follow the data (issue #9), end to end with real parts: the simulator over HTTP
 * on loopback with an injected clock, the run's influxd, a SQLite state file. A cursor moves only
 * as far as the newest record written and the API's clock (its Date header), never to the local
 * clock; a resource without new records for SILENT_AFTER is probed instead of fetched; a backlog
 * beyond LATE_DATA_HORIZON is left to `energy-etl audit`.
 */

import { formatQueryTime, parseQueryTime } from "../../src/api/time-format.js";
import { runCli } from "../../src/cli.js";
import { silentSince, syncRules } from "../../src/pipeline/cursor.js";
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import { runSync, type SyncResult } from "../../src/pipeline/sync.js";
import { EtlMetrics } from "../../src/service/metrics.js";
import type { LoggedRequest, Simulator } from "../../src/simulator/server.js";
import type { Cursor } from "../../src/state/types.js";
import { bufferIo } from "../support/cli-io.js";
import {
  expectedPoints,
  rawPoints,
  type StoredPoint,
  simulatorRecords,
  sortPoints,
} from "../support/expected-points.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { groupsOf } from "../support/schema-oracle.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

const MINUTE_S = 60;
const HOUR_S = 3600;
const DAY_S = 86_400;
/** On the hour, so on the grid of both resolutions used here. */
const T0_S = Date.UTC(2026, 5, 15, 12) / 1000;
/** One resource (all_data) whose 30 requestable values make two value groups. */
const DEVICE = "offgrid-genset-02";
/** A device that keeps sending while DEVICE is silent. */
const OTHER = "site A+1";
const RESOURCE = "all_data";

const secondsOf = (clock: ManualClock): number => Math.floor(clock.now() / 1000);
const iso = (s: number): string => new Date(s * 1000).toISOString();

/** The 200 data requests for `deviceId` logged since `from` (an index into sim.requests). */
function dataRequests(sim: Simulator, from: number, deviceId: string): LoggedRequest[] {
  return sim.requests
    .slice(from)
    .filter((r) => r.endpoint === "data" && r.segments[1] === deviceId && r.status === 200);
}

/** One sync; resolves with its result and the index of sim.requests where it began. */
async function syncOnce(
  pipeline: Pipeline,
  sim: Simulator,
  deviceIds: readonly string[],
): Promise<{ result: SyncResult; firstRequest: number }> {
  const firstRequest = sim.requests.length;
  const result = await runSync(pipeline, { deviceIds });
  return { result, firstRequest };
}

function cursorOf(pipeline: Pipeline, deviceId: string): Cursor {
  const cursor = pipeline.store.cursors.get(deviceId, RESOURCE);
  if (cursor === undefined) throw new Error(`no cursor ${deviceId}/${RESOURCE}`);
  return cursor;
}

/** A device's data points in InfluxDB (etl_* and rollup_* left out). */
async function pointsOf(db: TestInfluxDb, deviceId: string): Promise<StoredPoint[]> {
  return rawPoints(db, `"device_id" = '${deviceId}'`);
}

/** The points the simulator's own records of the device's all_data over [fromS, toS] give. */
function simulatorPoints(sim: Simulator, deviceId: string, fromS: number, toS: number) {
  return expectedPoints(
    deviceId,
    RESOURCE,
    simulatorRecords(sim.fleet, deviceId, RESOURCE, fromS, toS),
  );
}

/** Log lines (pino JSON) with this message and device. */
function logged(lines: readonly string[], msg: string, deviceId: string) {
  return lines
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => entry.msg === msg && entry.device === deviceId);
}

/** The etl_lag fields of a device's resource that the run ending at `endS` wrote to InfluxDB. */
async function lagAt(
  db: TestInfluxDb,
  deviceId: string,
  endS: number,
): Promise<Record<string, unknown>> {
  const [series] = await db.series(
    `SELECT "lag_s", "silent", "silent_since" FROM "etl_lag" WHERE "device_id" = '${deviceId}' ` +
      `AND "resource_id" = '${RESOURCE}' AND time = ${endS}s`,
  );
  const row = series?.values[0] ?? [];
  return Object.fromEntries((series?.columns ?? []).map((column, i) => [column, row[i]]));
}

interface StatusCursor {
  readonly deviceId: string;
  readonly resourceId: string;
  readonly newestRecordAt: string | null;
  readonly silentSince: string | null;
  readonly lagSeconds: number;
  readonly state: string;
}

/** `energy-etl status --json` in-process with the pipeline's environment. */
async function statusJson(env: Record<string, string>): Promise<StatusCursor[]> {
  const io = bufferIo(env);
  expect(await runCli(["status", "--json"], io)).toBe(0);
  return (JSON.parse(io.out()) as { cursors: StatusCursor[] }).cursors;
}

describe("cursors that follow the data", () => {
  it("a gateway offline 3 h whose backlog appears after 5 h is complete after the next sync", async () => {
    const clock = new ManualClock((T0_S - 30 * MINUTE_S) * 1000);
    const visibleAtS = T0_S + 5 * HOUR_S;
    const sim = await startTestSimulator({
      now: clock.now,
      resolutionS: 300,
      dataFaults: {
        outages: [{ deviceId: DEVICE, fromS: T0_S, toS: T0_S + 3 * HOUR_S, visibleAtS }],
      },
    });
    const db = await createTestInfluxDb("late_backlog");
    const env = pipelineEnv(sim, db, tempStateDb(), { SYNC_START: "PT1H" });
    const { pipeline } = await openTestPipeline(env, () => new Date(clock.now()));
    try {
      const startS = secondsOf(clock) - HOUR_S;
      const groups = groupsOf(sim.fleet.valueIds(DEVICE, RESOURCE) ?? []).length;
      expect(groups).toBe(2);
      const outageRequests: number[] = [];
      const outageLags: number[] = [];
      // every 5 simulated minutes, up to the last sync before the backlog is visible
      for (let tick = 0; tick < 100 && secondsOf(clock) < visibleAtS; tick++) {
        const { result, firstRequest } = await syncOnce(pipeline, sim, [DEVICE]);
        expect(result.status).toBe("ok");
        const nowS = secondsOf(clock);
        const cursor = cursorOf(pipeline, DEVICE);
        if (nowS >= T0_S) {
          // the newest record written is the last one before the outage, whatever the clock
          expect(cursor.newestRecordS).toBe(T0_S - 300);
          expect(cursor.nextProbeS).toBeUndefined();
          outageRequests.push(dataRequests(sim, firstRequest, DEVICE).length);
          outageLags.push(nowS - (cursor.newestRecordS ?? cursor.startedS));
        } else {
          expect(cursor.newestRecordS).toBe(Math.floor(nowS / 300) * 300);
        }
        clock.advance(5 * MINUTE_S * 1000);
      }
      expect(secondsOf(clock)).toBe(visibleAtS);
      // 5 h of outage at one sync per 5 minutes: 60 syncs, each read the device as an active one
      expect(outageRequests).toHaveLength(60);
      expect(outageRequests).toEqual(outageRequests.map(() => groups));
      for (let i = 1; i < outageLags.length; i++) {
        expect(outageLags[i]).toBe((outageLags[i - 1] ?? 0) + 5 * MINUTE_S);
      }
      expect(outageLags.at(-1)).toBe(5 * HOUR_S - 5 * MINUTE_S + 300);

      // the backlog is visible now: the next sync reads it from the newest record minus lookback
      const { result } = await syncOnce(pipeline, sim, [DEVICE]);
      expect(result.status).toBe("ok");
      const nowS = secondsOf(clock);
      expect(cursorOf(pipeline, DEVICE).newestRecordS).toBe(nowS);
      const expected = sortPoints(simulatorPoints(sim, DEVICE, startS, nowS));
      expect(expected.length).toBeGreaterThan(0);
      expect(sortPoints(await pointsOf(db, DEVICE))).toEqual(expected);
    } finally {
      await pipeline.close();
      await sim.close();
    }
  });

  it("a device offline 40 days reports silent since T and fetches only its horizon", async () => {
    const clock = new ManualClock((T0_S - 3 * HOUR_S) * 1000);
    const dead = { deviceId: DEVICE, fromS: T0_S, toS: T0_S + 40 * DAY_S };
    const sim = await startTestSimulator({
      now: clock.now,
      resolutionS: 3600,
      dataFaults: { outages: [{ ...dead, visibleAtS: Number.POSITIVE_INFINITY }] },
    });
    const db = await createTestInfluxDb("late_silent");
    const env = pipelineEnv(sim, db, tempStateDb(), { SYNC_START: "PT6H" });
    const { pipeline, logLines } = await openTestPipeline(env, () => new Date(clock.now()));
    try {
      // the device syncs normally up to its gateway's death at T0
      const startS = secondsOf(clock) - 6 * HOUR_S;
      for (const at of [T0_S - 3 * HOUR_S, T0_S - 2 * HOUR_S, T0_S - HOUR_S, T0_S - 5 * MINUTE_S]) {
        clock.nowMs = at * 1000;
        expect((await syncOnce(pipeline, sim, [DEVICE])).result.status).toBe("ok");
      }
      const lastBefore = T0_S - HOUR_S;
      expect(cursorOf(pipeline, DEVICE).newestRecordS).toBe(lastBefore);

      // 40 days later: silent since its newest record, probed (one value group, 2 windows)
      clock.nowMs = (T0_S + 40 * DAY_S) * 1000;
      const silentAt = await syncOnce(pipeline, sim, [DEVICE, OTHER]);
      expect(silentAt.result.status).toBe("ok");
      const t1 = secondsOf(clock);
      const probes = dataRequests(sim, silentAt.firstRequest, DEVICE);
      expect(probes.length).toBeGreaterThan(0);
      expect(probes.length).toBeLessThanOrEqual(2);
      expect(new Set(probes.map((r) => r.query.values)).size).toBe(1);
      for (const r of probes) {
        expect(parseQueryTime(r.query.from ?? "")?.getTime()).toBeGreaterThanOrEqual(
          (t1 - 30 * DAY_S) * 1000,
        );
      }
      expect(silentAt.result.devices.find((d) => d.deviceId === DEVICE)?.silentSinceS).toBe(
        lastBefore,
      );
      expect(cursorOf(pipeline, DEVICE)).toMatchObject({
        newestRecordS: lastBefore,
        nextProbeS: t1 + HOUR_S,
      });
      expect(await lagAt(db, DEVICE, t1)).toMatchObject({
        silent: 1,
        silent_since: lastBefore,
        lag_s: t1 - lastBefore,
      });
      const metrics = new EtlMetrics();
      metrics.watch(pipeline);
      const { body } = await metrics.render();
      expect(body).toContain(
        `energy_etl_silent_since_seconds{device_id="${DEVICE}",resource_id="${RESOURCE}"} ${lastBefore}`,
      );
      expect(body).not.toMatch(/energy_etl_silent_since_seconds\{device_id="site A\+1"/);
      // status reads the state file on its own (its clock is the wall clock, after these times)
      const shown = (await statusJson(env)).find((c) => c.deviceId === DEVICE);
      expect(shown).toMatchObject({
        resourceId: RESOURCE,
        newestRecordAt: iso(lastBefore),
        silentSince: iso(lastBefore),
      });
      expect(shown?.state).toMatch(/^silent since /);

      // 5 minutes later the probe is not due: nothing read for it; the other device syncs on
      clock.advance(5 * MINUTE_S * 1000);
      const quiet = await syncOnce(pipeline, sim, [DEVICE, OTHER]);
      expect(quiet.result.status).toBe("ok");
      expect(dataRequests(sim, quiet.firstRequest, DEVICE)).toHaveLength(0);
      expect(dataRequests(sim, quiet.firstRequest, OTHER).length).toBeGreaterThan(0);
      expect(cursorOf(pipeline, OTHER).newestRecordS).toBe(
        Math.floor(secondsOf(clock) / 3600) * 3600,
      );
      const silentLines = logged(
        logLines,
        "resource is silent: probing it instead of fetching",
        DEVICE,
      );
      expect(silentLines).toHaveLength(1);
      expect(silentLines[0]).toMatchObject({
        resource: RESOURCE,
        silentSince: iso(lastBefore),
        level: "warn",
      });

      // the gateway uploads its buffer; the next probe (an interval later) sees it and fetches
      sim.dataFaults = { outages: [{ ...dead, visibleAtS: secondsOf(clock) }] };
      clock.advance(HOUR_S * 1000);
      const back = await syncOnce(pipeline, sim, [DEVICE, OTHER]);
      expect(back.result.status).toBe("ok");
      const nowS = secondsOf(clock);
      const horizonS = nowS - 30 * DAY_S;
      const read = dataRequests(sim, back.firstRequest, DEVICE);
      expect(read[0]?.query.from).toBe(formatQueryTime(new Date(horizonS * 1000)));
      const earliest = Math.min(
        ...read.map((r) => parseQueryTime(r.query.from ?? "")?.getTime() ?? 0),
      );
      expect(earliest).toBe(horizonS * 1000);
      const lost = logged(
        logLines,
        "late data older than LATE_DATA_HORIZON is not fetched (energy-etl audit finds it)",
        DEVICE,
      );
      expect(lost).toHaveLength(1);
      expect(lost[0]).toMatchObject({
        resource: RESOURCE,
        lostFrom: iso(lastBefore + 1),
        lostTo: iso(horizonS - 1),
        level: "warn",
      });
      // before T0 as synced, then exactly the horizon: nothing of (T0, now - 30 d)
      const stored = await pointsOf(db, DEVICE);
      expect(stored.filter((p) => p.time > lastBefore && p.time < horizonS)).toEqual([]);
      expect(sortPoints(stored)).toEqual(
        sortPoints([
          ...simulatorPoints(sim, DEVICE, startS, T0_S - 1),
          ...simulatorPoints(sim, DEVICE, horizonS, nowS),
        ]),
      );
      const cursor = cursorOf(pipeline, DEVICE);
      expect(cursor.newestRecordS).toBe(Math.floor(nowS / 3600) * 3600);
      expect(cursor.nextProbeS).toBeUndefined();
      expect(silentSince(cursor, nowS, syncRules(pipeline.config, nowS))).toBeUndefined();
      expect(await lagAt(db, DEVICE, nowS)).toMatchObject({ silent: 0, silent_since: null });
    } finally {
      await pipeline.close();
      await sim.close();
    }
  });

  it("a local clock 24 h ahead for one sync, then correct: nothing skipped", async () => {
    const apiClock = new ManualClock(T0_S * 1000);
    const localClock = new ManualClock(T0_S * 1000);
    const sim = await startTestSimulator({ now: apiClock.now, resolutionS: 300 });
    const db = await createTestInfluxDb("late_clock");
    const env = pipelineEnv(sim, db, tempStateDb(), { SYNC_START: "PT1H" });
    const { pipeline } = await openTestPipeline(env, () => new Date(localClock.now()));
    try {
      const startS = T0_S - HOUR_S;
      expect((await syncOnce(pipeline, sim, [DEVICE])).result.status).toBe("ok");
      expect(cursorOf(pipeline, DEVICE).newestRecordS).toBe(T0_S);

      // one sync with the local clock a day ahead: the cursor stops at the API's clock
      apiClock.advance(5 * MINUTE_S * 1000);
      localClock.advance((24 * HOUR_S + 5 * MINUTE_S) * 1000);
      expect((await syncOnce(pipeline, sim, [DEVICE])).result.status).toBe("ok");
      const apiNowS = secondsOf(apiClock);
      const ahead = cursorOf(pipeline, DEVICE);
      expect(ahead.newestRecordS).toBe(apiNowS);
      expect(ahead.fetchedUntilS).toBeLessThanOrEqual(apiNowS);

      // the local clock is right again: the next sync reads on from the data
      apiClock.nowMs = (T0_S + HOUR_S) * 1000;
      localClock.nowMs = apiClock.nowMs;
      expect((await syncOnce(pipeline, sim, [DEVICE])).result.status).toBe("ok");
      const nowS = secondsOf(apiClock);
      const cursor = cursorOf(pipeline, DEVICE);
      expect(cursor.newestRecordS).toBe(nowS);
      expect(cursor.fetchedUntilS).toBe(nowS);
      expect(sortPoints(await pointsOf(db, DEVICE))).toEqual(
        sortPoints(simulatorPoints(sim, DEVICE, startS, nowS)),
      );
      // the lag status shows (now minus the newest record), on the pipeline's clock
      const lagS = nowS - (cursor.newestRecordS ?? cursor.startedS);
      expect(lagS).toBeLessThanOrEqual(300);
      // (the run of the sync ahead stamped its own etl_lag point a day ahead: the local clock)
      expect(await lagAt(db, DEVICE, nowS)).toMatchObject({ lag_s: lagS, silent: 0 });
    } finally {
      await pipeline.close();
      await sim.close();
    }
  });
});
