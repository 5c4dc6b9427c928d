/**
 * The numbers of the energy overview (grafana/dashboards/overview.json) against the simulator's
 * truth, on an influxd filled through the pipeline: energy per day, month and year, the fleet
 * totals, fuel units, alarm events; and the example queries of docs/schema.md.
 */
import { readFileSync } from "node:fs";
import { recomputeRollups } from "../../src/rollups/recompute.js";
import { DAY_MEASUREMENT } from "../../src/rollups/rollup-lines.js";
import { createFleet } from "../../src/simulator/model/fleet.js";
import { lineBatch } from "../../src/transform/line-protocol.js";
import {
  allPanels,
  type DashboardPanel,
  dashboardQueries,
  loadDashboards,
  panelQuery,
  queriedMeasurement,
  type VariableValue,
} from "../support/dashboard-queries.js";
import type { InfluxqlSeries } from "../support/influxd.js";
import { idShape } from "../support/schema-oracle.js";
import {
  DAY_S,
  type FilledInfluxd,
  fillFromSimulator,
  fillKwp,
  isoOf,
  SYNCED_FROM_S,
} from "./filled-influxd.js";

const DEVICE = "hybrid-site-01";

/** The measurement a value id is stored in, by the schema oracle (spec 2.3, docs/schema.md). */
function measurementOf(valueId: string): string {
  const shape = idShape(valueId);
  if (shape === undefined) throw new Error(`${valueId} is stored in no measurement`);
  return shape.measurement;
}

const overview = (() => {
  const found = loadDashboards().find((d) => d.model.uid === "energy-overview");
  if (found === undefined) throw new Error("no dashboard with uid energy-overview");
  return found.model;
})();

/** The overview's month and year stats: what each shows and the spec counter it reads. */
const PERIOD_STATS = [
  ["Solar produced", "e_03_07_04_000_total_solar_energy"],
  ["Load consumed", "e_03_07_04_000_total_load_energy"],
  ["Grid import", "e_03_07_04_000_total_other_energy"],
  ["Grid export", "e_03_07_04_000_total_export_energy"],
  ["Battery discharged", "e_03_07_04_000_total_battery_energy"],
  ["Genset produced", "e_03_07_04_000_genset_energy"],
] as const;

/** A field override of a panel: a matcher and the properties it sets. */
interface FieldOverride {
  readonly matcher: { readonly id: string; readonly options: string };
  readonly properties: readonly { readonly id: string; readonly value: unknown }[];
}

/** The overview's table of alarm events: raised (A) and cleared (B). */
const ALARM_EVENTS = "Alarm events";

/**
 * A device's alarm events from the simulator's samples (resource all_data), as "device time
 * index name" (raised) and "device time index" (cleared): a raise where a sample's alarm is set
 * and differs from the previous sample's, a clear where the previous sample's alarm is set and
 * differs. The first sample has no previous one: an alarm active then was raised before.
 */
function alarmEvents(
  sim: FilledInfluxd["sim"],
  deviceId: string,
  fromS: number,
  toS: number,
): { raised: string[]; cleared: string[] } {
  const rows = sim.fleet
    .records(deviceId, "all_data", ["alarm_index", "alarm_name"], fromS, toS)
    .map((r) => ({
      atS: Date.parse(`${r.timestamp}Z`) / 1000,
      index: Number(r.alarm_index ?? 0),
      name: String(r.alarm_name ?? ""),
    }));
  const raised: string[] = [];
  const cleared: string[] = [];
  for (let i = 1; i < rows.length; i += 1) {
    const [before, now] = [rows[i - 1], rows[i]];
    if (before === undefined || now === undefined || before.index === now.index) continue;
    if (now.index !== 0) raised.push(`${deviceId} ${isoOf(now.atS)} ${now.index} ${now.name}`);
    if (before.index !== 0) cleared.push(`${deviceId} ${isoOf(now.atS)} ${before.index}`);
  }
  return { raised, cleared };
}

/** The overview's daily-reset query: tag-driven, one series per counter. */
const DAILY_RESET =
  /FROM "[^"]+"\."rollup_day" WHERE "type" = 'cumulative_daily_reset' AND "unit" = 'kWh'/;

/** The specific-yield queries (the kwp and kwh_per_kwp fields of solar day points). */
const SPECIFIC_YIELD = /kwh_per_kwp|"kwp"/;

/** The counter a rollup query reads (its `measurement` tag); undefined when it selects by tags. */
const rolledMeasurement = (q: string): string | undefined =>
  /"measurement" = '([^']*)'/.exec(q)?.[1];

