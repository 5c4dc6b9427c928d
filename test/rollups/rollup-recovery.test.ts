/**
 * Rollup passes that fail halfway, and history that was never rolled up, against the tests'
 * influxd and a SQLite state file: a pass whose hours went out but whose days did not leaves
 * them due, and the next pass writes every hour and day as the rule says; a zone whose days do
 * not start on a UTC hour reads its split hours from the same base as the hours. The expected
 * values come from the counter rule written again here.
 */
import { InfluxQuery } from "../../src/influx/influx-query.js";
import { auditRollups } from "../../src/rollups/rollup-audit.js";
import { RollupLock } from "../../src/rollups/rollup-lock.js";
import { type RollupParts, runRollups } from "../../src/rollups/rollup-run.js";
import { processOwner } from "../../src/state/owner.js";
import { StateStore } from "../../src/state/state-store.js";
import type { LineBatch } from "../../src/transform/line-protocol.js";
import { ValueIdDecoder } from "../../src/transform/value-id.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { captureLogger } from "../support/log-capture.js";
import { tempStateDb } from "../support/pipeline.js";

const HOUR_S = 3600;
const DAY_S = 86_400;
const T0 = Date.UTC(2026, 0, 5) / 1000;
const DEVICE = "dev";
const RESOURCE = "res";

type Kind = "cumulative" | "cumulative_daily_reset";
const ID: Record<Kind, string> = {
  cumulative: "e_03_07_04_000_energy",
  cumulative_daily_reset: "e_03_07_05_000_energy_today",
};
const MEASUREMENT: Record<Kind, string> = {
  cumulative: "energy",
  cumulative_daily_reset: "energy_today",
};

/** The counter rule (docs/schema.md), written again: what `v` adds after `base`, the base after. */
function rule(kind: Kind, base: number | undefined, v: number): [number, number] {
  if (base === undefined) return [0, v];
  if (v >= base) return [v - base, v];
  if (kind === "cumulative_daily_reset" || v < 0.9 * base) return [v, v];
  return [0, base];
}

/** `YYYY-MM-DD` of `s` in `zone`. */
const localDate = (zone: string, s: number) =>
  new Intl.DateTimeFormat("en-CA", { timeZone: zone }).format(new Date(s * 1000));

interface Reading {
  readonly s: number;
  readonly v: number;
}

/** What the rule makes of `readings` (from `base`): per hour start and per local date of `zone`. */
function oracle(kind: Kind, readings: readonly Reading[], zone: string, base?: number) {
  const hours = new Map<number, number>();
  const days = new Map<string, number>();
  let at = base;
  for (const { s, v } of [...readings].sort((a, b) => a.s - b.s)) {
    const [add, next] = rule(kind, at, v);
    at = next;
    const hour = Math.floor(s / HOUR_S) * HOUR_S;
    hours.set(hour, (hours.get(hour) ?? 0) + add);
    days.set(localDate(zone, s), (days.get(localDate(zone, s)) ?? 0) + add);
  }
  return { hours, days };
}

/** A state file, a database and the parts of a rollup pass, its sink able to refuse day points. */
async function setup(name: string, kind: Kind, zone: string) {
  const db = await createTestInfluxDb(name);
  const store = StateStore.open(tempStateDb());
  store.catalog.refresh(DEVICE, RESOURCE, [ID[kind]], new Date(T0 * 1000));
  const refuse = { days: false };
  const post = async (lines: readonly string[]) => {
    const res = await fetch(`${db.rawUrl}/write?db=${db.bucket}&precision=s`, {
      method: "POST",
      body: lines.join("\n"),
    });
    if (res.status !== 204) throw new Error(`write ${res.status}: ${await res.text()}`);
  };
  const parts: RollupParts = {
    marks: store.rollups,
    catalog: store.catalog,
    decoder: new ValueIdDecoder(),
    kwpOf: () => undefined,
    query: new InfluxQuery({ url: db.url, token: db.token, bucket: db.bucket, timeoutMs: 30_000 }),
    sink: {
      write: async (batch: LineBatch) => {
        const lines = batch.bytes.toString("utf8").split("\n");
        if (refuse.days && lines[0]?.startsWith("rollup_day")) throw new Error("refused (test)");
        await post(lines);
        return { written: lines.length, rejected: [] };
      },
    },
    zones: [zone],
    home: {},
    lock: new RollupLock(store.locks, processOwner("test")),
    deadLetters: store.deadLetters,
    now: () => new Date(T0 * 1000),
    logger: captureLogger("warn").logger,
  };
  const writeRaw = (readings: readonly Reading[]) =>
    post(
      readings.map(
        ({ s, v }) =>
          `${MEASUREMENT[kind]},device_id=${DEVICE},resource_id=${RESOURCE},type=${kind},unit=kWh,values_id=000 value=${v} ${s}`,
      ),
    );
  return { db, store, parts, refuse, writeRaw };
}

