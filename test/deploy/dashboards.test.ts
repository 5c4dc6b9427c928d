import type { Pipeline } from "../../src/pipeline/pipeline.js";
import { runSync } from "../../src/pipeline/sync.js";
import { createFleet } from "../../src/simulator/model/fleet.js";
import type { Simulator } from "../../src/simulator/server.js";
import { decodeValueId } from "../../src/transform/value-id.js";
import {
  allPanels,
  type DashboardQuery,
  dashboardQueries,
  interpolateQuery,
  type LoadedDashboard,
  loadDashboards,
  queriedMeasurement,
  unresolvedVariables,
  variableQuery,
} from "../support/dashboard-queries.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

const DAY_S = 86_400;
/** The first sync: 00:05 UTC, SYNC_START P3D, so the data covers 12 June 00:05 to 15 June. */
const NOW_MS = Date.UTC(2026, 5, 15, 0, 5);
const SYNCED_FROM_S = NOW_MS / 1000 - 3 * DAY_S;
const DEVICE = "hybrid-site-01";
const ODD_DEVICE = "site A+1";
const DASHBOARD_UIDS = ["energy-device-explorer", "energy-overview", "energy-pipeline-health"];

const dashboards = loadDashboards();

function byUid(uid: string): LoadedDashboard {
  const found = dashboards.find((d) => d.model.uid === uid);
  if (found === undefined) throw new Error(`no dashboard with uid ${uid}`);
  return found;
}

function label(q: DashboardQuery): string {
  return `${q.dashboard} / ${q.source} "${q.title}" (${q.refId})`;
}

const isoOf = (s: number): string => new Date(s * 1000).toISOString();

