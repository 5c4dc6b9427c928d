/**
 * The scenario and the oracle of the rollups-exact tests, end to end with real parts: the
 * simulator over HTTP with a manual clock and counters that fall often (shallow and deep dips, transient zeros, daily
 * counters whose day starts above 0, a meter replaced at the first and at the last reading of a
 * backfill chunk), a real influxd, a SQLite state file. 30 days of 4 devices at 5 minutes across
 * the spring DST change of Europe/Berlin: newer days backfilled first, then older ones, a window
 * replayed, a gateway's backlog arriving late. Every hourly and daily rollup (UTC, Europe/Berlin,
 * Asia/Kolkata) equals what the counter rule, written again below from docs/schema.md and applied
 * to the simulator's readings, makes of them within 1e-9 relative; none missing, none extra.
 * Which series are counters, and their keys, come from the schema oracle (the spec's tables and
 * docs/schema.md). This file (and the tests using it) imports nothing from src/rollups,
 * src/transform or src/util.
 */

import { runBackfillJobs } from "../../src/pipeline/backfill.js";
import { planBackfill, queueBackfill } from "../../src/pipeline/backfill-plan.js";
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import { runSync } from "../../src/pipeline/sync.js";
import type { Simulator } from "../../src/simulator/server.js";
import type { TestInfluxDb } from "../support/influx-db.js";
import {
  COUNTER_TYPES,
  idShape,
  safeMeasurement,
  safeName,
  valuesIdTag,
} from "../support/schema-oracle.js";
import { type ManualClock, startTestSimulator } from "../support/simulator.js";

const HOUR_S = 3600;
const DAY_S = 86_400;
const WEEK_S = 7 * DAY_S;
/** 2026-03-14 00:00 UTC: 30 days hold Berlin's change to summer time (2026-03-29). */
const START_S = Date.UTC(2026, 2, 14) / 1000;
const END_S = START_S + 30 * DAY_S;
/** Backfills reach this far; syncs take over from here. */
export const SYNCED_FROM_S = END_S - 12 * HOUR_S;
/** The last sync's clock: the end of the data checked. */
const LAST_S = END_S + 3 * HOUR_S;
/** The first backfill (the newer days) starts here; its chunks are 7 days and 1 s apart. */
const NEWER_FROM_S = START_S + 15 * DAY_S;
const RESOLUTION_S = 300;
export const ZONES = ["UTC", "Europe/Berlin", "Asia/Kolkata"];
/** The genset's gateway is offline for 4 hours before the end; its backlog comes 2 hours late. */
const OUTAGE = {
  deviceId: "offgrid-genset-02",
  fromS: END_S - 6 * HOUR_S,
  toS: END_S - 2 * HOUR_S,
  visibleAtS: END_S + 2 * HOUR_S,
};
/** Device ids InfluxDB tags cannot hold as they are, and InfluxQL must quote. */
export const HOSTILE = [
  { id: "back\\slash", kind: "hybrid" },
  { id: "tab\there", kind: "offgrid" },
  { id: `quote"and'apostrophe`, kind: "auditbox" },
  { id: "ünïcödé ⚡ 站点", kind: "gridtied" },
  { id: "line\nbreak/slash.*+?[x](y){2}|^$", kind: "hybrid" },
] as const;

// ---- the oracle: the counter rule of docs/schema.md, written again here ----

type Kind = "cumulative" | "cumulative_daily_reset";

/** What a reading `v` adds after `base` (undefined: the series' first reading), and the base after it. */
function rule(kind: Kind, base: number | undefined, v: number): [add: number, base: number] {
  if (base === undefined) return [0, v];
  if (v >= base) return [v - base, v];
  if (kind === "cumulative_daily_reset" || v < 0.9 * base) return [v, v];
  return [0, base];
}

