import { readFileSync } from "node:fs";
import { lineBatch } from "../../src/transform/line-protocol.js";
import { allPanels, loadDashboards } from "../support/dashboard-queries.js";
import type { InfluxqlSeries } from "../support/influxd.js";
import {
  type AlertRule,
  dataQueries,
  evaluateRule,
  expressionInputs,
  firing,
  labelKey,
  loadAlertingFiles,
  loadAlertRules,
  queryTextAt,
  ROLLUP_POLICY,
  type RuleQuery,
  ruleOf,
} from "./alert-rules.js";
import { simulatorTruth } from "./alert-truth.js";
import {
  DAY_S,
  type FilledInfluxd,
  fillFromSimulator,
  isoOf,
  queryApplies,
  SYNCED_FROM_S,
  storedValues,
} from "./filled-influxd.js";

const DATASOURCES = "grafana/provisioning/datasources/influxdb.yaml";

const files = loadAlertingFiles();
const dashboards = loadDashboards();
const rules = loadAlertRules();
const rule = (uid: string): AlertRule => ruleOf(rules, uid);

/** The pipeline's rules: one query (A), its last value per series (B), a threshold (C). */
const PIPELINE_RULES = [
  "energy-battery-soc-low",
  "energy-dead-letters",
  "energy-device-silent",
  "energy-etl-lagging",
  "energy-etl-run-failed",
  "energy-etl-writes-refused",
];
/** The plant's rules (issue #35), each also tested on fixtures by plant-alerts.test.ts. */
const PLANT_RULES = [
  "energy-counter-stalled",
  "energy-device-alarm",
  "energy-genset-fuel-low",
  "energy-grid-voltage-absent",
  "energy-solar-none-at-noon",
];

