/**
 * Shared by the alert rule tests of test/deploy: Grafana's alert rule provisioning files
 * (grafana/provisioning/alerting, apiVersion 1) as the tests read them, and a rule evaluated as
 * Grafana's server-side expressions would on the answers of a real influxd: each data source
 * query's series (labels = the series' tags, as Grafana's InfluxQL data source makes them),
 * `reduce` (last, dropping non-numbers), `threshold` (gt, lt, within_range, outside_range) and
 * `math` (`$X`, numbers, `+ - * /`, comparisons, `&& || !`, parentheses), one alert instance per
 * label set.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { interpolateQuery, unresolvedVariables } from "../support/dashboard-queries.js";
import type { InfluxqlSeries } from "../support/influxd.js";
import { isoOf } from "./filled-influxd.js";

export const ALERTING_DIR = "grafana/provisioning/alerting";

/** The parts of a rule's query or expression that the tests read. */
export interface RuleQuery {
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
export interface AlertRule {
  readonly uid: string;
  readonly title: string;
  readonly condition: string;
  readonly data: readonly RuleQuery[];
  readonly noDataState: string;
  readonly execErrState: string;
  readonly for: string;
  /** The dashboard and panel the rule is linked to (both or neither). */
  readonly dashboardUid?: string;
  readonly panelId?: number;
  readonly annotations?: Record<string, string>;
  readonly labels?: Record<string, string>;
}
export interface RuleGroup {
  readonly orgId: number;
  readonly name: string;
  readonly folder: string;
  readonly interval: string;
  readonly rules: readonly AlertRule[];
}
export interface AlertingFile {
  readonly apiVersion: number;
  readonly groups?: readonly RuleGroup[];
  readonly contactPoints?: unknown;
  readonly policies?: unknown;
}

/**
 * The rollups' retention policy: that of docker-compose.yml's default ROLLUP_BUCKET
 * (`${ROLLUP_BUCKET:-${INFLUX_BUCKET:-energy}/rollups}` -> `rollups`), which `init` writes too.
 * Grafana reads an alert query's model as written, without environment variables (they would
 * eat `$timeFilter`), so the rules name it; the tests hold them to this one place.
 */
export const ROLLUP_POLICY = composeRollupPolicy(readFileSync("docker-compose.yml", "utf8"));

function composeRollupPolicy(compose: string): string {
  const bucket =
    /^\s+ROLLUP_BUCKET: \$\{ROLLUP_BUCKET:-\$\{INFLUX_BUCKET:-[^}]+\}\/([^}]+)\}$/m.exec(
      compose,
    )?.[1];
  if (bucket === undefined) throw new Error("docker-compose.yml gives ROLLUP_BUCKET no default");
  return bucket;
}

/**
 * The retention policies the rules' queries read the rollups from: `"rollups"."rollup_hour"` ->
 * `rollups`; a rollup measurement without a policy (the database's default) -> `""`.
 */
