/**
 * Rollups at ingest (issue #21), end to end with real parts: the simulator over HTTP with a
 * manual clock, a real influxd, a SQLite state file. 30 days of 4 devices at 5 minutes across the
 * spring DST change of Europe/Berlin: newer days backfilled first, then older ones, a window
 * replayed, a gateway's backlog arriving late, a cumulative counter reset (a new meter) and the
 * daily-reset counters. Every hourly and daily rollup (UTC, Europe/Berlin) equals the increase
 * computed from the simulator's truth within 1e-9 relative; no bucket missing, none extra.
 */

import { runBackfillJobs } from "../../src/pipeline/backfill.js";
import { planBackfill, queueBackfill } from "../../src/pipeline/backfill-plan.js";
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import { runSync } from "../../src/pipeline/sync.js";
import { type Bucket, dayOf, hourOf } from "../../src/rollups/buckets.js";
import { isCounter } from "../../src/rollups/counters.js";
import { increaseOver, type Reading } from "../../src/rollups/increase.js";
import type { Simulator } from "../../src/simulator/server.js";
import { storedMeasurement, storedName } from "../../src/transform/line-protocol.js";
import { valuesIdTag } from "../../src/transform/record-encoder.js";
import { ValueIdDecoder } from "../../src/transform/value-id.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

const HOUR_S = 3600;
const DAY_S = 86_400;
/** 2026-03-14 00:00 UTC: 30 days hold Berlin's change to summer time (2026-03-29). */
const START_S = Date.UTC(2026, 2, 14) / 1000;
const END_S = START_S + 30 * DAY_S;
/** Backfills reach this far; syncs take over from here. */
const SYNCED_FROM_S = END_S - 12 * HOUR_S;
/** The last sync's clock: the end of the data checked. */
const LAST_S = END_S + 3 * HOUR_S;
const RESET = {
  deviceId: "hybrid-site-01",
  valueId: "e_02_07_04_001_lifetime_energy",
  atS: START_S + 10 * DAY_S + 3 * HOUR_S + 7 * 60,
};
/** The genset's gateway is offline for 4 hours before the end; its backlog comes 2 hours late. */
const OUTAGE = {
  deviceId: "offgrid-genset-02",
  fromS: END_S - 6 * HOUR_S,
  toS: END_S - 2 * HOUR_S,
  visibleAtS: END_S + 2 * HOUR_S,
};
const ZONES = ["UTC", "Europe/Berlin"];
const decoder = new ValueIdDecoder();

let sim: Simulator;
let db: TestInfluxDb;
let pipeline: Pipeline;
const clock = new ManualClock(SYNCED_FROM_S * 1000);

beforeAll(async () => {
  sim = await startTestSimulator({
    now: () => clock.now(),
    resolutionS: 300,
    seed: 21,
    counterResets: [RESET],
    dataFaults: { outages: [OUTAGE] },
  });
  db = await createTestInfluxDb("rollups");
  const opened = await openTestPipeline(
    pipelineEnv(sim, db, tempStateDb(), {
      ROLLUP_TIME_ZONES: ZONES.join(","),
      SYNC_START: new Date(SYNCED_FROM_S * 1000).toISOString(),
      LOG_LEVEL: "info",
    }),
    () => new Date(clock.now()),
  );
  pipeline = opened.pipeline;
});

afterAll(async () => {
  await pipeline?.close();
  await sim?.close();
});

/** The counters of a device, per resource. */
function counters(deviceId: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const resourceId of sim.fleet.resourceIds(deviceId) ?? []) {
    const ids = (sim.fleet.valueIds(deviceId, resourceId) ?? []).filter((id) =>
      isCounter(decoder, id),
    );
    if (ids.length > 0) out.set(resourceId, ids);
  }
  return out;
}

/** Backfills the counters of every device over [fromS, toS]. */
async function backfill(fromS: number, toS: number): Promise<void> {
  const values = [...sim.fleet.deviceIds()].flatMap((d) => [...counters(d).values()].flat());
  const plan = await planBackfill(pipeline, { devices: "all", fromS, toS, values });
  const queued = queueBackfill(pipeline, plan.jobs).jobs.map((q) => q.job);
  const result = await runBackfillJobs(pipeline, queued);
  expect(result.status).toBe("ok");
}