describe("Grafana alert rules (grafana/provisioning/alerting)", () => {
  it("load as Grafana's file provisioning (apiVersion 1): groups, rules, queries -> reduce -> threshold or math", () => {
    expect(files.length).toBeGreaterThan(0);
    const datasourceUid = /\buid:\s*(\S+)/.exec(readFileSync(DATASOURCES, "utf8"))?.[1];
    expect(datasourceUid).toBe("influxdb");
    const problems: string[] = [];
    for (const { file, doc } of files) {
      if (doc.apiVersion !== 1) problems.push(`${file}: apiVersion ${doc.apiVersion}`);
      // The contact point is the operator's (docs/dashboards.md).
      if (doc.contactPoints !== undefined || doc.policies !== undefined) {
        problems.push(`${file}: provisions contact points or policies`);
      }
      for (const g of doc.groups ?? []) {
        if (g.orgId !== 1 || !g.name || !g.folder || !/^\d+[smh]$/.test(g.interval)) {
          problems.push(`${file}: group ${JSON.stringify({ ...g, rules: undefined })}`);
        }
        for (const r of g.rules) {
          const where = `${file} / ${r.uid}`;
          if (!/^[A-Za-z0-9_-]{1,40}$/.test(r.uid)) problems.push(`${where}: uid`);
          if (!r.title) problems.push(`${where}: no title`);
          if (!["OK", "NoData", "Alerting"].includes(r.noDataState)) {
            problems.push(`${where}: noDataState ${r.noDataState}`);
          }
          if (!["OK", "Error", "Alerting"].includes(r.execErrState)) {
            problems.push(`${where}: execErrState ${r.execErrState}`);
          }
          if (!/^\d+[smh]$/.test(r.for)) problems.push(`${where}: for ${r.for}`);
          if (!r.annotations?.summary) problems.push(`${where}: no summary`);
          // A label an annotation names is a tag every query of the rule groups by.
          const used = new Set(
            [...JSON.stringify(r.annotations ?? {}).matchAll(/\$labels\.(\w+)/g)].map((m) => m[1]),
          );
          for (const q of dataQueries(r)) {
            const groupBy = /GROUP BY(?![\s\S]*GROUP BY)([\s\S]*)$/.exec(q.model.query ?? "");
            const tags = [...(groupBy?.[1] ?? "").matchAll(/"(\w+)"/g)].map((m) => m[1]);
            for (const label of used) {
              if (!tags.includes(label)) problems.push(`${where} ${q.refId}: no label ${label}`);
            }
          }
          if (r.dashboardUid !== undefined || r.panelId !== undefined) {
            // The linked panel (Grafana needs both) exists under that id.
            const board = dashboards.find((d) => d.model.uid === r.dashboardUid);
            const panel = board && allPanels(board.model).find((p) => p.id === r.panelId);
            if (panel === undefined)
              problems.push(`${where}: no panel ${r.dashboardUid} ${r.panelId}`);
          }
          const refIds = r.data.map((d) => d.refId);
          if (new Set(refIds).size !== refIds.length) problems.push(`${where}: duplicate refIds`);
          if (!refIds.includes(r.condition)) problems.push(`${where}: condition ${r.condition}`);
          r.data.forEach((d, i) => {
            if (d.model.refId !== d.refId) problems.push(`${where} ${d.refId}: model.refId`);
            if (d.datasourceUid === "__expr__") {
              const earlier = refIds.slice(0, i);
              if (!["reduce", "threshold", "math"].includes(d.model.type ?? "")) {
                problems.push(`${where} ${d.refId}: expression type ${d.model.type}`);
              }
              const inputs = expressionInputs(d);
              if (inputs.length === 0 || !inputs.every((x) => earlier.includes(x))) {
                problems.push(`${where} ${d.refId}: expression ${d.model.expression}`);
              }
            } else {
              if (d.datasourceUid !== datasourceUid) {
                problems.push(`${where} ${d.refId}: data source ${d.datasourceUid}`);
              }
              if (d.model.rawQuery !== true || typeof d.model.query !== "string") {
                problems.push(`${where} ${d.refId}: not a raw InfluxQL query`);
              }
              const range = d.relativeTimeRange;
              if (range === undefined || range.from <= range.to || range.to < 0) {
                problems.push(`${where} ${d.refId}: relativeTimeRange`);
              }
            }
          });
        }
      }
    }
    expect(problems).toEqual([]);
    expect(rules.map((r) => r.uid).sort()).toEqual([...PIPELINE_RULES, ...PLANT_RULES].sort());
    expect(new Set(rules.map((r) => r.uid)).size).toBe(rules.length);
    // The alarm alert links the table of when each alarm was raised and cleared.
    const alarm = rule("energy-device-alarm");
    const overview = dashboards.find((d) => d.model.uid === alarm.dashboardUid);
    const linked = overview && allPanels(overview.model).find((p) => p.id === alarm.panelId);
    expect(linked?.title).toBe("Alarm events");
  });

  describe("on what the pipeline wrote from the simulator (influxd)", () => {
    let filled: FilledInfluxd;
    /** Grafana's "now" for the evaluation: a minute after the last run. */
    let nowS = 0;

    beforeAll(async () => {
      // The rollups in their retention policy, as docker-compose.yml has them: the counter rule
      // reads "rollups"."rollup_hour" and "rollups"."rollup_day".
      filled = await fillFromSimulator("alerting", { rollupPolicy: ROLLUP_POLICY });
      nowS = filled.toS + 60;
    });
    afterAll(async () => {
      await filled?.close();
    });

    const answerAt = (q: RuleQuery, atS: number): Promise<InfluxqlSeries[]> =>
      filled.db.series(queryTextAt(q, atS));
    const answer = (q: RuleQuery): Promise<InfluxqlSeries[]> => answerAt(q, nowS);
    const evaluate = (r: AlertRule): Promise<Map<string, boolean>> => evaluateRule(r, answer);

    async function write(lines: string[]): Promise<void> {
      const { rejected } = await filled.pipeline.sink.write(lineBatch(lines));
      expect(rejected).toEqual([]);
    }

    it("every pipeline rule's query returns one numeric series per device resource (or the one run)", async () => {
      const rows: Record<string, number> = {};
      for (const uid of PIPELINE_RULES) {
        const [q] = dataQueries(rule(uid));
        if (q === undefined) throw new Error(`${uid}: no query`);
        const series = await answer(q);
        rows[uid] = series.length;
        expect(series.length).toBeGreaterThan(0);
        for (const s of series) {
          expect(s.values).toHaveLength(1);
          expect(typeof s.values[0]?.[1]).toBe("number");
        }
      }
      // Per device resource: the simulator's four devices plus the hybrid's battery_bank.
      expect(rows["energy-device-silent"]).toBe(5);
      expect(rows["energy-dead-letters"]).toBe(5);
      expect(rows["energy-etl-lagging"]).toBe(5);
      expect(rows["energy-etl-run-failed"]).toBe(1);
      expect(rows["energy-etl-writes-refused"]).toBe(1);
      // State of charge: every device resource with a %-unit soc measurement.
      const withSoc = ["hybrid-site-01", "offgrid-genset-02", "audit-box-03", "site A+1"].filter(
        (d) =>
          queryApplies(
            dataQueries(rule("energy-battery-soc-low"))[0]?.model.query ?? "",
            storedValues(filled.sim, d),
          ),
      );
      expect(withSoc.length).toBeGreaterThan(0);
      expect(rows["energy-battery-soc-low"]).toBeGreaterThanOrEqual(withSoc.length);
    });

    it("on the healthy fill nothing but a low state of charge can fire", async () => {
      for (const uid of PIPELINE_RULES.filter((u) => u !== "energy-battery-soc-low")) {
        expect(firing(await evaluate(rule(uid)))).toEqual([]);
      }
    });

    it("the plant rules: one alert instance per series, firing where the simulator's samples say, hour by hour", async () => {
      // Every hour of the last two synced days, and a minute after the last run: the alarms and
      // grid outages the simulator raises then.
      const instants = [nowS];
      for (let t = SYNCED_FROM_S + DAY_S; t < filled.toS; t += 3600) instants.push(t);
      const fired: Record<string, number> = {};
      for (const atS of instants) {
        const truth = simulatorTruth(filled, atS);
        for (const uid of PLANT_RULES) {
          // evaluateRule throws on two series with the same tags, as Grafana would.
          const evaluated = await evaluateRule(rule(uid), (q) => answerAt(q, atS));
          const expected = truth[uid];
          if (expected === undefined) throw new Error(`${uid}: no oracle`);
          const at = isoOf(atS);
          expect({ uid, at, instances: [...evaluated.keys()].sort() }).toEqual({
            uid,
            at,
            instances: [...expected.instances].sort(),
          });
          expect({ uid, at, firing: firing(evaluated).sort() }).toEqual({
            uid,
            at,
            firing: [...expected.firing].sort(),
          });
          fired[uid] = (fired[uid] ?? 0) + expected.firing.length;
        }
      }
      // The simulator raised alarms and cut the hybrid's grid in these days (so the comparison
      // is not of empty sets); its plants made power every noon, its counters rose and its
      // genset tanks stayed above 20 L.
      expect(fired["energy-device-alarm"]).toBeGreaterThan(0);
      expect(fired["energy-grid-voltage-absent"]).toBeGreaterThan(0);
      expect([
        fired["energy-solar-none-at-noon"],
        fired["energy-counter-stalled"],
        fired["energy-genset-fuel-low"],
      ]).toEqual([0, 0, 0]);
    });

    it("fires for a silent device, dead letters, a failed run, refused writes and a low state of charge", async () => {
      await write([
        `etl_lag,device_id=ghost-07,resource_id=all_data lag_s=7200,fetched_lag_s=5400,silent=1,silent_since=${nowS - 7200 - 30},failures=2,dead_letters=3 ${nowS - 30}`,
        `etl_run,kind=sync,status=failed requests=1,points=0,errors=1,devices=1,duration_s=0.5,ok=0,dead_letters=0,refused_writes=2 ${nowS - 20}`,
        `battery_SOC,device_id=ghost-07,resource_id=all_data,values_id=002,unit=%,type=continuous value=12 ${nowS - 10}`,
      ]);
      const ghost = labelKey({ device_id: "ghost-07", resource_id: "all_data" });
      for (const uid of ["energy-device-silent", "energy-dead-letters", "energy-etl-lagging"]) {
        expect(firing(await evaluate(rule(uid)))).toEqual([ghost]);
      }
      expect([...(await evaluate(rule("energy-etl-run-failed"))).values()]).toEqual([true]);
      expect([...(await evaluate(rule("energy-etl-writes-refused"))).values()]).toEqual([true]);
      expect((await evaluate(rule("energy-battery-soc-low"))).get(ghost)).toBe(true);
    });
  });
});
