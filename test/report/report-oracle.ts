/**
 * The oracle of the report's tests: the energies of the simulator's devices per local day,
 * computed from its readings with the counter rule of docs/schema.md written again here (not
 * src/rollups, not src/report), and the shape `report --json` documents.
 */
import { z } from "zod";
import type { Simulator } from "../../src/simulator/server.js";

/** The oracle's mapping: each of the report's energies and the simulator's counter it is. */
export const COUNTERS = {
  produced: "total_solar_energy",
  consumed: "total_load_energy",
  imported: "total_other_energy",
  exported: "total_export_energy",
  batteryIn: "charge_energy_today",
  batteryOut: "discharge_energy_today",
} as const;
export type Key = keyof typeof COUNTERS;
export const KEYS = Object.keys(COUNTERS) as Key[];

const energy = z.object(Object.fromEntries(KEYS.map((k) => [k, z.number().nullable()])));
const period = z.object({ period: z.string(), energy, kwhPerKwp: z.number().nullable() });
/** The shape docs/commands.md documents for `report --json`. */
export const reportSchema = z.object({
  tz: z.string(),
  by: z.enum(["day", "week", "month"]),
  from: z.string(),
  to: z.string(),
  unit: z.literal("kWh"),
  periods: z.array(z.string()),
  sites: z.array(
    z.object({
      deviceId: z.string(),
      name: z.string(),
      group: z.string().nullable(),
      kwp: z.number().nullable(),
      periods: z.array(period),
      total: energy,
      kwhPerKwp: z.number().nullable(),
      rank: z.number().nullable(),
    }),
  ),
  fleet: z.object({
    periods: z.array(period),
    total: energy,
    kwp: z.number().nullable(),
    kwhPerKwp: z.number().nullable(),
  }),
});

const localDate = (tz: string, s: number) =>
  new Intl.DateTimeFormat("en-CA", {
    timeZone: tz,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
  }).format(new Date(s * 1000));

/** What each reading adds by the counter rule (type 04 cumulative, 05 daily reset). */
function adds(type: string, values: readonly number[]): number[] {
  let high = values[0] ?? 0;
  return values.map((v, i) => {
    const before = values[i - 1];
    if (before === undefined) return 0;
    if (type === "05") return v >= before ? v - before : v;
    if (v >= high) {
      const add = v - high;
      high = v;
      return add;
    }
    if (v >= 0.9 * high) return 0;
    high = v;
    return v;
  });
}

export type Oracle = Map<string, Map<string, Partial<Record<Key, number>>>>;

/** Per device, local date of `tz`: the kWh of each energy (absent: the device has no counter). */
export function oracle(sim: Simulator, tz: string, fromS: number, toS: number): Oracle {
  const out: Oracle = new Map();
  for (const deviceId of sim.fleet.deviceIds()) {
    const days = new Map<string, Partial<Record<Key, number>>>();
    out.set(deviceId, days);
    // battery_bank repeats all_data's battery counters: all_data is the device's data
    const ids = sim.fleet.valueIds(deviceId, "all_data") ?? [];
    for (const key of KEYS) {
      for (const id of ids.filter(
        (i) => i.match(/^e_03_07_0[45]_\d{3}_(.*)$/)?.[1] === COUNTERS[key],
      )) {
        const byReadout = new Map<string, { s: number; v: number }[]>();
        for (const r of sim.fleet.records(deviceId, "all_data", [id], fromS, toS)) {
          const v = r[id];
          if (typeof v !== "number") continue;
          const list = byReadout.get(String(r.values_id)) ?? [];
          list.push({ s: Date.parse(`${r.timestamp}Z`) / 1000, v });
          byReadout.set(String(r.values_id), list);
        }
        for (const readings of byReadout.values()) {
          const added = adds(
            id.slice(8, 10),
            readings.map((r) => r.v),
          );
          readings.forEach(({ s }, i) => {
            const day = days.get(localDate(tz, s)) ?? {};
            day[key] = (day[key] ?? 0) + (added[i] ?? 0);
            days.set(localDate(tz, s), day);
          });
        }
      }
    }
  }
  return out;
}

/** The ISO week label of a date, as the oracle counts it. */
export function isoWeek(date: string): string {
  const d = new Date(`${date}T00:00:00Z`);
  const thursday = new Date(d.getTime() + (3 - ((d.getUTCDay() + 6) % 7)) * 86_400_000);
  const jan1 = Date.UTC(thursday.getUTCFullYear(), 0, 1);
  const week = Math.floor((thursday.getTime() - jan1) / 86_400_000 / 7) + 1;
  return `${thursday.getUTCFullYear()}-W${String(week).padStart(2, "0")}`;
}

/** The oracle's energies of a device summed by `periodOf` of each date. */
export function byPeriod(
  days: Map<string, Partial<Record<Key, number>>>,
  periodOf: (d: string) => string,
) {
  const out = new Map<string, Partial<Record<Key, number>>>();
  for (const [date, day] of days) {
    const sum = out.get(periodOf(date)) ?? {};
    for (const key of KEYS)
      if (day[key] !== undefined) sum[key] = (sum[key] ?? 0) + (day[key] ?? 0);
    out.set(periodOf(date), sum);
  }
  return out;
}

/** Every site's every period equal to the oracle's, empty where the device has no counter. */
export function expectFigures(
  got: z.infer<typeof reportSchema>,
  want: Oracle,
  periodOf: (d: string) => string,
) {
  let compared = 0;
  for (const [deviceId, days] of want) {
    const site = got.sites.find((s) => s.deviceId === deviceId);
    expect(site?.periods.map((p) => p.period)).toEqual(got.periods);
    const periods = byPeriod(days, periodOf);
    for (const p of site?.periods ?? []) {
      for (const key of KEYS) {
        const expected = periods.get(p.period)?.[key];
        if (expected === undefined)
          expect([deviceId, p.period, key, p.energy[key]]).toEqual([deviceId, p.period, key, null]);
        else expect(p.energy[key]).toBeCloseTo(expected, 6);
        compared++;
      }
    }
  }
  return compared;
}