/** Expected rollups: per bucket key, the increase from the truth's readings (the same rule). */
function expected(): Map<string, number> {
  const out = new Map<string, number>();
  for (const deviceId of sim.fleet.deviceIds()) {
    for (const [resourceId, ids] of counters(deviceId)) {
      for (const id of ids) {
        const d = decoder.decode(id);
        const records = sim.fleet.records(deviceId, resourceId, [id], START_S, LAST_S);
        const byReadout = new Map<string, Reading[]>();
        for (const r of records) {
          const value = r[id];
          if (typeof value !== "number") continue;
          const tag = valuesIdTag(r.values_id);
          const list = byReadout.get(tag) ?? [];
          list.push({ s: Date.parse(`${r.timestamp}Z`) / 1000, value });
          byReadout.set(tag, list);
        }
        for (const [tag, readings] of byReadout) {
          const series = [
            deviceId,
            resourceId,
            storedMeasurement(d.measurement),
            storedName(d.unit),
            tag,
          ];
          const add = (kind: string, of: (s: number) => Bucket) => {
            const first = readings[0];
            const last = readings.at(-1);
            if (!first || !last) return;
            let before: Reading | undefined;
            let at = 0;
            // from the first reading's bucket to the one holding the hour after the last reading
            const end = of(hourOf(last.s).endS).startS;
            for (let b = of(first.s); b.startS <= end; b = of(b.endS)) {
              const inside: Reading[] = [];
              while (at < readings.length && (readings[at]?.s ?? 0) < b.endS) {
                const r = readings[at++];
                if (r) inside.push(r);
              }
              const increase = increaseOver(before, inside);
              if (increase !== undefined)
                out.set(JSON.stringify([kind, ...series, b.startS]), increase);
              before = inside.at(-1) ?? before;
            }
          };
          add("hour", hourOf);
          for (const zone of ZONES) add(`day ${zone}`, (s) => dayOf(zone, s));
        }
      }
    }
  }
  return out;
}

/** The rollups InfluxDB holds, keyed as {@link expected}. */
async function stored(): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const read = async (measurement: string, kind: (tz: string) => string) => {
    for (const s of await db.series(`SELECT "increase" FROM "${measurement}" GROUP BY *`)) {
      const t = s.tags ?? {};
      for (const [time, increase] of s.values) {
        const key = [
          kind(t.tz ?? ""),
          t.device_id,
          t.resource_id,
          t.measurement,
          t.unit,
          t.values_id,
          time,
        ];
        out.set(JSON.stringify(key), Number(increase));
      }
    }
  };
  await read("rollup_hour", () => "hour");
  await read("rollup_day", (tz) => `day ${tz}`);
  return out;
}

describe("rollups at ingest", () => {
  it("every hourly and daily increase equals the truth's, after newer-then-older backfills, a replay, a late backlog and a counter reset", async () => {
    // newer days first, then older ones, then a window again
    await backfill(START_S + 15 * DAY_S, SYNCED_FROM_S - 1);
    await backfill(START_S, START_S + 15 * DAY_S - 1);
    await backfill(START_S + 20 * DAY_S, START_S + 22 * DAY_S);
    // syncs from there on: the genset's backlog is not visible at END_S, read once it is
    for (const atS of [SYNCED_FROM_S + 300, END_S, LAST_S]) {
      clock.nowMs = atS * 1000;
      const sync = await runSync(pipeline);
      expect(sync.status).toBe("ok");
    }
    expect(pipeline.store.rollups.count()).toBe(0);

    const want = expected();
    const got = await stored();
    const missing = [...want.keys()].filter((k) => !got.has(k));
    const extra = [...got.keys()].filter((k) => !want.has(k));
    expect(missing.slice(0, 5)).toEqual([]);
    expect(extra.slice(0, 5)).toEqual([]);
    const off = [...want].filter(([key, value]) => {
      const have = got.get(key) ?? Number.NaN;
      return !(Math.abs(have - value) <= 1e-9 * Math.max(1, Math.abs(value)));
    });
    expect(off.slice(0, 5)).toEqual([]);
    // what was checked: hours, UTC days and Berlin days, the 23-hour day among them
    const kinds = new Set([...want.keys()].map((k) => (JSON.parse(k) as string[])[0]));
    expect([...kinds].sort()).toEqual(["day Europe/Berlin", "day UTC", "hour"]);
    const berlinDst = Date.UTC(2026, 2, 28, 23) / 1000;
    expect(
      [...want.keys()].some((k) => k.includes("Europe/Berlin") && k.endsWith(`,${berlinDst}]`)),
    ).toBe(true);
    const resetDay = Math.floor(RESET.atS / DAY_S) * DAY_S;
    const lifetime = [...want].find(
      ([k]) =>
        k.includes('"day UTC"') && k.includes("lifetime_energy") && k.endsWith(`,${resetDay}]`),
    );
    // the reset day's increase counts the new meter from zero: positive, not a fall
    expect(lifetime?.[1]).toBeGreaterThan(0);
  }, 300_000);
});