/** The stored hours (by start) and days (by local date) of the one series. */
async function stored(db: TestInfluxDb, zone: string) {
  const hours = new Map<number, number>();
  const days = new Map<string, number>();
  for (const s of await db.series(`SELECT "increase" FROM "rollup_hour"`)) {
    for (const [t, x] of s.values) hours.set(Number(t), Number(x));
  }
  for (const s of await db.series(`SELECT "increase" FROM "rollup_day" WHERE "tz" = '${zone}'`)) {
    for (const [t, x] of s.values) days.set(localDate(zone, Number(t)), Number(x));
  }
  return { hours, days };
}

const close = (a: ReadonlyMap<unknown, number>, b: ReadonlyMap<unknown, number>) =>
  [...new Set([...a.keys(), ...b.keys()])].filter(
    (k) => !(Math.abs((a.get(k) ?? Number.NaN) - (b.get(k) ?? Number.NaN)) <= 1e-9),
  );

describe("a rollup pass that fails halfway", () => {
  it("its hours went out, its days did not: the next pass writes every hour and day as the rule says", async () => {
    const zone = "Asia/Kolkata";
    const { db, store, parts, refuse, writeRaw } = await setup(
      "rollup_recovery",
      "cumulative",
      zone,
    );
    try {
      // newer days first (a counter near 95, climbing slowly), rolled up
      const newer: Reading[] = [];
      for (let s = T0 + DAY_S; s < T0 + 4 * DAY_S; s += 600)
        newer.push({ s, v: 95 + (s - T0 - DAY_S) / 50_000 });
      await writeRaw(newer);
      store.rollups.mark(DEVICE, RESOURCE, T0 + DAY_S, T0 + 4 * DAY_S - 1);
      expect(await runRollups(parts)).toMatchObject({ failed: 0 });
      // then the day before, climbing to 100: the newer days' first hours start in a dip now
      const older: Reading[] = [];
      for (let s = T0; s < T0 + DAY_S; s += 600) older.push({ s, v: 50 + (50 * (s - T0)) / DAY_S });
      older.push({ s: T0 + DAY_S - 60, v: 100 });
      await writeRaw(older);
      store.rollups.mark(DEVICE, RESOURCE, T0, T0 + DAY_S - 1);
      refuse.days = true;
      expect(await runRollups(parts)).toMatchObject({ failed: 1 });
      // the marks of the day and of the hours written after it stay due
      expect(store.rollups.count()).toBeGreaterThanOrEqual(2);
      refuse.days = false;
      expect(await runRollups(parts)).toMatchObject({ failed: 0 });
      expect(store.rollups.count()).toBe(0);
      const want = oracle("cumulative", [...older, ...newer], zone);
      const got = await stored(db, zone);
      expect(close(want.hours, got.hours)).toEqual([]);
      expect(close(want.days, got.days)).toEqual([]);
    } finally {
      store.close();
    }
  });
});

describe("history never rolled up before a range", () => {
  it("a zone off the UTC hour sums its split hours from the same base as the hours", async () => {
    const zone = "Asia/Kolkata";
    const kind = "cumulative_daily_reset";
    const { db, store, parts, writeRaw } = await setup("rollup_gap", kind, zone);
    try {
      // hourly at :45, a daily counter climbing 1 an hour
      const readings: Reading[] = [];
      for (let s = T0 + 45 * 60, i = 0; s < T0 + 3 * DAY_S; s += HOUR_S, i++) {
        readings.push({ s, v: 20 + i });
      }
      // day 1 rolled up; days 2 and 3 written later with rollups off; then `rollups --from` a
      // later hour
      await writeRaw(readings.filter((r) => r.s < T0 + DAY_S));
      store.rollups.mark(DEVICE, RESOURCE, T0, T0 + DAY_S - 1);
      expect(await runRollups(parts)).toMatchObject({ failed: 0 });
      await writeRaw(readings.filter((r) => r.s >= T0 + DAY_S));
      const fromS = T0 + DAY_S + 18 * HOUR_S;
      store.rollups.mark(DEVICE, RESOURCE, fromS, T0 + 3 * DAY_S - 1, "rollups --from");
      expect(await runRollups(parts)).toMatchObject({ failed: 0 });
      // from the range on, the series goes on from its last reading before it
      const before = readings.filter((r) => r.s < fromS).at(-1)?.v;
      const after = readings.filter((r) => r.s >= fromS);
      const want = oracle(kind, after, zone, before);
      const got = await stored(db, zone);
      // the Kolkata day that starts inside the range (18:30 UTC) and every hour of it
      const day = localDate(zone, fromS + HOUR_S);
      expect(got.days.get(day)).toBeCloseTo(want.days.get(day) ?? Number.NaN, 9);
      expect(close(want.hours, new Map([...got.hours].filter(([h]) => h >= fromS)))).toEqual([]);
    } finally {
      store.close();
    }
  });
});