describe("The energy overview's numbers (grafana/dashboards/overview.json)", () => {
  it("the overview's energy panels read the daily rollups: per $tz day, per month and year of $tz, daily-reset counters by their type tag", () => {
    const queries = dashboardQueries(overview).map((q) => q.query);
    const rolled = dashboardQueries(overview)
      .filter((q) => q.source === "panel" && queriedMeasurement(q.query) === DAY_MEASUREMENT)
      .map((q) => q.query)
      .filter((q) => !SPECIFIC_YIELD.test(q));
    const perDay = rolled.filter((q) => /GROUP BY time\(1d\), "device_id" fill\(none\)/.test(q));
    const daily = rolled.filter((q) => DAILY_RESET.test(q));
    const periods = rolled.filter((q) => /"(month|year)" = /.test(q));
    expect(perDay.map(rolledMeasurement).sort()).toEqual(
      [
        "genset_energy",
        "total_battery_energy",
        "total_export_energy",
        "total_load_energy",
        "total_other_energy",
        "total_solar_energy",
      ].sort(),
    );
    expect(daily).toHaveLength(1);
    expect(periods).toHaveLength(2 * PERIOD_STATS.length);
    for (const q of rolled) {
      // The days of the chosen time zone: rollups of that zone, grouped in it.
      expect(q).toContain(`"tz" = '$tz'`);
      expect(q).toMatch(/^SELECT sum\("increase"\)/);
      if (!periods.includes(q)) expect(q).toMatch(/GROUP BY time\(1d\).* tz\('\$tz'\)$/);
    }
    // A month is the month of $tz's days (tag month), a year likewise.
    for (const q of periods) expect(q).toMatch(/"(month|year)" = '\$\{__to:date:(YYYY-MM|YYYY)\}'/);
    // The daily-reset counters are selected by their type tag, never by a simulator-only name.
    for (const q of daily) expect(rolledMeasurement(q)).toBeUndefined();
    // No energy panel computes the day from raw counter readings any more.
    expect(queries.filter((q) => q.includes('non_negative_difference(last("value"))'))).toEqual([]);
    expect(queries.filter((q) => /energy_today/.test(q))).toEqual([]);
    // The types agree with the value ids of the simulated hybrid site (type codes 04 and 05).
    const fleet = createFleet({ seed: 1 });
    const types = new Map(
      (fleet.valueIds(DEVICE, "all_data") ?? []).flatMap((id) => {
        const d = idShape(id);
        return d === undefined ? [] : [[d.measurement, d.type] as const];
      }),
    );
    expect(perDay.map((q) => types.get(rolledMeasurement(q) ?? ""))).toEqual(
      perDay.map(() => "cumulative"),
    );
  });

  describe("on what the pipeline wrote from the simulator (influxd)", () => {
    let filled: FilledInfluxd;
    let toS = 0;
    const deviations: Record<string, number> = {};
    const series = (q: string): Promise<InfluxqlSeries[]> => filled.db.series(q);
    /** Writes points after the synced range (toS) or at the real clock: no other test sees them. */
    async function write(lines: string[]): Promise<void> {
      const { rejected } = await filled.pipeline.sink.write(lineBatch(lines));
      expect(rejected).toEqual([]);
    }

    beforeAll(async () => {
      filled = await fillFromSimulator("overview_numbers");
      toS = filled.toS;
    });
    afterAll(async () => {
      if (process.env.SHOW_DEVIATIONS) process.stdout.write(`${JSON.stringify(deviations)}\n`);
      await filled?.close();
    });

    /** A panel's query of the overview, with the variables substituted. */
    function overviewQuery(
      title: string,
      refId: string,
      vars: Record<string, VariableValue>,
      fromS: number,
      untilS: number,
      interval = "15m",
    ): string {
      return panelQuery(overview, title, refId, {
        // the rollups beside the raw points (test/deploy/dashboards.test.ts resolves $rollup_rp)
        variables: { device: DEVICE, tz: "UTC", rollup_rp: "autogen", ...vars },
        fromIso: isoOf(fromS),
        toIso: isoOf(untilS),
        interval,
      });
    }

    /** The one series of a query's result that reads `measurement` (tag or name), as time -> value. */
    async function valuesOf(text: string, measurement: string): Promise<Map<number, number>> {
      const found = (await series(text)).filter(
        (s) => (s.tags?.measurement ?? rolledMeasurement(text) ?? s.name) === measurement,
      );
      expect(found).toHaveLength(1);
      return new Map((found[0]?.values ?? []).map(([t, v]) => [Number(t), Number(v)] as const));
    }

    /** The counter's last stored reading at or before `atS` (the truth at a time-zone midnight). */
    async function readingAt(measurement: string, atS: number): Promise<number> {
      const found = await series(
        `SELECT last("value") FROM "${measurement}" WHERE "device_id" = '${DEVICE}' AND time <= '${isoOf(atS)}'`,
      );
      return Number(found[0]?.values[0]?.[1]);
    }

    const firstDayS = SYNCED_FROM_S - (SYNCED_FROM_S % DAY_S);
    // 12 June (partly synced) has no previous day in the data: compare 13 and 14 June.
    const fullDays = [firstDayS + DAY_S, firstDayS + 2 * DAY_S];
    const within = (key: string, actual: number | undefined, expected: number): void => {
      expect(expected).toBeGreaterThan(1);
      expect(actual).toBeDefined();
      const deviation = Math.abs((actual ?? 0) - expected) / expected;
      deviations[key] = deviation;
      expect(deviation).toBeLessThan(0.005);
    };

    it("energy per day equals the simulator's day totals in UTC (cumulative and daily-reset counters)", async () => {
      const solar = await valuesOf(
        overviewQuery("Energy per day ($tz)", "A", {}, firstDayS, firstDayS + 3 * DAY_S - 1),
        "total_solar_energy",
      );
      const daily = overviewQuery(
        "Energy per day from daily counters",
        "A",
        {},
        firstDayS,
        firstDayS + 3 * DAY_S - 1,
      );
      expect(daily).toMatch(DAILY_RESET);
      const today = await valuesOf(daily, "energy_today");
      for (const dayStartS of fullDays) {
        const day = isoOf(dayStartS).slice(0, 10);
        within(
          `total_solar_energy ${day} UTC`,
          solar.get(dayStartS),
          filled.sim.fleet.dayEnergyKwh(DEVICE, "e_03_07_04_000_total_solar_energy", dayStartS),
        );
        within(
          `energy_today ${day} UTC`,
          today.get(dayStartS),
          filled.sim.fleet.dayEnergyKwh(DEVICE, "e_03_07_05_001_energy_today", dayStartS),
        );
      }
      // The tag-driven query finds every daily-reset kWh counter of the hybrid site.
      expect((await series(daily)).map((s) => s.tags?.measurement).sort()).toEqual([
        "charge_energy_today",
        "discharge_energy_today",
        "energy_today",
      ]);
    });

    it("energy per day in Europe/Berlin: days start at Berlin midnight and match the counter there", async () => {
      // Berlin is UTC+2 in June: its 13 and 14 June start at 22:00 UTC the day before.
      const berlinDays = fullDays.map((d) => d - 2 * 3600);
      const text = overviewQuery(
        "Energy per day ($tz)",
        "A",
        { tz: "Europe/Berlin" },
        berlinDays[0] ?? 0,
        (berlinDays[1] ?? 0) + DAY_S - 1,
      );
      expect(text).toContain("tz('Europe/Berlin')");
      const solar = await valuesOf(text, "total_solar_energy");
      for (const dayStartS of berlinDays) {
        const expected =
          (await readingAt("total_solar_energy", dayStartS + DAY_S - 1)) -
          (await readingAt("total_solar_energy", dayStartS - 1));
        within(`total_solar_energy ${isoOf(dayStartS)} Berlin day`, solar.get(dayStartS), expected);
      }
      // The boundaries shift: the Berlin days differ from the UTC days.
      const utcDay = filled.sim.fleet.dayEnergyKwh(
        DEVICE,
        "e_03_07_04_000_total_solar_energy",
        fullDays[0] ?? 0,
      );
      expect(solar.get(fullDays[0] ?? 0)).toBeUndefined();
      expect(Math.abs((solar.get(berlinDays[0] ?? 0) ?? 0) - utcDay)).toBeGreaterThan(0);
    });

    it("every energy-per-day panel (rollups) agrees with the raw-data computation within 0.1 %, every device and day, UTC and Berlin", async () => {
      const devices = filled.sim.fleet.deviceIds();
      const panel = allPanels(overview).find((p) => p.title === "Energy per day ($tz)");
      const refIds = (panel?.targets ?? []).map((t) => String(t.refId));
      expect(refIds).toHaveLength(6);
      let compared = 0;
      for (const tz of ["UTC", "Europe/Berlin"]) {
        for (const refId of refIds) {
          const text = overviewQuery(
            "Energy per day ($tz)",
            refId,
            { device: devices, tz },
            SYNCED_FROM_S,
            toS,
          );
          const measurement = rolledMeasurement(text) ?? "";
          const raw = await series(
            `SELECT non_negative_difference(last("value")) FROM "${measurement}" WHERE time >= '${isoOf(SYNCED_FROM_S - DAY_S)}' AND time <= '${isoOf(toS)}' GROUP BY time(1d), "device_id" fill(none) tz('${tz}')`,
          );
          const fromRaw = new Map(
            raw.flatMap((x) =>
              x.values.map((r) => [`${x.tags?.device_id} ${r[0]}`, Number(r[1])] as const),
            ),
          );
          for (const x of await series(text)) {
            for (const [t, v] of x.values) {
              const expected = fromRaw.get(`${x.tags?.device_id} ${t}`);
              // the first synced day has no raw day before it: its raw difference is missing
              if (expected === undefined) continue;
              compared += 1;
              const key = `${tz} ${measurement} ${x.tags?.device_id} ${isoOf(Number(t))}`;
              if (expected < 0.01)
                expect([key, Math.abs(Number(v) - expected) < 1e-6]).toEqual([key, true]);
              else
                expect([key, Math.abs(Number(v) - expected) / expected < 0.001]).toEqual([
                  key,
                  true,
                ]);
            }
          }
        }
      }
      // Two full days (13, 14 June) of six counters on each device, in two zones.
      expect(compared).toBeGreaterThanOrEqual(2 * 6 * 2 * devices.length);
    });

    /** `actual` within 0.5 % of `expected`, or within 0.01 kWh where the truth is about 0. */
    const near = (key: string, actual: number, expected: number): void => {
      if (expected > 1) within(key, actual, expected);
      else expect([key, Math.abs(actual - expected) < 0.01]).toEqual([key, true]);
    };

    /** The rows of a query's only series. */
    async function onlyRows(text: string): Promise<unknown[][]> {
      const found = await series(text);
      expect(found).toHaveLength(1);
      return found[0]?.values ?? [];
    }

    it("energy this month / this year: one stat per quantity, each one spec counter's increase, equal to the day totals (a device and All)", async () => {
      const fromS = fullDays[0] ?? 0;
      // 13 and 14 June: up to the last second of 14 June ($timeFilter includes its end)
      const untilS = fromS + 2 * DAY_S - 1;
      const devices = filled.sim.fleet.deviceIds();
      let substantial = 0;
      for (const period of ["this month", "this year"]) {
        for (const [what, valueId] of PERIOD_STATS) {
          const title = `${what} ${period}`;
          for (const device of [DEVICE, devices]) {
            const text = overviewQuery(title, "A", { device }, fromS, untilS);
            // One counter, not every cumulative kWh counter mixed in one stat.
            expect([title, rolledMeasurement(text)]).toEqual([title, measurementOf(valueId)]);
            // One value: the selection's total.
            const rows = await onlyRows(text);
            expect(rows).toHaveLength(1);
            const expected = [device]
              .flat()
              .reduce(
                (sum, d) =>
                  sum +
                  fullDays.reduce(
                    (s, day) => s + filled.sim.fleet.dayEnergyKwh(d, valueId, day),
                    0,
                  ),
                0,
              );
            if (expected > 1) substantial += 1;
            near(
              `${title} ${typeof device === "string" ? device : "All"} 13+14 June`,
              Number(rows[0]?.[1]),
              expected,
            );
          }
        }
      }
      // Most of the checks compare real energy, not two zeros.
      expect(substantial).toBeGreaterThanOrEqual(16);
    });

    it("a counter reset: the rollups leave out the reset's step instead of counting the whole counter", async () => {
      const ghost = "ghost-reset-09";
      const readings = [100, 101, 102, 0.5, 1.5];
      await write(
        readings.map(
          (v, i) =>
            `total_solar_energy,device_id=${ghost},resource_id=all_data,values_id=000,unit=kWh,type=cumulative value=${v} ${toS + 60 * (i + 1)}`,
        ),
      );
      const rollups = filled.pipeline.rollups;
      if (rollups === undefined) throw new Error("the pipeline writes no rollups");
      const counter = { measurement: "total_solar_energy", unit: "kWh", type: "cumulative" };
      const target = { deviceId: ghost, resourceId: "all_data", counters: [counter] };
      expect(await recomputeRollups(rollups, target, toS + 60, toS + 300)).toBeGreaterThan(0);
      const text = overviewQuery(
        "Solar produced this month",
        "A",
        { device: ghost },
        toS - (toS % DAY_S),
        toS + 600,
      );
      const rows = await onlyRows(text);
      // 100 -> 102, then the reset (102 -> 0.5: counted from zero, 0.5), then 0.5 -> 1.5.
      expect(Number(rows[0]?.[1])).toBeCloseTo(3.5, 9);
      // spread (max - min), which docs/schema.md once taught, counts the whole counter.
      const spread = await onlyRows(
        `SELECT spread("value") FROM "total_solar_energy" WHERE "device_id" = '${ghost}'`,
      );
      expect(Number(spread[0]?.[1])).toBeCloseTo(101.5, 9);
    });

    it("fleet totals with All selected: power now, energy today in $tz, devices online and silent", async () => {
      const devices = filled.sim.fleet.deviceIds();
      const res = filled.sim.fleet.resolutionS;
      const reading = (d: string, id: string, atS: number): number =>
        Number(filled.sim.fleet.records(d, "all_data", [id], atS, atS)[0]?.[id] ?? 0);
      const fleet = (id: string, atS: number): number =>
        devices.reduce((sum, d) => sum + reading(d, id, atS), 0);
      const query = (title: string, refId: string, vars: Record<string, VariableValue> = {}) =>
        overviewQuery(title, refId, { device: devices, ...vars }, SYNCED_FROM_S, toS);
      for (const [refId, id] of [
        ["A", "e_03_01_00_000_total_solar_power"],
        ["B", "e_03_01_00_000_total_load_power"],
      ] as const) {
        const rows = await onlyRows(query("Fleet power now", refId));
        expect(rows).toHaveLength(1);
        expect(Number(rows[0]?.[1])).toBeCloseTo(fleet(id, toS), 6);
      }
      expect(fleet("e_03_01_00_000_total_load_power", toS)).toBeGreaterThan(0);
      // Today: since 15 June 00:00 in UTC, since 14 June 18:30 UTC in Asia/Kolkata (UTC+5:30).
      const loadToday = new Map<string, number>();
      for (const [tz, todayS] of [
        ["UTC", Date.UTC(2026, 5, 15) / 1000],
        ["Asia/Kolkata", Date.UTC(2026, 5, 14, 18, 30) / 1000],
      ] as const) {
        for (const [refId, id] of [
          ["A", "e_03_07_04_000_total_solar_energy"],
          ["B", "e_03_07_04_000_total_load_energy"],
        ] as const) {
          const rows = await onlyRows(query("Fleet energy today ($tz)", refId, { tz }));
          const today = rows.at(-1) ?? [];
          const expected = fleet(id, toS) - fleet(id, todayS - res);
          expect([tz, refId, Number(today[0])]).toEqual([tz, refId, todayS]);
          expect(Number(today[1])).toBeCloseTo(expected, 6);
          if (refId === "B") loadToday.set(tz, expected);
        }
      }
      // The day's start follows $tz: 5 h 45 min of load in Kolkata, 15 minutes in UTC.
      expect(loadToday.get("Asia/Kolkata") ?? 0).toBeGreaterThan(10 * (loadToday.get("UTC") ?? 0));
      const online = await onlyRows(query("Devices online / silent", "A"));
      expect(online.map((r) => r.slice(1))).toEqual([[devices.length, 0]]);
      // A device with one silent resource of two counts as silent, once.
      const ghost = "ghost-silent-07";
      await write([
        `etl_lag,device_id=${ghost},resource_id=all_data lag_s=60,fetched_lag_s=60,silent=0,failures=0,dead_letters=0 ${toS + 30}`,
        `etl_lag,device_id=${ghost},resource_id=meter lag_s=30000,fetched_lag_s=60,silent=1,failures=0,dead_letters=0 ${toS + 30}`,
      ]);
      const withGhost = overviewQuery(
        "Devices online / silent",
        "A",
        { device: [...devices, ghost] },
        SYNCED_FROM_S,
        toS + 60,
      );
      expect((await onlyRows(withGhost)).map((r) => r.slice(1))).toEqual([[devices.length, 1]]);
    });

    it("the fuel panels show the value's unit from its unit tag (liter as litres, % as percent)", async () => {
      for (const title of ["Fuel level now", "Fuel level", "Fuel used per day ($tz)"]) {
        const panel = allPanels(overview).find((p) => p.title === title) as
          | (DashboardPanel & { fieldConfig?: { overrides?: FieldOverride[] } })
          | undefined;
        const alias = String(panel?.targets?.[0]?.alias ?? "");
        const units = (name: string): unknown[] =>
          (panel?.fieldConfig?.overrides ?? [])
            .filter((o) => o.matcher.id === "byRegexp" && new RegExp(o.matcher.options).test(name))
            .flatMap((o) => o.properties.filter((x) => x.id === "unit").map((x) => x.value));
        const found = await series(overviewQuery(title, "A", {}, SYNCED_FROM_S, toS));
        expect(found.length).toBeGreaterThan(0);
        for (const s of found) {
          const name = alias
            .replace(/\$tag_(\w+)/g, (_m, key: string) => s.tags?.[key] ?? "")
            .replace("$m", s.name);
          expect([title, s.tags?.unit, units(name)]).toEqual([title, "liter", ["litre"]]);
        }
        expect(units(`${DEVICE} fuel_level (%)`)).toEqual(["percent"]);
        expect(units(`${DEVICE} fuel_level (none)`)).toEqual([]);
      }
    });

    it("self-sufficiency and self-consumption come out between 0 and 100 %", async () => {
      for (const title of ["Self-sufficiency", "Self-consumption"]) {
        const one = async (refId: string): Promise<number> => {
          const found = await series(overviewQuery(title, refId, {}, SYNCED_FROM_S, toS));
          return Number(found[0]?.values[0]?.[1]);
        };
        const total = await one("A");
        const part = await one("B");
        expect(total).toBeGreaterThan(0);
        const ratio = (total - part) / total;
        expect(ratio).toBeGreaterThanOrEqual(0);
        expect(ratio).toBeLessThanOrEqual(1);
      }
    });

    it("the alarm events table: one row per raised and per cleared alarm of each device, not per sample or resource", async () => {
      // The panel's minimum interval is the simulated sampling interval (300 s): each interval
      // holds one sample, so the events are those of the simulator's samples.
      const interval = `${filled.sim.fleet.resolutionS / 60}m`;
      const devices = filled.sim.fleet.deviceIds();
      const events = async (refId: string): Promise<string[]> => {
        const text = overviewQuery(
          ALARM_EVENTS,
          refId,
          { device: devices },
          SYNCED_FROM_S,
          toS,
          interval,
        );
        return (await series(text)).flatMap((s) =>
          s.values.map((row) =>
            [s.tags?.device_id, isoOf(Number(row[0])), ...row.slice(1)].join(" "),
          ),
        );
      };
      const truth = devices.map((d) => alarmEvents(filled.sim, d, SYNCED_FROM_S, toS));
      const raised = truth.flatMap((t) => t.raised).sort();
      const cleared = truth.flatMap((t) => t.cleared).sort();
      // The simulated fleet raises and clears several alarms in the synced days, on every device.
      expect(truth.map((t) => t.raised.length > 0 && t.cleared.length > 0)).toEqual(
        devices.map(() => true),
      );
      expect((await events("A")).sort()).toEqual(raised);
      expect((await events("B")).sort()).toEqual(cleared);
    });

    it("the alarm events table does not clear an alarm whose newest samples are not synced yet", async () => {
      // Written at the real clock: the panel leaves out clears of the last 15 minutes (now()).
      const ghost = "ghost-alarms-08";
      const nowS = Math.floor(Date.now() / 1000);
      const slotS = nowS - (nowS % 300);
      // as the pipeline writes it: the alarm's name also in the tag alarm (spaces escaped)
      const alarm = (index: number, name: string, atS: number): string =>
        `alarm,alarm=${name.replace(/ /g, "\\ ")},device_id=${ghost},resource_id=all_data,type=alarm,unit=none,values_id=000 alarm_index=${index},alarm_name="${name}" ${atS}`;
      // 101 raised and cleared 25 minutes ago; 104 raised, its newest sample 10 minutes old.
      await write([
        ...[2400, 2100, 1800].map((ago) => alarm(101, "Grid overvoltage", slotS - ago)),
        ...[900, 600].map((ago) => alarm(104, "Grid failure", slotS - ago)),
      ]);
      const events = async (refId: string): Promise<string[]> => {
        const text = overviewQuery(
          ALARM_EVENTS,
          refId,
          { device: ghost },
          slotS - 3600,
          nowS,
          "5m",
        );
        return (await series(text)).flatMap((s) =>
          s.values.map((row) => [isoOf(Number(row[0])), ...row.slice(1)].join(" ")),
        );
      };
      expect(await events("A")).toEqual([
        `${isoOf(slotS - 2400)} 101 Grid overvoltage`,
        `${isoOf(slotS - 900)} 104 Grid failure`,
      ]);
      expect(await events("B")).toEqual([`${isoOf(slotS - 1500)} 101`]);
    });
    it("docs/schema.md's InfluxQL examples run; energy per day, a range's energy and the raised alarms are the panels' numbers", async () => {
      const doc = readFileSync("docs/schema.md", "utf8");
      // the docs read init's and compose's layout ("rollups"."rollup_day", run as written by
      // test/docs/queries.test.ts); this database keeps the rollups beside the raw points
      const statements = [...doc.matchAll(/```sql\n([\s\S]*?)```/g)].flatMap((m) =>
        (m[1] ?? "")
          .trim()
          .replaceAll('"rollups"."rollup_day"', '"rollup_day"')
          .split(/\n(?=SELECT )/),
      );
      for (const q of statements) await series(q);
      const example = (pattern: RegExp): { q: string; fromS: number; untilS: number } => {
        const q = statements.find((x) => pattern.test(x)) ?? "";
        const range = /time >= '([^']+)' AND time < '([^']+)'/.exec(q);
        expect([pattern.source, range]).toEqual([pattern.source, expect.anything()]);
        return {
          q,
          fromS: Date.parse(range?.[1] ?? "") / 1000,
          untilS: Date.parse(range?.[2] ?? "") / 1000 - 1,
        };
      };
      const values = async (q: string): Promise<unknown[][][]> =>
        (await series(q)).map((x) => x.values);

      // A day from the rollups is the panel's number.
      const perDay = example(/FROM "rollup_day".*\n.*\nGROUP BY time\(1d\)/);
      const days = await values(perDay.q);
      expect(days[0]).toHaveLength(2);
      expect(days).toEqual(
        await values(
          overviewQuery(
            "Energy per day ($tz)",
            "A",
            { tz: "Europe/Berlin" },
            perDay.fromS,
            perDay.untilS,
          ),
        ),
      );
      // The raw-readings computation of the same days agrees within 0.1 %.
      const raw = example(/non_negative_difference\(last\("value"\)\)/);
      const rawDays = new Map(
        ((await values(raw.q))[0] ?? []).map((r) => [Number(r[0]), Number(r[1])] as const),
      );
      for (const [t, v] of days[0] ?? []) {
        const fromRaw = rawDays.get(Number(t)) ?? Number.NaN;
        expect(Number(v)).toBeGreaterThan(1);
        expect(Math.abs(Number(v) - fromRaw) / fromRaw).toBeLessThan(0.001);
      }
      // The raw example's first day has its own value when a reading before the range exists:
      // InfluxDB reads back one interval for a difference's first bucket. The same query from the
      // rollup example's first day (the data start the day before) gets every day the rollups have.
      expect(raw.fromS).toBe(perDay.fromS - DAY_S);
      const sameDays = new Map(
        (
          (await values(raw.q.replace(/time >= '[^']+'/, `time >= '${isoOf(perDay.fromS)}'`)))[0] ??
          []
        ).map((r) => [Number(r[0]), Number(r[1])] as const),
      );
      expect([...sameDays.keys()]).toEqual((days[0] ?? []).map((r) => Number(r[0])));
      for (const [t, v] of days[0] ?? []) {
        const fromRaw = sameDays.get(Number(t)) ?? Number.NaN;
        expect(Math.abs(Number(v) - fromRaw) / fromRaw).toBeLessThan(0.001);
      }

      // A month of several devices from the rollups, the raw range total of the same days.
      const month = example(/"month" = '2026-06'/);
      const monthRows = await values(month.q);
      const total = example(/sum\("d"\)/);
      const devices = /=~ \/\^\((.*)\)\$\//.exec(total.q)?.[1]?.split("|") ?? [];
      expect(devices).toHaveLength(2);
      const sum = await values(total.q);
      const rawSum = Number(sum[0]?.[0]?.[1]);
      expect(rawSum).toBeGreaterThan(1);
      const panel = Number(
        (
          await values(
            overviewQuery(
              "Solar produced this month",
              "A",
              { device: devices },
              total.fromS,
              total.untilS,
            ),
          )
        )[0]?.[0]?.[1],
      );
      expect(Math.abs(panel - rawSum) / rawSum).toBeLessThan(0.001);
      // The month's example covers the synced days of June: more than the two days.
      expect(Number(monthRows[0]?.[0]?.[1])).toBeGreaterThan(panel);

      const raised = example(/AS "raised"/);
      const alarms = await values(raised.q);
      expect(alarms[0]?.length).toBeGreaterThan(1);
      expect(alarms).toEqual(
        await values(overviewQuery(ALARM_EVENTS, "A", {}, raised.fromS, raised.untilS, "5m")),
      );
    });

    describe("specific yield (kWh per kWp): the rollups' solar kWh over the kWp the test configured", () => {
      /** The devices FILL_SITES gives a kWp: two, with different ones. */
      const withKwp = (): string[] =>
        filled.sim.fleet.deviceIds().filter((d) => fillKwp(d) !== undefined);
      const kwpOf = (d: string): number => {
        const kwp = fillKwp(d);
        if (kwp === undefined) throw new Error(`${d}: no kWp in FILL_SITES`);
        return kwp;
      };
      /** The test's oracle: `a` within 1e-9 (relative) of `b`, each named. */
      const same = (key: string, a: number | undefined, b: number): void => {
        expect([key, Math.abs((a ?? Number.NaN) - b) <= 1e-9 * Math.max(1, Math.abs(b))]).toEqual([
          key,
          true,
        ]);
      };

      /**
       * The oracle's kWh: every solar day point of the rollups in `tz` read back one by one (the
       * field increase, never kwh_per_kwp), summed per device and day: device -> day -> kWh.
       */
      async function solarDays(
        tz: string,
      ): Promise<Map<string, Map<number, { kwh: number; month: string; year: string }>>> {
        const found = await series(
          `SELECT "increase", "month", "year" FROM "${DAY_MEASUREMENT}" WHERE "measurement" = 'total_solar_energy' AND "tz" = '${tz}' GROUP BY "device_id", "resource_id", "values_id"`,
        );
        const days = new Map<string, Map<number, { kwh: number; month: string; year: string }>>();
        for (const s of found) {
          const device = String(s.tags?.device_id);
          const byDay = days.get(device) ?? new Map();
          days.set(device, byDay);
          for (const [t, increase, month, year] of s.values) {
            const known = byDay.get(Number(t));
            const kwh = (known?.kwh ?? 0) + Number(increase);
            byDay.set(Number(t), { kwh, month: String(month), year: String(year) });
          }
        }
        return days;
      }

      it("the sites are as configured: kWp differ, one device without kWp, the site points written once per device and hour", async () => {
        expect(withKwp()).toEqual(["hybrid-site-01", "offgrid-genset-02"]);
        expect(kwpOf("hybrid-site-01")).not.toBe(kwpOf("offgrid-genset-02"));
        const points = await series(
          `SELECT "name", "kwp" FROM "site" WHERE time >= '${isoOf(SYNCED_FROM_S)}' GROUP BY "device_id", "group"`,
        );
        const shown = points.map((p) => [p.tags?.device_id, p.tags?.group, p.values]);
        // two syncs (00:05, 00:15) and a catalog refresh in one hour: one point per device
        const hourS = toS - (toS % 3600);
        expect(shown.sort()).toEqual(
          [
            ["audit-box-03", "", [[hourS, "audit-box-03", 0]]],
            ["hybrid-site-01", "north", [[hourS, "Hybrid north", 9.8]]],
            ["offgrid-genset-02", "north", [[hourS, "offgrid-genset-02", 3.25]]],
            ["site A+1", "south", [[hourS, "Site A+1 roof", 0]]],
          ].sort(),
        );
      });

      it.each(["UTC", "Europe/Berlin"])(
        "per day (%s): each device's kWh over its kWp, the fleet's kWh over its kWp, and near the simulator's truth",
        async (tz) => {
          const days = await solarDays(tz);
          const devices = filled.sim.fleet.deviceIds();
          const perDevice = await series(
            overviewQuery(
              "Specific yield per day ($tz)",
              "A",
              { device: devices, tz },
              SYNCED_FROM_S,
              toS,
            ),
          );
          // exactly the devices with a kWp, every day the rollups hold for them
          expect(perDevice.map((x) => x.tags?.device_id).sort()).toEqual(withKwp());
          let compared = 0;
          for (const x of perDevice) {
            const device = String(x.tags?.device_id);
            // every day the rollups hold for it that starts in the range ($timeFilter)
            const want = [...(days.get(device)?.keys() ?? [])].filter(
              (t) => t >= SYNCED_FROM_S && t <= toS,
            );
            expect(want.length).toBeGreaterThanOrEqual(3);
            expect(x.values.map(([t]) => Number(t))).toEqual(want.sort((a, b) => a - b));
            for (const [t, v] of x.values) {
              const kwh = days.get(device)?.get(Number(t))?.kwh ?? Number.NaN;
              same(`${tz} ${device} ${isoOf(Number(t))}`, Number(v), kwh / kwpOf(device));
              if (kwh > 1) compared += 1;
            }
          }
          // two devices with solar energy on 3 or 4 days each
          expect(compared).toBeGreaterThanOrEqual(4);
          const fleet = await series(
            overviewQuery(
              "Specific yield per day ($tz)",
              "B",
              { device: devices, tz },
              SYNCED_FROM_S,
              toS,
            ),
          );
          expect(fleet).toHaveLength(1);
          for (const [t, v] of fleet[0]?.values ?? []) {
            const kwh = withKwp().reduce((n, d) => n + (days.get(d)?.get(Number(t))?.kwh ?? 0), 0);
            const kwp = withKwp()
              .filter((d) => days.get(d)?.has(Number(t)))
              .reduce((n, d) => n + kwpOf(d), 0);
            same(`${tz} fleet ${isoOf(Number(t))}`, Number(v), kwh / kwp);
          }
          // The simulator's truth (UTC day totals) over the kWp: within 0.5 % on the full days.
          if (tz !== "UTC") return;
          for (const dayS of fullDays) {
            const truth = filled.sim.fleet.dayEnergyKwh(
              DEVICE,
              "e_03_07_04_000_total_solar_energy",
              dayS,
            );
            const shown = perDevice
              .find((x) => x.tags?.device_id === DEVICE)
              ?.values.find(([t]) => Number(t) === dayS)?.[1];
            within(`specific yield ${DEVICE} ${isoOf(dayS)}`, Number(shown) * kwpOf(DEVICE), truth);
          }
        },
      );

      it.each([
        ["this month", "month", "2026-06"],
        ["this year", "year", "2026"],
      ] as const)(
        "%s in UTC and Berlin: each device's sum of its days' kWh over its kWp; the fleet's kWh over its kWp",
        async (period, field, value) => {
          for (const tz of ["UTC", "Europe/Berlin"]) {
            const days = await solarDays(tz);
            const kwhOf = (d: string): number =>
              [...(days.get(d)?.values() ?? [])]
                .filter((day) => day[field] === value)
                .reduce((n, day) => n + day.kwh, 0);
            const title = `Specific yield ${period} ($tz)`;
            const all = filled.sim.fleet.deviceIds();
            const perDevice = await series(
              overviewQuery(title, "A", { device: all, tz }, toS - 32 * DAY_S, toS),
            );
            expect(perDevice.map((x) => x.tags?.device_id).sort()).toEqual(withKwp());
            for (const x of perDevice) {
              const d = String(x.tags?.device_id);
              expect(x.values).toHaveLength(1);
              expect(kwhOf(d)).toBeGreaterThan(1);
              same(`${tz} ${period} ${d}`, Number(x.values[0]?.[1]), kwhOf(d) / kwpOf(d));
            }
            const fleet = await onlyRows(
              overviewQuery(title, "B", { device: all, tz }, toS - 32 * DAY_S, toS),
            );
            const kwh = withKwp().reduce((n, d) => n + kwhOf(d), 0);
            const kwp = withKwp().reduce((n, d) => n + kwpOf(d), 0);
            same(`${tz} ${period} fleet`, Number(fleet[0]?.[1]), kwh / kwp);
          }
        },
      );

      it("docs/schema.md's specific-yield examples give the oracle's numbers (per device and day, the fleet's month, the devices without kWp)", async () => {
        const doc = readFileSync("docs/schema.md", "utf8");
        // as above: the docs' "rollups"."rollup_day" is this database's "rollup_day"
        const statements = [...doc.matchAll(/```sql\n([\s\S]*?)```/g)].flatMap((m) =>
          (m[1] ?? "")
            .trim()
            .replaceAll('"rollups"."rollup_day"', '"rollup_day"')
            .split(/\n(?=SELECT )/),
        );
        const find = (pattern: RegExp): string => {
          const found = statements.find((x) => pattern.test(x));
          if (found === undefined) throw new Error(`no example matching ${pattern.source}`);
          return found;
        };
        const days = await solarDays("UTC");
        const perDay = await series(find(/SELECT sum\("kwh_per_kwp"\) FROM "rollup_day"/));
        expect(perDay.map((x) => x.tags?.device_id).sort()).toEqual(withKwp());
        for (const x of perDay) {
          const d = String(x.tags?.device_id);
          expect(x.values.length).toBeGreaterThanOrEqual(3);
          for (const [t, v] of x.values) {
            same(
              `example ${d} ${t}`,
              Number(v),
              (days.get(d)?.get(Number(t))?.kwh ?? 0) / kwpOf(d),
            );
          }
        }
        const [fleet] = await onlyRows(find(/SELECT sum\("kwh"\) \/ sum\("kwp"\)/));
        const june = (d: string): number =>
          [...(days.get(d)?.values() ?? [])]
            .filter((day) => day.month === "2026-06")
            .reduce((n, day) => n + day.kwh, 0);
        const kwh = withKwp().reduce((n, d) => n + june(d), 0);
        same(
          "example fleet June",
          Number(fleet?.[1]),
          kwh / withKwp().reduce((n, d) => n + kwpOf(d), 0),
        );
        const without = await series(find(/"kwp" = 0/));
        expect(without.map((x) => x.tags?.device_id)).toContain("site A+1");
        for (const d of withKwp()) expect(without.map((x) => x.tags?.device_id)).not.toContain(d);
      });

      it("the ranking over the range: each device with a kWp and the fleet, exact; the devices without kWp listed with their kWh", async () => {
        // 12 to 14 June UTC: whole UTC days, so the oracle's days are those starting in the range
        const fromS = SYNCED_FROM_S - (SYNCED_FROM_S % DAY_S);
        const untilS = fromS + 3 * DAY_S - 1;
        const all = filled.sim.fleet.deviceIds();
        const days = await solarDays("UTC");
        const kwhOf = (d: string): number =>
          [...(days.get(d)?.entries() ?? [])]
            .filter(([t]) => t >= fromS && t <= untilS)
            .reduce((n, [, day]) => n + day.kwh, 0);
        const ranking = await series(
          overviewQuery(
            "Fleet ranking by specific yield (time range)",
            "A",
            { device: all },
            fromS,
            untilS,
          ),
        );
        expect(ranking.map((x) => x.tags?.device_id).sort()).toEqual(withKwp());
        for (const x of ranking) {
          const d = String(x.tags?.device_id);
          expect(x.columns).toEqual(["time", "kWh/kWp", "kWh", "kWp"]);
          const [, perKwp, kwh, kwp] = x.values[0] ?? [];
          same(`ranking ${d} kWh/kWp`, Number(perKwp), kwhOf(d) / kwpOf(d));
          same(`ranking ${d} kWh`, Number(kwh), kwhOf(d));
          expect(Number(kwp)).toBe(kwpOf(d));
        }
        const [fleet] = await onlyRows(
          overviewQuery(
            "Fleet ranking by specific yield (time range)",
            "B",
            { device: all },
            fromS,
            untilS,
          ),
        );
        const kwh = withKwp().reduce((n, d) => n + kwhOf(d), 0);
        const kwp = withKwp().reduce((n, d) => n + kwpOf(d), 0);
        same("ranking fleet kWh/kWp", Number(fleet?.[1]), kwh / kwp);
        same("ranking fleet kWh", Number(fleet?.[2]), kwh);
        same("ranking fleet kWp", Number(fleet?.[3]), kwp);

        // Not hidden: every device with solar days but no kWp is listed, with its kWh and days.
        const without = await series(
          overviewQuery("Devices without kWp (time range)", "A", { device: all }, fromS, untilS),
        );
        const expected = all.filter((d) => fillKwp(d) === undefined && kwhOf(d) > 0);
        expect(expected).toContain("site A+1");
        expect(without.map((x) => x.tags?.device_id).sort()).toEqual(expected.sort());
        for (const x of without) {
          const d = String(x.tags?.device_id);
          same(`without kWp ${d} kWh`, Number(x.values[0]?.[1]), kwhOf(d));
        }
        // one device with a kWp alone: nothing to list
        expect(
          await series(
            overviewQuery(
              "Devices without kWp (time range)",
              "A",
              { device: DEVICE },
              fromS,
              untilS,
            ),
          ),
        ).toEqual([]);
      });
    });

    it("a kWp given later, then taken away: recomputing the days (what `energy-etl rollups --from` does) rewrites them with it", async () => {
      // a device of its own, in July: outside every other test's devices and June examples
      const device = "late-kwp-10";
      const startS = toS + 40 * DAY_S;
      const dayS = startS - (startS % DAY_S);
      await write(
        [10, 11, 12, 14].map(
          (v, i) =>
            `total_solar_energy,device_id=${device},resource_id=all_data,values_id=000,unit=kWh,type=cumulative value=${v} ${startS + 60 * (i + 1)}`,
        ),
      );
      const rollups = filled.pipeline.rollups;
      if (rollups === undefined) throw new Error("the pipeline writes no rollups");
      const counter = { measurement: "total_solar_energy", unit: "kWh", type: "cumulative" };
      const target = { deviceId: device, resourceId: "all_data", counters: [counter] };
      const day = async (): Promise<unknown[][]> =>
        (
          await onlyRows(
            `SELECT "increase", "kwp", "kwh_per_kwp" FROM "${DAY_MEASUREMENT}" WHERE "device_id" = '${device}' AND "tz" = 'UTC'`,
          )
        ).map(([t, ...fields]) => [Number(t), ...fields]);
      // the fill's sites do not describe it: kwp 0, no specific yield
      await recomputeRollups(rollups, target, startS + 60, startS + 240);
      expect(await day()).toEqual([[dayS, 4, 0, null]]);
      // its kWp configured (2.5), the same days recomputed: 4 kWh / 2.5 kWp
      const kwpOf = (d: string): number | undefined => (d === device ? 2.5 : undefined);
      await recomputeRollups({ ...rollups, kwpOf }, target, startS + 60, startS + 240);
      expect(await day()).toEqual([[dayS, 4, 2.5, 1.6]]);
      // the kWp taken away again: InfluxDB keeps the old kwh_per_kwp beside kwp 0 (fields merge),
      // so the panels must not show it as the device's yield, and list the device without a kWp
      await recomputeRollups(rollups, target, startS + 60, startS + 240);
      expect(await day()).toEqual([[dayS, 4, 0, 1.6]]);
      const vars = { device: [device] };
      const [fromS, untilS] = [dayS, dayS + DAY_S - 1];
      for (const title of [
        "Specific yield per day ($tz)",
        "Specific yield this month ($tz)",
        "Specific yield this year ($tz)",
        "Fleet ranking by specific yield (time range)",
      ]) {
        expect(await series(overviewQuery(title, "A", vars, fromS, untilS))).toEqual([]);
      }
      const without = await series(
        overviewQuery("Devices without kWp (time range)", "A", vars, fromS, untilS),
      );
      expect(without.flatMap((x) => x.values).length).toBeGreaterThan(0);
    });
  });
});