const dates = new Map(
  ZONES.map((zone) => [
    zone,
    new Intl.DateTimeFormat("en-CA", {
      timeZone: zone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23",
    }),
  ]),
);
/** `YYYY-MM-DD HH:MM:SS` in `zone` at `s`. */
function wall(zone: string, s: number): string {
  const parts = Object.fromEntries(
    (dates.get(zone)?.formatToParts(new Date(s * 1000)) ?? []).map((p) => [p.type, p.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`;
}

const QUARTER_S = 900;
/** Per zone: the date of each quarter hour asked so far. */
const dayOfQuarter = new Map(ZONES.map((zone) => [zone, new Map<number, string>()]));
/**
 * `YYYY-MM-DD` in `zone` at `s`: {@link wall}'s date, asked of Intl once per zone and quarter
 * hour (under 3,000 a zone), not once per reading (Intl was half of the file's CPU). Exact for
 * ZONES: their offsets (0, +1/+2, +5:30 h) and Berlin's change (01:00 UTC) fall on quarter
 * hours, so a date never changes within one.
 */
function localDate(zone: string, s: number): string {
  const quarter = Math.floor(s / QUARTER_S) * QUARTER_S;
  let known = dayOfQuarter.get(zone);
  if (known === undefined) {
    known = new Map();
    dayOfQuarter.set(zone, known);
  }
  let date = known.get(quarter);
  if (date === undefined) {
    date = wall(zone, quarter).slice(0, 10);
    known.set(quarter, date);
  }
  return date;
}

/** Counter value ids of a device, per resource. */
function counters(sim: Simulator, deviceId: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const resourceId of sim.fleet.resourceIds(deviceId) ?? []) {
    const ids = (sim.fleet.valueIds(deviceId, resourceId) ?? []).filter((id) =>
      COUNTER_TYPES.includes(idShape(id)?.type ?? ""),
    );
    if (ids.length > 0) out.set(resourceId, ids);
  }
  return out;
}

/** What the readings look like: enough falls of every kind for the test to mean something. */
export interface Coverage {
  shallowDips: number;
  deepFalls: number;
  zeros: number;
  hoursWithTwoFalls: number;
  dipAtHourEnd: number;
  dailyStartsAboveZero: number;
}

/**
 * Expected rollups: per key, the sum of what each reading adds (by `rule`) over the bucket:
 * `hour` (UTC hour start) and `day <zone>` (local date); a bucket exists when it holds a reading.
 */
function expected(sim: Simulator): { want: Map<string, number>; coverage: Coverage } {
  const want = new Map<string, number>();
  const coverage: Coverage = {
    shallowDips: 0,
    deepFalls: 0,
    zeros: 0,
    hoursWithTwoFalls: 0,
    dipAtHourEnd: 0,
    dailyStartsAboveZero: 0,
  };
  const bump = (key: string, add: number) => want.set(key, (want.get(key) ?? 0) + add);
  for (const deviceId of sim.fleet.deviceIds()) {
    for (const [resourceId, ids] of counters(sim, deviceId)) {
      for (const id of ids) {
        const d = idShape(id);
        if (d === undefined) continue;
        const kind = d.type as Kind;
        const byTag = new Map<string, { s: number; v: number }[]>();
        for (const r of sim.fleet.records(deviceId, resourceId, [id], START_S, LAST_S)) {
          const v = r[id];
          if (typeof v !== "number") continue;
          const tag = valuesIdTag(r.values_id);
          const list = byTag.get(tag) ?? [];
          list.push({ s: Date.parse(`${r.timestamp}Z`) / 1000, v });
          byTag.set(tag, list);
        }
        for (const [tag, readings] of byTag) {
          const series = [
            safeName(deviceId),
            safeName(resourceId),
            safeMeasurement(d.measurement),
            safeName(d.unit),
            safeName(d.type),
            safeName(tag),
          ];
          /** The key of a bucket of this series, written once per bucket, not per reading. */
          const keys = new Map<string, string>();
          const key = (bucket: string, at: number | string) => {
            const short = `${bucket} ${at}`;
            let long = keys.get(short);
            if (long === undefined) {
              long = JSON.stringify([bucket, ...series, at]);
              keys.set(short, long);
            }
            return long;
          };
          let base: number | undefined;
          const fallsPerHour = new Map<number, number>();
          readings.forEach(({ s, v }, i) => {
            const before = readings[i - 1]?.v;
            if (before !== undefined && v < before) {
              const hour = Math.floor(s / HOUR_S);
              fallsPerHour.set(hour, (fallsPerHour.get(hour) ?? 0) + 1);
              if (v === 0) coverage.zeros++;
              else if (v >= 0.9 * before) coverage.shallowDips++;
              else coverage.deepFalls++;
              const after = readings[i + 1];
              if (after && Math.floor(after.s / HOUR_S) !== hour && after.v > v)
                coverage.dipAtHourEnd++;
            }
            if (kind === "cumulative_daily_reset" && s % DAY_S === 0 && v > 0) {
              coverage.dailyStartsAboveZero++;
            }
            const [add, next] = rule(kind, base, v);
            base = next;
            bump(key("hour", Math.floor(s / HOUR_S) * HOUR_S), add);
            for (const zone of ZONES) bump(key(`day ${zone}`, localDate(zone, s)), add);
          });
          for (const n of fallsPerHour.values()) if (n >= 2) coverage.hoursWithTwoFalls++;
        }
      }
    }
  }
  return { want, coverage };
}

/** The rollups InfluxDB holds, keyed as {@link expected}; a day point must sit on local midnight. */
async function stored(db: TestInfluxDb): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const read = async (measurement: string, day: boolean) => {
    for (const s of await db.series(`SELECT "increase" FROM "${measurement}" GROUP BY *`)) {
      const t = s.tags ?? {};
      for (const [time, increase] of s.values) {
        const at = Number(time);
        const zone = t.tz ?? "";
        if (day) expect(`${zone} ${wall(zone, at).slice(11)}`).toBe(`${zone} 00:00:00`);
        const series = [t.device_id, t.resource_id, t.measurement, t.unit, t.type, t.values_id];
        const key = day
          ? [`day ${zone}`, ...series, wall(zone, at).slice(0, 10)]
          : ["hour", ...series, at];
        out.set(JSON.stringify(key), Number(increase));
      }
    }
  };
  await read("rollup_hour", false);
  await read("rollup_day", true);
  return out;
}

/** A simulator whose counters fall often, two meters replaced at the edges of a chunk. */
export async function fallingSource(clock: ManualClock, extraDevices: boolean): Promise<Simulator> {
  // the newer backfill's second chunk starts 7 days and 1 s after its first
  const secondChunkS = NEWER_FROM_S + WEEK_S + 1;
  const firstReading = Math.ceil(secondChunkS / RESOLUTION_S) * RESOLUTION_S;
  const lastReading = Math.floor((secondChunkS - 1) / RESOLUTION_S) * RESOLUTION_S;
  const sim = await startTestSimulator({
    now: () => clock.now(),
    resolutionS: RESOLUTION_S,
    seed: 32,
    counterResets: [
      { deviceId: "hybrid-site-01", valueId: "e_02_07_04_001_lifetime_energy", atS: firstReading },
      { deviceId: "site A+1", valueId: "e_02_07_04_001_lifetime_energy", atS: lastReading },
    ],
    counterFaults: { shallowDipRate: 0.1, deepDipRate: 0.04, zeroRate: 0.01, dailyOffsetMax: 2 },
    dataFaults: { outages: [OUTAGE] },
  });
  if (extraDevices) for (const d of HOSTILE) sim.fleet.addDevice(d.id, d.kind);
  return sim;
}

/** Backfills the counters of every device over [fromS, toS]. */
async function backfill(sim: Simulator, pipeline: Pipeline, fromS: number, toS: number) {
  const values = [...sim.fleet.deviceIds()].flatMap((d) => [...counters(sim, d).values()].flat());
  const plan = await planBackfill(pipeline, { devices: "all", fromS, toS, values });
  const queued = queueBackfill(pipeline, plan.jobs).jobs.map((q) => q.job);
  const result = await runBackfillJobs(pipeline, queued);
  expect(result.status).toBe("ok");
}

/** Newer days, then older ones, then a replay; then syncs, the genset's backlog arriving late. */
export async function ingest(
  sim: Simulator,
  pipeline: Pipeline,
  clock: ManualClock,
): Promise<void> {
  await backfill(sim, pipeline, NEWER_FROM_S, SYNCED_FROM_S - 1);
  await backfill(sim, pipeline, START_S, NEWER_FROM_S - 1);
  await backfill(sim, pipeline, START_S + 20 * DAY_S, START_S + 22 * DAY_S);
  for (const atS of [SYNCED_FROM_S + 300, END_S, LAST_S]) {
    clock.nowMs = atS * 1000;
    const sync = await runSync(pipeline);
    expect(sync.status).toBe("ok");
  }
  expect(pipeline.store.rollups.count()).toBe(0);
}

/** Every expected rollup stored within 1e-9 relative, none missing, none extra. */
export async function expectExact(sim: Simulator, db: TestInfluxDb): Promise<Coverage> {
  const { want, coverage } = expected(sim);
  const got = await stored(db);
  const missing = [...want.keys()].filter((k) => !got.has(k));
  const extra = [...got.keys()].filter((k) => !want.has(k));
  const off = [...want].filter(([key, value]) => {
    const have = got.get(key) ?? Number.NaN;
    return !(Math.abs(have - value) <= 1e-9 * Math.max(1, Math.abs(value)));
  });
  expect({ missing: missing.slice(0, 5), extra: extra.slice(0, 5), off: off.slice(0, 5) }).toEqual({
    missing: [],
    extra: [],
    off: [],
  });
  const kinds = new Set([...want.keys()].map((k) => (JSON.parse(k) as string[])[0]));
  expect([...kinds].sort()).toEqual(
    ZONES.map((z) => `day ${z}`)
      .concat("hour")
      .sort(),
  );
  process.stdout.write(
    `rollups exact: ${want.size} rollups (${[...sim.fleet.deviceIds()].length} devices) over ${JSON.stringify(coverage)}\n`,
  );
  return coverage;
}