describe("a counter whose finite readings make an increase beyond the bound", () => {
  it("the hours beyond ±1e15 (an increase not finite, a reading of -1e20) are dead letters with their reason; the series' other hours and its day are written", async () => {
    const zone = "UTC";
    const kind = "cumulative";
    const { db, store, parts, writeRaw } = await setup("rollup_bound", kind, zone);
    try {
      const readings: Reading[] = [
        { s: T0, v: 100 },
        { s: T0 + 600, v: 101 },
        { s: T0 + HOUR_S, v: -1.7e308 },
        { s: T0 + 2 * HOUR_S, v: 1.7e308 },
        { s: T0 + 3 * HOUR_S, v: 200 },
        { s: T0 + 3 * HOUR_S + 600, v: 203 },
        // a dip to -1e20 and back inside an hour: a finite increase, from an absurd reading
        { s: T0 + 4 * HOUR_S, v: 300 },
        { s: T0 + 4 * HOUR_S + 600, v: -1e20 },
        { s: T0 + 4 * HOUR_S + 1200, v: 301 },
        { s: T0 + 5 * HOUR_S, v: 400 },
        { s: T0 + 5 * HOUR_S + 600, v: 401 },
      ];
      await writeRaw(readings);
      store.rollups.mark(DEVICE, RESOURCE, T0, T0 + 6 * HOUR_S - 1);
      expect(await runRollups(parts)).toMatchObject({ failed: 0 });
      expect(store.rollups.count()).toBe(0);
      // the oracle: the rule's hours, those whose increase, base or a reading is beyond 1e15 set
      // aside
      const want = oracle(kind, readings, zone);
      const beyond = (x: number | undefined) => !(x !== undefined && Math.abs(x) <= 1e15);
      const bad = new Set<number>();
      let at: number | undefined;
      for (const { s, v } of readings) {
        at = rule(kind, at, v)[1];
        if (beyond(at) || beyond(v)) bad.add(Math.floor(s / HOUR_S) * HOUR_S);
      }
      const kept = new Map([...want.hours].filter(([h, x]) => !beyond(x) && !bad.has(h)));
      expect([...kept.keys()]).toEqual([T0, T0 + 3 * HOUR_S, T0 + 5 * HOUR_S]);
      const got = await stored(db, zone);
      expect(close(kept, got.hours)).toEqual([]);
      const keptSum = [...kept.values()].reduce((a, b) => a + b, 0);
      expect(close(new Map([[localDate(zone, T0), keptSum]]), got.days)).toEqual([]);
      const letters = store.deadLetters.list();
      expect(letters.map((l) => [l.kind, l.windowFromS, l.payload.split(",")[0]])).toEqual([
        ["line", T0 + HOUR_S, "rollup_hour"],
        ["line", T0 + 2 * HOUR_S, "rollup_hour"],
        ["line", T0 + 4 * HOUR_S, "rollup_hour"],
      ]);
      expect(letters[0]?.error).toMatch(/beyond/);
      expect(letters[1]?.error).toMatch(/not finite/);
      expect(letters[2]?.error).toMatch(/a reading -1e\+20 is beyond/);
      // `audit --rollups` judges by the same bound: the hours set aside are no mismatch
      const target = {
        deviceId: DEVICE,
        resourceId: RESOURCE,
        counters: [{ measurement: MEASUREMENT[kind], unit: "kWh", type: kind }],
      };
      const audit = await auditRollups(parts, target, [T0 + 3 * HOUR_S]);
      expect(audit.mismatches).toEqual([]);
      // the 3 hours kept and the day (an hour set aside is neither expected nor stored)
      expect(audit.checked).toBe(4);
    } finally {
      store.close();
    }
  });
});
