import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { lineBatch } from "../../src/transform/line-protocol.js";
import { interpolateQuery, unresolvedVariables } from "../support/dashboard-queries.js";
import type { InfluxqlSeries } from "../support/influxd.js";
import {
  type FilledInfluxd,
  fillFromSimulator,
  isoOf,
  queryApplies,
  storedValues,
} from "./filled-influxd.js";

const ALERTING_DIR = "grafana/provisioning/alerting";
const DATASOURCES = "grafana/provisioning/datasources/influxdb.yaml";

/** The parts of Grafana's alert rule provisioning file (apiVersion 1) that the test checks. */
interface RuleQuery {
  readonly refId: string;
  readonly datasourceUid: string;
  readonly relativeTimeRange?: { readonly from: number; readonly to: number };
  readonly model: {
    readonly refId?: string;
    readonly rawQuery?: boolean;
    readonly resultFormat?: string;
    readonly query?: string;
    readonly type?: string;
    readonly expression?: string;
    readonly reducer?: string;
    readonly conditions?: readonly {
      readonly evaluator: { readonly type: string; readonly params: readonly number[] };
    }[];
  };
}
interface AlertRule {
  readonly uid: string;
  readonly title: string;
  readonly condition: string;
  readonly data: readonly RuleQuery[];
  readonly noDataState: string;
  readonly execErrState: string;
  readonly for: string;
  readonly annotations?: Record<string, string>;
  readonly labels?: Record<string, string>;
}
interface RuleGroup {
  readonly orgId: number;
  readonly name: string;
  readonly folder: string;
  readonly interval: string;
  readonly rules: readonly AlertRule[];
}
interface AlertingFile {
  readonly apiVersion: number;
  readonly groups?: readonly RuleGroup[];
  readonly contactPoints?: unknown;
  readonly policies?: unknown;
}

const files = readdirSync(ALERTING_DIR)
  .filter((f) => /\.(ya?ml|json)$/.test(f))
  .map((f) => ({
    file: f,
    doc: parse(readFileSync(join(ALERTING_DIR, f), "utf8")) as AlertingFile,
  }));
const rules = files.flatMap(({ doc }) => (doc.groups ?? []).flatMap((g) => g.rules));

function rule(uid: string): AlertRule {
  const found = rules.find((r) => r.uid === uid);
  if (found === undefined) throw new Error(`no alert rule ${uid}`);
  return found;
}

/** The rule's InfluxQL query (refId A). */
function influxQuery(r: AlertRule): RuleQuery {
  const q = r.data.find((d) => d.datasourceUid !== "__expr__");
  if (q === undefined) throw new Error(`${r.uid}: no data source query`);
  return q;
}

/** What Grafana's reduce (last) and threshold expressions make of the query's series. */
function evaluate(r: AlertRule, series: readonly InfluxqlSeries[]): Map<string, boolean> {
  const threshold = r.data.find((d) => d.model.type === "threshold");
  const evaluator = threshold?.model.conditions?.[0]?.evaluator;
  if (evaluator === undefined) throw new Error(`${r.uid}: no threshold`);
  const limit = evaluator.params[0] ?? Number.NaN;
  const out = new Map<string, boolean>();
  for (const s of series) {
    const values = s.values.map((v) => v[1]).filter((v) => v !== null);
    const last = Number(values.at(-1));
    const key = `${s.name} ${JSON.stringify(s.tags ?? {})}`;
    out.set(key, evaluator.type === "gt" ? last > limit : last < limit);
  }
  return out;
}