describe("Grafana dashboards (grafana/dashboards)", () => {
  it("are the three dashboards with unique uids and titles, InfluxQL raw queries on the influxdb data source only", () => {
    expect(dashboards.map((d) => d.model.uid).sort()).toEqual(DASHBOARD_UIDS);
    const titles = dashboards.map((d) => d.model.title);
    expect(new Set(titles).size).toBe(titles.length);
    const problems: string[] = [];
    for (const { file, model } of dashboards) {
      if (!model.title) problems.push(`${file}: no title`);
      const where = model.title ?? file;
      const checkDatasource = (ds: unknown, what: string): void => {
        if (ds === undefined) return;
        const { type, uid } = (ds ?? {}) as { type?: unknown; uid?: unknown };
        if (type !== "influxdb" || uid !== "influxdb") {
          problems.push(`${where} / ${what}: data source ${JSON.stringify(ds)}`);
        }
      };
      for (const a of model.annotations?.list ?? []) checkDatasource(a.datasource, "annotation");
      let targets = 0;
      for (const panel of allPanels(model)) {
        const what = `panel "${panel.title ?? panel.id}"`;
        if (panel.type !== "row") checkDatasource(panel.datasource ?? null, what);
        for (const t of panel.targets ?? []) {
          targets += 1;
          checkDatasource(t.datasource ?? null, `${what} (${t.refId})`);
          if (typeof t.query !== "string" || t.query.trim() === "") {
            problems.push(`${where} / ${what} (${t.refId}): no "query"`);
          } else if (/\|>|\bfrom\s*\(\s*bucket\s*:/i.test(t.query)) {
            problems.push(`${where} / ${what} (${t.refId}): Flux`);
          }
          if (t.rawQuery !== true) problems.push(`${where} / ${what} (${t.refId}): not rawQuery`);
          if (t.resultFormat !== "time_series" && t.resultFormat !== "table") {
            problems.push(
              `${where} / ${what} (${t.refId}): resultFormat ${String(t.resultFormat)}`,
            );
          }
        }
        if (panel.type !== "row" && (panel.targets ?? []).length === 0) {
          problems.push(`${where} / ${what}: no targets`);
        }
      }
      if (targets === 0) problems.push(`${where}: no queries`);
      for (const v of model.templating?.list ?? []) {
        if (v.type !== "query") continue;
        checkDatasource(v.datasource ?? null, `variable ${v.name}`);
        if (!variableQuery(v)) problems.push(`${where} / variable ${v.name}: no query`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("the overview's energy panels use non_negative_difference(last) for cumulative and max for daily-reset counters", () => {
    const queries = dashboardQueries(byUid("energy-overview").model).map((q) => q.query);
    const cumulative = queries.filter((q) => q.includes('non_negative_difference(last("value"))'));
    const daily = queries.filter((q) => /max\("value"\).*GROUP BY time\(1d\)/.test(q));
    expect(cumulative.map(queriedMeasurement).sort()).toEqual(
      [
        "genset_energy",
        "total_battery_energy",
        "total_export_energy",
        "total_load_energy",
        "total_other_energy",
        "total_solar_energy",
      ].sort(),
    );
    expect(daily.length).toBeGreaterThan(0);
    for (const q of [...cumulative, ...daily]) expect(q).toMatch(/GROUP BY time\(1d\)/);
    // The types agree with the value ids of the simulated hybrid site (type codes 04 and 05).
    const fleet = createFleet({ seed: 1 });
    const types = new Map(
      (fleet.valueIds(DEVICE, "all_data") ?? []).map((id) => {
        const d = decodeValueId(id);
        return [d.measurement, d.type] as const;
      }),
    );
    expect(cumulative.map((q) => types.get(queriedMeasurement(q) ?? ""))).toEqual(
      cumulative.map(() => "cumulative"),
    );
    expect(daily.map((q) => types.get(queriedMeasurement(q) ?? ""))).toEqual(
      daily.map(() => "cumulative_daily_reset"),
    );
  });

  describe("on what the pipeline wrote from the simulator (influxd)", () => {
    let sim: Simulator;
    let db: TestInfluxDb;
    let pipeline: Pipeline;
    const clock = new ManualClock(NOW_MS);
    let toS = 0;

    beforeAll(async () => {
      sim = await startTestSimulator({ now: clock.now, resolutionS: 300 });
      db = await createTestInfluxDb("dashboards");
      ({ pipeline } = await openTestPipeline(
        pipelineEnv(sim, db, tempStateDb(), { SYNC_START: "P3D", LOG_LEVEL: "warn" }),
        () => new Date(clock.now()),
      ));
      expect((await runSync(pipeline)).status).toBe("ok");
      clock.advance(10 * 60_000);
      expect((await runSync(pipeline)).status).toBe("ok");
      toS = clock.now() / 1000;
    });
    afterAll(async () => {
      await pipeline?.close();
      await sim?.close();
    });

    /** The measurements the simulator lists for a device, as the encoder names them. */
    function measurementsOf(deviceId: string): Set<string> {
      const names = new Set<string>();
      for (const r of sim.fleet.resourceIds(deviceId) ?? []) {
        for (const id of sim.fleet.valueIds(deviceId, r) ?? []) {
          const m = decodeValueId(id).measurement;
          if (m !== "") names.add(m);
        }
      }
      return names;
    }

    /**
     * Runs every query of every dashboard for a device; failures name the dashboard and the panel.
     * With requireAll false, a query of a measurement the device does not have may be empty
     * (returned as `excused`).
     */
    async function runAll(
      deviceId: string,
      requireAll: boolean,
    ): Promise<{ failures: string[]; excused: string[] }> {
      const has = measurementsOf(deviceId);
      const failures: string[] = [];
      const excused: string[] = [];
      for (const { model } of dashboards) {
        for (const q of dashboardQueries(model)) {
          const text = interpolateQuery(q.query, {
            variables: { device: deviceId, measurement: "total_solar_power", values_id: "000" },
            fromIso: isoOf(SYNCED_FROM_S),
            toIso: isoOf(toS),
            interval: "15m",
          });
          const left = unresolvedVariables(text);
          if (left.length > 0) {
            failures.push(`${label(q)}: unresolved ${left.join(", ")} in ${text}`);
            continue;
          }
          try {
            const series = await db.series(text);
            const rows = series.reduce((n, s) => n + s.values.length, 0);
            const m = queriedMeasurement(text);
            const expectRows = requireAll || m === undefined || m.startsWith("etl_") || has.has(m);
            if (rows === 0 && expectRows) failures.push(`${label(q)}: no rows for ${text}`);
            if (rows === 0 && !expectRows) excused.push(m ?? "");
          } catch (error) {
            failures.push(`${label(q)}: ${error instanceof Error ? error.message : String(error)}`);
          }
        }
      }
      return { failures, excused };
    }

    it("every panel and variable query runs and returns rows (hybrid-site-01)", async () => {
      expect((await runAll(DEVICE, true)).failures).toEqual([]);
    });

    it("odd device ids work: site A+1 gets rows for every measurement it has", async () => {
      const { failures, excused } = await runAll(ODD_DEVICE, false);
      expect(failures).toEqual([]);
      // Only the hybrid site's battery counters are missing on the grid-tied site.
      expect(excused.sort()).toEqual(["charge_energy_today", "discharge_energy_today"]);
      // The escaping matters: unescaped, "+" is a quantifier and the id does not match.
      const solar = dashboardQueries(byUid("energy-overview").model).find(
        (q) => q.title === "Solar power",
      );
      const raw = (solar?.query ?? "")
        .replace("$device", ODD_DEVICE)
        .replace("$timeFilter", `time >= '${isoOf(SYNCED_FROM_S)}' AND time <= '${isoOf(toS)}'`)
        .replace("$__interval", "15m");
      expect(raw).toContain("/^site A+1$/");
      expect(await db.series(raw)).toEqual([]);
    });

    it("energy per day equals the simulator's day totals (cumulative and daily-reset counters)", async () => {
      const queries = dashboardQueries(byUid("energy-overview").model);
      const pick = (measurement: string, fn: string): DashboardQuery => {
        const q = queries.find(
          (x) => queriedMeasurement(x.query) === measurement && x.query.includes(fn),
        );
        if (q === undefined) throw new Error(`no ${fn} query of ${measurement} in the overview`);
        return q;
      };
      const cases = [
        {
          query: pick("total_solar_energy", "non_negative_difference"),
          valueId: "e_03_07_04_000_total_solar_energy",
        },
        { query: pick("energy_today", "max("), valueId: "e_03_07_05_001_energy_today" },
      ];
      // 12 June (partly synced) has no previous day in the data: compare 13 and 14 June.
      const firstDayS = SYNCED_FROM_S - (SYNCED_FROM_S % DAY_S);
      const fullDays = [firstDayS + DAY_S, firstDayS + 2 * DAY_S];
      const deviations: Record<string, number> = {};
      for (const { query, valueId } of cases) {
        const text = interpolateQuery(query.query, {
          variables: { device: DEVICE },
          fromIso: isoOf(firstDayS),
          toIso: isoOf(firstDayS + 3 * DAY_S - 1),
          interval: "15m",
        });
        const series = await db.series(text);
        expect(series).toHaveLength(1);
        const byDay = new Map(
          (series[0]?.values ?? []).map(([t, v]) => [Number(t), Number(v)] as const),
        );
        for (const dayStartS of fullDays) {
          const expected = sim.fleet.dayEnergyKwh(DEVICE, valueId, dayStartS);
          const actual = byDay.get(dayStartS);
          expect(expected).toBeGreaterThan(1);
          expect(actual).toBeDefined();
          const deviation = Math.abs((actual ?? 0) - expected) / expected;
          deviations[`${valueId} ${isoOf(dayStartS).slice(0, 10)}`] = deviation;
          expect(deviation).toBeLessThan(0.005);
        }
      }
      if (process.env.SHOW_DEVIATIONS) process.stdout.write(`${JSON.stringify(deviations)}\n`);
    });
  });
});
