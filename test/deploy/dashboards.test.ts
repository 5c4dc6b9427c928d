import { readFileSync } from "node:fs";
import { COMMON_VALUE_IDS } from "../../src/api/common-values.js";
import { specExtraIds } from "../../src/simulator/model/fleet.js";
import {
  allPanels,
  type DashboardQuery,
  dashboardQueries,
  interpolateQuery,
  type LoadedDashboard,
  loadDashboards,
  panelQuery,
  queriedMeasurement,
  resolveQueryVariables,
  unresolvedVariables,
  type VariableValue,
  variableQuery,
} from "../support/dashboard-queries.js";
import type { InfluxqlSeries } from "../support/influxd.js";
import {
  DAY_S,
  FILL_ZONES,
  type FilledInfluxd,
  fillFromSimulator,
  isoOf,
  queryApplies,
  SYNCED_FROM_S,
  sitesFit,
  storedValues,
} from "./filled-influxd.js";

const DEVICE = "hybrid-site-01";
/** The data source uid of every panel, query and variable: Grafana's data source variable. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not a template
const DS_UID = "${DS}";
/** The provisioned data source, the default of the dashboards' data source variable. */
const DATASOURCES = "grafana/provisioning/datasources/influxdb.yaml";
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

/** The options of a custom template variable of a dashboard (`a,b,c`). */
function customOptions(model: LoadedDashboard["model"], name: string): string[] {
  const v = (model.templating?.list ?? []).find((x) => x.name === name && x.type === "custom");
  return typeof v?.query === "string" ? v.query.split(",").map((o) => o.trim()) : [];
}

/** A template variable of a dashboard by name; throws when there is none. */
function variable(model: LoadedDashboard["model"], name: string) {
  const v = (model.templating?.list ?? []).find((x) => x.name === name);
  if (v === undefined) throw new Error(`${model.title} has no variable ${name}`);
  return v;
}

/**
 * The overview's query variables as Grafana resolves them on the filled database: where the
 * rollups are read (`rollup_rp`) and the zones of `tz`, each its query answered by influxd.
 */
async function overviewVariables(
  filled: FilledInfluxd,
  device: VariableValue,
): Promise<{ rollupPolicy: string; zones: readonly string[] }> {
  const resolved = await resolveQueryVariables(
    byUid("energy-overview").model,
    (q) => filled.db.series(q),
    {
      variables: { device },
      fromIso: isoOf(SYNCED_FROM_S),
      toIso: isoOf(filled.toS),
      interval: "15m",
    },
  );
  return {
    rollupPolicy: resolved.get("rollup_rp")?.selected ?? "",
    zones: resolved.get("tz")?.options ?? [],
  };
}

/** The genset row's panels that need a genset readout (running, run hours, fuel), as "title (refId)". */
const GENSET_READOUT_PANELS = [
  "Genset running now (A)",
  "Genset run hours (A)",
  "Genset run hours (B)",
  "Genset starts (A)",
  "Fuel level now (A)",
  "Genset running state (A)",
  "Fuel level (A)",
  "Fuel used per day ($tz) (A)",
];
const NO_GENSET = "no genset on this device";

/** The specific-yield queries: empty for a device without a kWp (FILL_SITES), as "title (refId)". */
const SPECIFIC_YIELD_PANELS = [
  "Specific yield per day ($tz) (A)",
  "Specific yield per day ($tz) (B)",
  "Specific yield this month ($tz) (A)",
  "Specific yield this month ($tz) (B)",
  "Specific yield this year ($tz) (A)",
  "Specific yield this year ($tz) (B)",
  "Fleet ranking by specific yield (time range) (A)",
  "Fleet ranking by specific yield (time range) (B)",
];
/** The list of devices without a kWp: empty for a device with one. */
const WITHOUT_KWP_PANEL = "Devices without kWp (time range) (A)";