describe("Grafana alert rules (grafana/provisioning/alerting)", () => {
  it("load as Grafana's file provisioning (apiVersion 1): groups, rules, A -> reduce B -> threshold C", () => {
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
          const refIds = r.data.map((d) => d.refId);
          if (new Set(refIds).size !== refIds.length) problems.push(`${where}: duplicate refIds`);
          if (!refIds.includes(r.condition)) problems.push(`${where}: condition ${r.condition}`);
          r.data.forEach((d, i) => {
            if (d.model.refId !== d.refId) problems.push(`${where} ${d.refId}: model.refId`);
            if (d.datasourceUid === "__expr__") {
              const earlier = refIds.slice(0, i);
              if (d.model.type !== "reduce" && d.model.type !== "threshold") {
                problems.push(`${where} ${d.refId}: expression type ${d.model.type}`);
              }
              if (!earlier.includes(d.model.expression ?? "")) {
                problems.push(`${where} ${d.refId}: expression ${d.model.expression}`);
              }
            } else {
              if (d.datasourceUid !== datasourceUid) {
                problems.push(`${where} ${d.refId}: data source ${d.datasourceUid}`);
              }
              if (d.model.rawQuery !== true || typeof d.model.query !== "string") {
                problems.push(`${where} ${d.refId}: not a raw InfluxQL query`);
              }
              if ((d.relativeTimeRange?.from ?? 0) <= 0) {
                problems.push(`${where} ${d.refId}: relativeTimeRange`);
              }
            }
          });
        }
      }
    }
    expect(problems).toEqual([]);
    expect(rules.map((r) => r.uid).sort()).toEqual(
      [
        "energy-battery-soc-low",
        "energy-dead-letters",
        "energy-device-silent",
        "energy-etl-lagging",
        "energy-etl-run-failed",
      ].sort(),
    );
    expect(new Set(rules.map((r) => r.uid)).size).toBe(rules.length);
  });

  describe("on what the pipeline wrote from the simulator (influxd)", () => {
    let filled: FilledInfluxd;
    /** Grafana's "now" for the evaluation: a minute after the last run. */
    let nowS = 0;

    beforeAll(async () => {
      filled = await fillFromSimulator("alerting");
      nowS = filled.toS + 60;
    });
    afterAll(async () => {
      await filled?.close();
    });

    async function run(r: AlertRule): Promise<InfluxqlSeries[]> {
      const q = influxQuery(r);
      const text = interpolateQuery(q.model.query ?? "", {
        variables: {},
        fromIso: isoOf(nowS - (q.relativeTimeRange?.from ?? 0)),
        toIso: isoOf(nowS - (q.relativeTimeRange?.to ?? 0)),
        interval: "1m",
      });
      expect(unresolvedVariables(text)).toEqual([]);
      return filled.db.series(text);
    }

    async function write(lines: string[]): Promise<void> {
      const { rejected } = await filled.pipeline.sink.write(lineBatch(lines));
      expect(rejected).toEqual([]);
    }

    it("every rule's query returns one numeric series per device resource (or the one run)", async () => {
      const rows: Record<string, number> = {};
      for (const r of rules) {
        const series = await run(r);
        rows[r.uid] = series.length;
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
      // State of charge: every device resource with a %-unit soc measurement.
      const withSoc = ["hybrid-site-01", "offgrid-genset-02", "audit-box-03", "site A+1"].filter(
        (d) =>
          queryApplies(
            influxQuery(rule("energy-battery-soc-low")).model.query ?? "",
            storedValues(filled.sim, d),
          ),
      );
      expect(withSoc.length).toBeGreaterThan(0);
      expect(rows["energy-battery-soc-low"]).toBeGreaterThanOrEqual(withSoc.length);
    });

    it("on the healthy fill nothing but a low state of charge can fire", async () => {
      for (const uid of [
        "energy-device-silent",
        "energy-dead-letters",
        "energy-etl-lagging",
        "energy-etl-run-failed",
      ]) {
        const r = rule(uid);
        expect([...evaluate(r, await run(r)).values()]).not.toContain(true);
      }
    });

    it("fires for a silent device, dead letters, a failed run and a low state of charge", async () => {
      await write([
        `etl_lag,device_id=ghost-07,resource_id=all_data lag_s=7200,fetched_lag_s=5400,silent=1,silent_since=${nowS - 7200 - 30},failures=2,dead_letters=3 ${nowS - 30}`,
        `etl_run,kind=sync,status=failed requests=1,points=0,errors=1,devices=1,duration_s=0.5,ok=0,dead_letters=0 ${nowS - 20}`,
        `battery_SOC,device_id=ghost-07,resource_id=all_data,values_id=002,unit=%,type=continuous value=12 ${nowS - 10}`,
      ]);
      const ghost = 'etl_lag {"device_id":"ghost-07","resource_id":"all_data"}';
      for (const uid of ["energy-device-silent", "energy-dead-letters", "energy-etl-lagging"]) {
        const fired = evaluate(rule(uid), await run(rule(uid)));
        expect([...fired].filter(([, on]) => on).map(([key]) => key)).toEqual([ghost]);
      }
      const failed = evaluate(
        rule("energy-etl-run-failed"),
        await run(rule("energy-etl-run-failed")),
      );
      expect([...failed.values()]).toEqual([true]);
      const soc = evaluate(
        rule("energy-battery-soc-low"),
        await run(rule("energy-battery-soc-low")),
      );
      expect(soc.get('battery_SOC {"device_id":"ghost-07","resource_id":"all_data"}')).toBe(true);
    });
  });
});