export function rollupPolicies(rules: readonly AlertRule[]): string[] {
  const found = new Set<string>();
  for (const q of rules.flatMap((r) => r.data)) {
    const query = q.model.query ?? "";
    for (const m of query.matchAll(/(?:"([^"]+)"\.)?"(rollup_hour|rollup_day)"/g))
      found.add(m[1] ?? "");
  }
  return [...found].sort();
}

/** Every provisioning file of the directory, parsed. */
export function loadAlertingFiles(
  dir: string = ALERTING_DIR,
): { readonly file: string; readonly doc: AlertingFile }[] {
  return readdirSync(dir)
    .filter((f) => /\.(ya?ml|json)$/.test(f))
    .map((f) => ({ file: f, doc: parse(readFileSync(join(dir, f), "utf8")) as AlertingFile }));
}

/** Every rule of every group of every file. */
export function loadAlertRules(dir: string = ALERTING_DIR): AlertRule[] {
  return loadAlertingFiles(dir).flatMap(({ doc }) => (doc.groups ?? []).flatMap((g) => g.rules));
}

/** A rule's data source query over its relative range ending at `atS`, as Grafana's $timeFilter. */
export function queryTextAt(q: RuleQuery, atS: number): string {
  const text = interpolateQuery(q.model.query ?? "", {
    variables: {},
    fromIso: isoOf(atS - (q.relativeTimeRange?.from ?? 0)),
    toIso: isoOf(atS - (q.relativeTimeRange?.to ?? 0)),
    interval: "1m",
  });
  const left = unresolvedVariables(text);
  if (left.length > 0)
    throw new Error(`${q.refId}: variables left in the query: ${left.join(", ")}`);
  return text;
}

export function ruleOf(rules: readonly AlertRule[], uid: string): AlertRule {
  const found = rules.find((r) => r.uid === uid);
  if (found === undefined) throw new Error(`no alert rule ${uid}`);
  return found;
}

/** The rule's InfluxQL queries (every data source query, not the expressions). */
export function dataQueries(r: AlertRule): RuleQuery[] {
  const qs = r.data.filter((d) => d.datasourceUid !== "__expr__");
  if (qs.length === 0) throw new Error(`${r.uid}: no data source query`);
  return qs;
}

/** The refIds an expression reads: `expression` of reduce/threshold, each `$X` of math. */
export function expressionInputs(q: RuleQuery): string[] {
  const e = q.model.expression ?? "";
  if (q.model.type === "math") return [...e.matchAll(/\$([A-Za-z0-9_]+)/g)].map((m) => m[1] ?? "");
  return [e];
}

/** A label set as a key: its tags, sorted. */
export function labelKey(tags: Readonly<Record<string, string>> | undefined): string {
  return JSON.stringify(Object.entries(tags ?? {}).sort(([a], [b]) => a.localeCompare(b)));
}

/** One number per label set (reduced, or an expression's result). */
type Numbers = Map<string, number>;

/** The last numeric value of a series (reduce `last`, mode dropNN); NaN when it has none. */
function lastNumber(s: InfluxqlSeries): number {
  const values = s.values.map((v) => v[1]).filter((v): v is number => typeof v === "number");
  return values.at(-1) ?? Number.NaN;
}

function thresholdOf(q: RuleQuery, input: Numbers): Numbers {
  const evaluator = q.model.conditions?.[0]?.evaluator;
  if (evaluator === undefined) throw new Error(`${q.refId}: no evaluator`);
  const [a = Number.NaN, b = Number.NaN] = evaluator.params;
  const test: Record<string, (v: number) => boolean> = {
    gt: (v) => v > a,
    lt: (v) => v < a,
    within_range: (v) => v > a && v < b,
    outside_range: (v) => v < a || v > b,
  };
  const fn = test[evaluator.type];
  if (fn === undefined) throw new Error(`${q.refId}: evaluator ${evaluator.type}`);
  return new Map([...input].map(([k, v]) => [k, fn(v) ? 1 : 0]));
}

/** A rule evaluated: whether each alert instance fires, and every expression's numbers. */
export interface Evaluation {
  readonly fires: Map<string, boolean>;
  readonly numbers: ReadonlyMap<string, ReadonlyMap<string, number>>;
}

/**
 * What the rule's condition makes of the answers of its data source queries: for each alert
 * instance (label set, as {@link labelKey}), whether it fires. `answer` runs one query (with its
 * relative time range) on influxd. Throws, as Grafana errs, when a query answers two series with
 * the same tags ("duplicate results with labels").
 */
export async function evaluateRule(
  r: AlertRule,
  answer: (q: RuleQuery) => Promise<InfluxqlSeries[]>,
): Promise<Map<string, boolean>> {
  return (await evaluateRuleIn(r, answer)).fires;
}

/** {@link evaluateRule}, with the numbers of each expression (the reduced values: B, E). */
export async function evaluateRuleIn(
  r: AlertRule,
  answer: (q: RuleQuery) => Promise<InfluxqlSeries[]>,
): Promise<Evaluation> {
  const series = new Map<string, InfluxqlSeries[]>();
  for (const q of dataQueries(r)) {
    const answered = await answer(q);
    const keys = answered.map((s) => labelKey(s.tags));
    const duplicate = keys.find((k, i) => keys.indexOf(k) !== i);
    if (duplicate !== undefined) {
      throw new Error(`${r.uid} ${q.refId}: duplicate results with labels ${duplicate}`);
    }
    series.set(q.refId, answered);
  }
  const numbers = new Map<string, Numbers>();
  for (const q of r.data.filter((d) => d.datasourceUid === "__expr__")) {
    const input = q.model.expression ?? "";
    if (q.model.type === "reduce") {
      if (q.model.reducer !== "last") throw new Error(`${r.uid} ${q.refId}: ${q.model.reducer}`);
      const from = series.get(input) ?? [];
      numbers.set(q.refId, new Map(from.map((s) => [labelKey(s.tags), lastNumber(s)])));
    } else if (q.model.type === "threshold") {
      numbers.set(q.refId, thresholdOf(q, numbers.get(input) ?? new Map()));
    } else if (q.model.type === "math") {
      numbers.set(q.refId, evaluateMath(input, numbers));
    } else throw new Error(`${r.uid} ${q.refId}: expression type ${q.model.type}`);
  }
  const condition = numbers.get(r.condition);
  if (condition === undefined) throw new Error(`${r.uid}: condition ${r.condition} not computed`);
  const fires = new Map([...condition].map(([k, v]) => [k, v !== 0 && !Number.isNaN(v)]));
  return { fires, numbers };
}

/** The label sets of the instances that fire. */
export function firing(evaluated: ReadonlyMap<string, boolean>): string[] {
  return [...evaluated].filter(([, on]) => on).map(([key]) => key);
}

/**
 * A math expression over reduced numbers, per label set: Grafana joins the operands' numbers by
 * labels; here every variable must have the label set (all of them come from queries grouped
 * by the same tags), others are dropped.
 */
export function evaluateMath(expression: string, vars: ReadonlyMap<string, Numbers>): Numbers {
  const names = [...expression.matchAll(/\$([A-Za-z0-9_]+)/g)].map((m) => m[1] ?? "");
  const first = vars.get(names[0] ?? "");
  if (first === undefined) throw new Error(`math ${expression}: no $ variable computed`);
  const out: Numbers = new Map();
  for (const key of first.keys()) {
    const values = new Map<string, number>();
    for (const n of names) {
      const v = vars.get(n)?.get(key);
      if (v !== undefined) values.set(n, v);
    }
    if (values.size === new Set(names).size) out.set(key, calculate(expression, values));
  }
  return out;
}

const TOKEN = /\s*(\$[A-Za-z0-9_]+|\d+(?:\.\d+)?|&&|\|\||==|!=|>=|<=|[<>!()+\-*/])/y;

/** Evaluates `expression` with its `$X` from `values`: booleans are 1 and 0, as in Grafana. */
export function calculate(expression: string, values: ReadonlyMap<string, number>): number {
  const tokens: string[] = [];
  TOKEN.lastIndex = 0;
  while (/\S/.test(expression.slice(TOKEN.lastIndex))) {
    const at = TOKEN.lastIndex;
    const m = TOKEN.exec(expression);
    if (m === null || m[1] === undefined)
      throw new Error(`math: cannot read ${expression} at ${at}`);
    tokens.push(m[1]);
  }
  let i = 0;
  const peek = (): string | undefined => tokens[i];
  const b = (v: boolean): number => (v ? 1 : 0);
  const binary = (next: () => number, ops: Record<string, (x: number, y: number) => number>) => {
    return (): number => {
      let left = next();
      for (let op = ops[peek() ?? ""]; op !== undefined; op = ops[peek() ?? ""]) {
        i += 1;
        left = op(left, next());
      }
      return left;
    };
  };
  const primary = (): number => {
    const t = tokens[i++];
    if (t === "(") {
      const v = or();
      if (tokens[i++] !== ")") throw new Error(`math: ) missing in ${expression}`);
      return v;
    }
    if (t === "!") return b(primary() === 0);
    if (t === "-") return -primary();
    if (t?.startsWith("$")) {
      const v = values.get(t.slice(1));
      if (v === undefined) throw new Error(`math: ${t} unknown`);
      return v;
    }
    if (t !== undefined && /^\d/.test(t)) return Number(t);
    throw new Error(`math: unexpected ${t} in ${expression}`);
  };
  const product = binary(primary, { "*": (x, y) => x * y, "/": (x, y) => x / y });
  const sum = binary(product, { "+": (x, y) => x + y, "-": (x, y) => x - y });
  const compare = binary(sum, {
    "<": (x, y) => b(x < y),
    ">": (x, y) => b(x > y),
    "<=": (x, y) => b(x <= y),
    ">=": (x, y) => b(x >= y),
    "==": (x, y) => b(x === y),
    "!=": (x, y) => b(x !== y),
  });
  const and = binary(compare, { "&&": (x, y) => b(x !== 0 && y !== 0) });
  const or = binary(and, { "||": (x, y) => b(x !== 0 || y !== 0) });
  const result = or();
  if (i !== tokens.length) throw new Error(`math: ${tokens[i]} left over in ${expression}`);
  return result;
}