/**
 * Runs every query of every dashboard for a device, once per option of the overview's `tz`
 * variable; failures name the dashboard and the panel. With requireAll false, a query that
 * does not apply to the device (a measurement, unit or type it does not have) may be empty
 * (returned as `excused`, one per panel query).
 */
async function runAll(
  filled: FilledInfluxd,
  deviceId: VariableValue,
  requireAll: boolean,
): Promise<{ failures: string[]; excused: string[] }> {
  const values = [deviceId].flat().flatMap((d) => storedValues(filled.sim, d));
  const shown = typeof deviceId === "string" ? deviceId : "All";
  const toS = filled.toS;
  const failures: string[] = [];
  const excused = new Set<string>();
  // $tz lists the zones the rollups were written for, as influxd answers the variable's query
  const { rollupPolicy, zones } = await overviewVariables(filled, deviceId);
  expect(rollupPolicy).toBe("autogen");
  expect(zones).toEqual([...FILL_ZONES].sort());
  for (const tz of zones) {
    for (const { model } of dashboards) {
      for (const q of dashboardQueries(model)) {
        const text = interpolateQuery(q.query, {
          variables: {
            device: deviceId,
            measurement: "total_solar_power",
            values_id: "000",
            rollup_rp: rollupPolicy,
            tz,
            currency: "EUR",
          },
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
          const found = await filled.db.series(text);
          const rows = found.reduce((n, s) => n + s.values.length, 0);
          const expectRows =
            sitesFit(text, [deviceId].flat()) && (requireAll || queryApplies(text, values));
          if (process.env.SHOW_ROWS && tz === "UTC") {
            process.stdout.write(
              `rows\t${filled.db.bucket.replace(/_[0-9a-f]{8}$/, "")}\t${shown}\t${label(q)}\t${rows}\n`,
            );
          }
          if (rows === 0 && expectRows) failures.push(`${label(q)} [${tz}]: no rows for ${text}`);
          if (rows === 0 && !expectRows) excused.add(`${q.title} (${q.refId})`);
        } catch (error) {
          failures.push(
            `${label(q)} [${tz}]: ${error instanceof Error ? error.message : String(error)}`,
          );
        }
      }
    }
  }
  return { failures, excused: [...excused] };
}

describe("Grafana dashboards (grafana/dashboards)", () => {
  it("are the three dashboards with unique uids and titles, InfluxQL raw queries on the data source variable only", () => {
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
        if (type !== "influxdb" || uid !== DS_UID) {
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

  it("choose the InfluxDB data source by a variable that defaults to the provisioned one", () => {
    const provisioned = /\buid:\s*(\S+)/.exec(readFileSync(DATASOURCES, "utf8"))?.[1];
    expect(provisioned).toBe("influxdb");
    for (const { model } of dashboards) {
      const ds = (model.templating?.list ?? []).find((v) => v.name === "DS");
      expect([model.uid, ds?.type, ds?.query, ds?.current]).toEqual([
        model.uid,
        "datasource",
        "influxdb",
        expect.objectContaining({ value: provisioned }),
      ]);
      // No data source uid is written into the dashboard: an import needs no editing.
      expect(JSON.stringify(model).match(/"uid":\s*"(?!\$\{DS\})[^"]*"/g) ?? []).toEqual([
        `"uid":"${model.uid}"`,
      ]);
    }
  });

  it("give every template variable a current text and value (Grafana's VariableModel)", () => {
    const problems: string[] = [];
    for (const { model } of dashboards) {
      for (const v of model.templating?.list ?? []) {
        const current = v.current as { text?: unknown; value?: unknown } | undefined;
        const ok = (x: unknown): boolean =>
          typeof x === "string" || (Array.isArray(x) && x.every((e) => typeof e === "string"));
        if (!ok(current?.text) || !ok(current?.value)) {
          problems.push(`${model.title} / ${v.name}: current ${JSON.stringify(v.current)}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it("has the tz and currency variables, and every panel that needs a quantity says so gracefully", () => {
    const overview = byUid("energy-overview").model;
    // the rollups' policy: "rollups" when the database has it, else the default "autogen"
    expect(variable(overview, "rollup_rp")).toMatchObject({
      type: "query",
      query: "SHOW RETENTION POLICIES",
      regex: "/^(rollups|autogen)$/",
      sort: 2,
      hide: 2,
      current: { text: "rollups", value: "rollups" },
    });
    // $tz: the zones found in the daily rollups, UTC when it is one of them
    expect(variable(overview, "tz")).toMatchObject({
      type: "query",
      query: 'SHOW TAG VALUES FROM "$rollup_rp"."rollup_day" WITH KEY = "tz"',
      current: { text: "UTC", value: "UTC" },
    });
    expect(customOptions(overview, "currency").length).toBeGreaterThan(0);
    // every query of a rollup reads it where $rollup_rp says
    const rollups = dashboards.flatMap(({ model }) =>
      dashboardQueries(model).filter((q) => /rollup_(day|hour)/.test(q.query)),
    );
    expect(rollups.length).toBeGreaterThan(20);
    for (const q of rollups) {
      expect({ q: label(q), from: /"\$rollup_rp"\."rollup_(day|hour)"/.test(q.query) }).toEqual({
        q: label(q),
        from: true,
      });
    }
    const problems: string[] = [];
    for (const panel of allPanels(overview)) {
      if (panel.type === "row") continue;
      const p = panel as typeof panel & {
        description?: string;
        fieldConfig?: { defaults?: { noValue?: string } };
      };
      if (!p.description) problems.push(`${p.title}: no description`);
      const named = (p.targets ?? []).some(
        (t) => queriedMeasurement(String(t.query)) !== undefined,
      );
      if (named && !p.fieldConfig?.defaults?.noValue) {
        problems.push(`${p.title}: names a quantity but has no noValue`);
      }
    }
    expect(problems).toEqual([]);
  });

  describe("on what the pipeline wrote from the simulator (influxd)", () => {
    let filled: FilledInfluxd;
    let toS = 0;
    const series = (q: string): Promise<InfluxqlSeries[]> => filled.db.series(q);

    beforeAll(async () => {
      filled = await fillFromSimulator("dashboards");
      toS = filled.toS;
    });
    afterAll(async () => {
      await filled?.close();
    });

    it("every panel and variable query runs and returns rows (hybrid-site-01), in every tz", async () => {
      const { failures, excused } = await runAll(filled, DEVICE, true);
      expect(failures).toEqual([]);
      // it has a kWp: it is not among the devices without one
      expect(excused).toEqual([WITHOUT_KWP_PANEL]);
    });

    it("with All devices selected every panel and variable query returns rows, in every tz (fleet totals included)", async () => {
      expect((await runAll(filled, filled.sim.fleet.deviceIds(), true)).failures).toEqual([]);
    });

    it("odd device ids work: site A+1 gets rows for every panel that applies to it", async () => {
      const { failures, excused } = await runAll(filled, ODD_DEVICE, false);
      expect(failures).toEqual([]);
      // The grid-tied site has no battery state of charge (its energy_today is a daily-reset counter).
      // Nor does it report a genset's running state, run hours or fuel (the hybrid site does).
      // Nor has it a kWp (FILL_SITES): no specific yield.
      expect(excused.sort()).toEqual(
        [
          "Battery state of charge (A)",
          "Battery state of charge history (A)",
          ...GENSET_READOUT_PANELS,
          ...SPECIFIC_YIELD_PANELS,
        ].sort(),
      );
      // The escaping matters: unescaped, "+" is a quantifier and the id does not match.
      const solar = dashboardQueries(byUid("energy-overview").model).find(
        (q) => q.title === "Solar power",
      );
      const raw = (solar?.query ?? "")
        .replace("$device", ODD_DEVICE)
        .replace("$timeFilter", `time >= '${isoOf(SYNCED_FROM_S)}' AND time <= '${isoOf(toS)}'`)
        .replace("$__interval", "15m");
      expect(raw).toContain("/^site A+1$/");
      expect(await series(raw)).toEqual([]);
    });

    /** A panel's query of the overview, with the variables substituted. */
    function overviewQuery(
      title: string,
      refId: string,
      vars: Record<string, VariableValue>,
      fromS: number,
      untilS: number,
    ): string {
      return panelQuery(byUid("energy-overview").model, title, refId, {
        variables: { device: DEVICE, tz: "UTC", rollup_rp: "autogen", ...vars },
        fromIso: isoOf(fromS),
        toIso: isoOf(untilS),
        interval: "15m",
      });
    }

    it("the genset row: the hybrid site's genset readout gets rows; devices without one get none (noValue)", async () => {
      const overview = byUid("energy-overview").model;
      const genset = GENSET_READOUT_PANELS.map((p) => {
        const m = /^(.*) \(([A-Z])\)$/.exec(p);
        return { title: m?.[1] ?? "", refId: m?.[2] ?? "" };
      });
      for (const { title } of genset) {
        const panel = allPanels(overview).find((x) => x.title === title) as
          | { fieldConfig?: { defaults?: { noValue?: string } } }
          | undefined;
        expect(panel?.fieldConfig?.defaults?.noValue).toBe(NO_GENSET);
      }
      const names = async (title: string, refId: string, device: string): Promise<string[]> => {
        const found = await series(overviewQuery(title, refId, { device }, SYNCED_FROM_S, toS));
        return [...new Set(found.filter((x) => x.values.length > 0).map((x) => x.name))].sort();
      };
      const expected: Record<string, string> = {
        "Genset running now": "running",
        "Genset run hours": "run_hours",
        "Genset starts": "running",
        "Fuel level now": "fuel_level",
        "Genset running state": "running",
        "Fuel level": "fuel_level",
        "Fuel used per day ($tz)": "fuel_level",
      };
      for (const { title, refId } of genset) {
        expect([title, await names(title, refId, DEVICE)]).toEqual([title, [expected[title]]]);
        // offgrid-genset-02 has a genset, but the simulator gives it no genset readout, only the
        // spec's genset_power and genset_energy; the grid-tied site has none at all.
        for (const device of ["offgrid-genset-02", ODD_DEVICE]) {
          expect([title, device, await names(title, refId, device)]).toEqual([title, device, []]);
        }
      }
      // genset_energy is one of the spec's values of every device: rows (0 kWh without a genset).
      for (const device of [DEVICE, "offgrid-genset-02", ODD_DEVICE]) {
        expect(await names("Genset energy in range", "A", device)).toEqual(["genset_energy"]);
      }
      // No start in the synced days (the standby genset did not run): 0 starts, not no data.
      const starts = await series(overviewQuery("Genset starts", "A", {}, SYNCED_FROM_S, toS));
      expect(starts.map((x) => Number(x.values[0]?.[1]))).toEqual([0]);
    });

    it("the alarm timeline: each interval is the active alarm's name (raised) or null (cleared)", async () => {
      const text = overviewQuery("Alarms: raised and cleared", "A", {}, SYNCED_FROM_S, toS);
      const found = await series(text);
      expect(found.map((x) => x.tags?.device_id)).toEqual([DEVICE]);
      const states = (found[0]?.values ?? []).map((row) => row[1]);
      const raised = states.filter((v): v is string => typeof v === "string");
      expect(raised.length).toBeGreaterThan(0);
      expect(states.filter((v) => v === null).length).toBeGreaterThan(0);
      // A raised interval is followed by a cleared one somewhere: the alarm does not repeat forever.
      expect(states.some((v, i) => typeof v === "string" && states[i + 1] === null)).toBe(true);
      const points = await series(
        `SELECT "alarm_name" FROM "alarm" WHERE "device_id" = '${DEVICE}' AND time >= '${isoOf(SYNCED_FROM_S)}' AND time <= '${isoOf(toS)}'`,
      );
      const names = new Set((points[0]?.values ?? []).map((row) => row[1]));
      for (const name of raised) expect(names.has(name)).toBe(true);
    });

    it("the catalog refresh panels show the catalog run (etl_run, kind catalog)", async () => {
      const health = dashboardQueries(byUid("energy-pipeline-health").model);
      const run = (title: string): Promise<InfluxqlSeries[]> => {
        const q = health.find((x) => x.title === title);
        if (q === undefined) throw new Error(`no panel "${title}" in pipeline health`);
        return series(
          interpolateQuery(q.query, {
            variables: {},
            fromIso: isoOf(SYNCED_FROM_S),
            toIso: isoOf(toS),
            interval: "15m",
          }),
        );
      };
      const last = await run("Last catalog refresh");
      expect(last[0]?.columns).toEqual([
        "time",
        "ok",
        "devices read",
        "devices failed",
        "requests",
      ]);
      const row = last[0]?.values[0] ?? [];
      expect(row.slice(1, 4).map(Number)).toEqual([1, 4, 0]);
      expect(Number(row[4])).toBeGreaterThan(0);
      const runs = await run("Catalog refresh runs");
      expect(runs[0]?.values).toHaveLength(1);
    });

    it("the fleet table has a row per device resource with lag, silence, failures, dead letters and the last error", async () => {
      const q = dashboardQueries(byUid("energy-pipeline-health").model).find(
        (x) => x.title === "Fleet: each device resource",
      );
      const text = interpolateQuery(q?.query ?? "", {
        variables: { device: filled.sim.fleet.deviceIds() },
        fromIso: isoOf(SYNCED_FROM_S),
        toIso: isoOf(toS),
        interval: "15m",
      });
      const found = await series(text);
      const devices = new Set(found.map((s) => s.tags?.device_id));
      expect([...devices]).toEqual(expect.arrayContaining([DEVICE, ODD_DEVICE]));
      for (const s of found) {
        expect(s.columns).toEqual([
          "time",
          "lag_s",
          "fetched_lag_s",
          "silent",
          "silent_since",
          "failures",
          "dead_letters",
          "last_error",
        ]);
        const row = s.values[0] ?? [];
        expect(Number(row[1])).toBeGreaterThanOrEqual(0);
        expect(Number(row[6])).toBeGreaterThanOrEqual(0);
        // nothing failed in this run: the column is there, empty
        expect(row[7]).toBe("");
      }
    });

    describe("the same fleet with its rollups in a retention policy of their own (ROLLUP_BUCKET)", () => {
      let own: FilledInfluxd;
      beforeAll(async () => {
        own = await fillFromSimulator("dashboards_own_rp", { rollupPolicy: "rollups" });
      });
      afterAll(async () => {
        await own?.close();
      });

      it("$rollup_rp finds them there, $tz their zones, and none are beside the raw points", async () => {
        const resolved = await overviewVariables(own, DEVICE);
        expect(resolved).toEqual({ rollupPolicy: "rollups", zones: [...FILL_ZONES].sort() });
        for (const m of ["rollup_day", "rollup_hour"]) {
          expect(await own.db.series(`SELECT count("increase") FROM "autogen"."${m}"`)).toEqual([]);
          const [count] = await own.db.series(`SELECT count("increase") FROM "rollups"."${m}"`);
          expect(Number(count?.values[0]?.[1])).toBeGreaterThan(100);
        }
      });

      it.each([
        ["hybrid-site-01", DEVICE],
        ["All", undefined],
      ])(
        "%s: every energy panel reads them and shows what it shows beside the raw points, in every tz",
        async (_shown, device) => {
          const devices = device ?? own.sim.fleet.deviceIds();
          const rollupQueries = dashboardQueries(byUid("energy-overview").model).filter(
            (q) => q.source === "panel" && queriedMeasurement(q.query) === "rollup_day",
          );
          expect(rollupQueries.length).toBeGreaterThan(15);
          const text = (q: DashboardQuery, tz: string, policy: string): string =>
            interpolateQuery(q.query, {
              variables: { device: devices, tz, rollup_rp: policy },
              fromIso: isoOf(SYNCED_FROM_S),
              toIso: isoOf(toS),
              interval: "15m",
            });
          for (const tz of FILL_ZONES) {
            for (const q of rollupQueries.filter((r) => sitesFit(r.query, [devices].flat()))) {
              const there = await own.db.series(text(q, tz, "rollups"));
              expect({ q: label(q), tz, rows: there.some((x) => x.values.length > 0) }).toEqual({
                q: label(q),
                tz,
                rows: true,
              });
              // the same fleet, clock and rollups, only elsewhere: the same rows
              expect(there).toEqual(await series(text(q, tz, "autogen")));
            }
          }
        },
      );
    });
  });
  describe("on a second installation whose devices list only the spec's value names (influxd)", () => {
    let filled: FilledInfluxd;
    const deviations: Record<string, number> = {};
    const SOLAR_ENERGY = "e_03_07_04_000_total_solar_energy";

    beforeAll(async () => {
      filled = await fillFromSimulator("spec_catalog", { catalog: "spec" });
    });
    afterAll(async () => {
      if (process.env.SHOW_DEVIATIONS) process.stdout.write(`${JSON.stringify(deviations)}\n`);
      await filled?.close();
    });

    /** Panels a spec-only installation cannot fill, each with the reason. */
    const SPEC_ONLY_EMPTY: Record<string, string> = {
      "Battery state of charge (A)": "the spec documents no state of charge",
      "Battery state of charge history (A)": "the spec documents no state of charge",
      "Energy per day from daily counters (A)": "the spec documents no daily-reset kWh counter",
      ...Object.fromEntries(
        GENSET_READOUT_PANELS.map((p) => [p, "the spec documents no genset readout"]),
      ),
    };

    it("lists only the spec's value names plus three coded ids of names the spec does not know", () => {
      const fleet = filled.sim.fleet;
      for (const id of fleet.deviceIds()) {
        const listed = fleet.valueIds(id, "all_data") ?? [];
        expect(listed.slice(0, COMMON_VALUE_IDS.length)).toEqual(COMMON_VALUE_IDS);
        expect(listed.slice(COMMON_VALUE_IDS.length)).toEqual(specExtraIds(1, id));
      }
    });

    // Only site A+1 draws a coded id of type text (e_00_07_03_009_aux1_75e8), seed 1.
    const NO_TEXT = { "Latest text values of the device (A)": "no value of type text listed" };
    // Sites as in FILL_SITES: two devices with a kWp, two without.
    const WITH_KWP = { [WITHOUT_KWP_PANEL]: "it has a kWp" };
    const NO_KWP = Object.fromEntries(SPECIFIC_YIELD_PANELS.map((p) => [p, "no kWp"]));
    it.each([
      ["hybrid-site-01", { ...NO_TEXT, ...WITH_KWP }],
      ["offgrid-genset-02", { ...NO_TEXT, ...WITH_KWP }],
      ["audit-box-03", { ...NO_TEXT, ...NO_KWP }],
      ["site A+1", NO_KWP],
    ])(
      "%s: every panel that applies returns rows in every tz; the others are the listed ones",
      async (deviceId, own) => {
        const { failures, excused } = await runAll(filled, deviceId, false);
        expect(failures).toEqual([]);
        expect(excused.sort()).toEqual(Object.keys({ ...SPEC_ONLY_EMPTY, ...own }).sort());
      },
    );

    it("All: every panel returns rows in every tz but those no device of the spec can fill", async () => {
      const { failures, excused } = await runAll(filled, filled.sim.fleet.deviceIds(), false);
      expect(failures).toEqual([]);
      expect(excused.sort()).toEqual(Object.keys(SPEC_ONLY_EMPTY).sort());
    });

    const firstDayS = SYNCED_FROM_S - (SYNCED_FROM_S % DAY_S);
    const fullDays = [firstDayS + DAY_S, firstDayS + 2 * DAY_S];

    /** The counter's reading the simulator serves at `atS` (a sample time). */
    function simReading(valueId: string, atS: number): number {
      const [row] = filled.sim.fleet.records(DEVICE, "all_data", [valueId], atS, atS);
      return Number(row?.[valueId]);
    }

    async function energyPerDay(
      tz: string,
      fromS: number,
      untilS: number,
    ): Promise<Map<number, number>> {
      const q = dashboardQueries(byUid("energy-overview").model).find(
        (x) => x.title === "Energy per day ($tz)" && x.refId === "A",
      );
      const text = interpolateQuery(q?.query ?? "", {
        // the rollups beside the raw points: runAll checks that $rollup_rp is autogen here
        variables: { device: DEVICE, tz, rollup_rp: "autogen" },
        fromIso: isoOf(fromS),
        toIso: isoOf(untilS),
        interval: "15m",
      });
      // the panel reads the daily rollups of total_solar_energy
      const found = (await filled.db.series(text)).filter((x) => x.name === "rollup_day");
      expect(text).toContain("'total_solar_energy'");
      expect(found).toHaveLength(1);
      return new Map((found[0]?.values ?? []).map(([t, v]) => [Number(t), Number(v)] as const));
    }

    const within = (key: string, actual: number | undefined, expected: number): void => {
      expect(expected).toBeGreaterThan(1);
      expect(actual).toBeDefined();
      const deviation = Math.abs((actual ?? 0) - expected) / expected;
      deviations[key] = deviation;
      expect(deviation).toBeLessThan(0.005);
    };

    it("energy per day of total_solar_energy within 0.5 % of the simulator, in UTC and Europe/Berlin", async () => {
      const utc = await energyPerDay("UTC", firstDayS, firstDayS + 3 * DAY_S - 1);
      for (const d of fullDays) {
        within(
          `total_solar_energy ${isoOf(d)} UTC`,
          utc.get(d),
          filled.sim.fleet.dayEnergyKwh(DEVICE, SOLAR_ENERGY, d),
        );
      }
      // Berlin is UTC+2 in June. The truth: the simulator's counter at the last sample of the
      // Berlin day minus that of the day before (samples every 300 s).
      const berlinDays = fullDays.map((d) => d - 2 * 3600);
      const berlin = await energyPerDay(
        "Europe/Berlin",
        berlinDays[0] ?? 0,
        (berlinDays[1] ?? 0) + DAY_S - 1,
      );
      const res = filled.sim.fleet.resolutionS;
      for (const d of berlinDays) {
        const truth = simReading(SOLAR_ENERGY, d + DAY_S - res) - simReading(SOLAR_ENERGY, d - res);
        within(`total_solar_energy ${isoOf(d)} Berlin`, berlin.get(d), truth);
      }
    });

    it("solar produced this month (total_solar_energy) within 0.5 % of the simulator's day totals", async () => {
      const q = dashboardQueries(byUid("energy-overview").model).find(
        (x) => x.title === "Solar produced this month" && x.refId === "A",
      );
      const fromS = fullDays[0] ?? 0;
      const text = interpolateQuery(q?.query ?? "", {
        variables: { device: DEVICE, tz: "UTC", rollup_rp: "autogen" },
        fromIso: isoOf(fromS),
        // the two whole days: their daily rollups (the 15th's starts at the range's end)
        toIso: isoOf(fromS + 2 * DAY_S - 1),
        interval: "15m",
      });
      expect(text).toContain("'total_solar_energy'");
      const found = (await filled.db.series(text)).find((x) => x.name === "rollup_day");
      const expected = fullDays.reduce(
        (sum, d) => sum + filled.sim.fleet.dayEnergyKwh(DEVICE, SOLAR_ENERGY, d),
        0,
      );
      within(
        "Solar produced this month total_solar_energy 13+14 June",
        Number(found?.values[0]?.[1]),
        expected,
      );
    });
  });
});
