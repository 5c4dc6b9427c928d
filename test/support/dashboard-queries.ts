/**
 * The Grafana dashboards of grafana/dashboards/ as data: every InfluxQL query they hold (panel
 * targets, the panels of rows, template variables) and Grafana's substitution of `$timeFilter`,
 * `$__interval` and template variables, so that tests can run the queries on a real influxd.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** Where Grafana's provisioning reads the dashboards (see grafana/provisioning/dashboards). */
export const DASHBOARD_DIR = "grafana/dashboards";

/** The parts of a Grafana dashboard JSON model that the tests look at. */
export interface DashboardTarget {
  readonly refId?: string;
  readonly datasource?: unknown;
  readonly rawQuery?: unknown;
  readonly query?: unknown;
  readonly resultFormat?: unknown;
  readonly alias?: unknown;
}

export interface DashboardPanel {
  readonly id?: number;
  readonly type?: string;
  readonly title?: string;
  readonly datasource?: unknown;
  readonly targets?: readonly DashboardTarget[];
  /** The panels of a collapsed row. */
  readonly panels?: readonly DashboardPanel[];
}

export interface DashboardVariable {
  readonly type?: string;
  readonly name?: string;
  readonly datasource?: unknown;
  /** A string, or `{ query }` as newer Grafana versions store it. */
  readonly query?: unknown;
  /** The selected value(s): `{ text, value }`. */
  readonly current?: unknown;
  readonly includeAll?: boolean;
  readonly multi?: boolean;
  /** What "All" stands for when set; otherwise every option, as `(a|b|c)`. */
  readonly allValue?: string;
  /** A query variable's filter of its values (`/^(a|b)$/`; a capture group is the value). */
  readonly regex?: string;
  /** How a query variable's values are sorted: 0 as answered, 1 A-Z, 2 Z-A. */
  readonly sort?: number;
  /** 2: hidden. */
  readonly hide?: number;
}

export interface Dashboard {
  readonly uid?: string;
  readonly title?: string;
  readonly panels?: readonly DashboardPanel[];
  readonly templating?: { readonly list?: readonly DashboardVariable[] };
  readonly annotations?: { readonly list?: readonly { readonly datasource?: unknown }[] };
}

/** A dashboard file and its model. */
export interface LoadedDashboard {
  readonly file: string;
  readonly model: Dashboard;
}

/** One InfluxQL query of a dashboard. */
export interface DashboardQuery {
  /** The dashboard's title. */
  readonly dashboard: string;
  readonly source: "panel" | "variable";
  /** The panel's title, or the variable's name. */
  readonly title: string;
  readonly refId: string;
  readonly query: string;
}

/** Every dashboard JSON file of `dir`, sorted by file name. */
export function loadDashboards(dir: string = DASHBOARD_DIR): LoadedDashboard[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((file) => ({
      file,
      model: JSON.parse(readFileSync(join(dir, file), "utf8")) as Dashboard,
    }));
}

/** Every panel of a dashboard, rows and the panels inside collapsed rows included. */
export function allPanels(model: Dashboard): DashboardPanel[] {
  const out: DashboardPanel[] = [];
  const visit = (panels: readonly DashboardPanel[] | undefined): void => {
    for (const p of panels ?? []) {
      out.push(p);
      visit(p.panels);
    }
  };
  visit(model.panels);
  return out;
}

/** The query text of a template variable (a string or `{ query }`); undefined when it has none. */
export function variableQuery(v: DashboardVariable): string | undefined {
  if (typeof v.query === "string") return v.query;
  if (typeof v.query === "object" && v.query !== null && "query" in v.query) {
    const q = (v.query as { query?: unknown }).query;
    return typeof q === "string" ? q : undefined;
  }
  return undefined;
}

/** Every InfluxQL query of a dashboard: panel targets, then query variables. */
export function dashboardQueries(model: Dashboard): DashboardQuery[] {
  const dashboard = model.title ?? "(untitled)";
  const queries: DashboardQuery[] = [];
  for (const panel of allPanels(model)) {
    for (const t of panel.targets ?? []) {
      queries.push({
        dashboard,
        source: "panel",
        title: panel.title ?? `(panel ${panel.id ?? "?"})`,
        refId: t.refId ?? "?",
        query: typeof t.query === "string" ? t.query : "",
      });
    }
  }
  for (const v of model.templating?.list ?? []) {
    if (v.type !== "query") continue;
    queries.push({
      dashboard,
      source: "variable",
      title: `$${v.name ?? "?"}`,
      refId: "variable",
      query: variableQuery(v) ?? "",
    });
  }
  return queries;
}

/** Escapes regex metacharacters (and `/`) as Grafana's InfluxDB data source does. */
export function escapeRegex(value: string): string {
  return value.replace(/[\\^$*+?.()|[\]{}/]/g, "\\$&");
}

/**
 * A template variable's value: one value, or several (a multi-value variable, "All" without an
 * `allValue`), which Grafana's InfluxDB data source writes as `(a|b|c)`, each regex-escaped.
 */
export type VariableValue = string | readonly string[];

/** What Grafana puts into a query. */
export interface QueryContext {
  /** Template variable values, unescaped (`site A+1`). */
  readonly variables: Readonly<Record<string, VariableValue>>;
  readonly fromIso: string;
  readonly toIso: string;
  /** `$__interval`, e.g. `15m`. */
  readonly interval: string;
}

function formatValue(raw: VariableValue, asRegex: boolean): string {
  if (typeof raw === "string") return asRegex ? escapeRegex(raw) : raw;
  const escaped = raw.map(escapeRegex);
  return escaped.length === 1 ? (escaped[0] ?? "") : `(${escaped.join("|")})`;
}

function replaceVariables(
  text: string,
  variables: Readonly<Record<string, VariableValue>>,
  asRegex: boolean,
): string {
  let out = text;
  for (const [name, raw] of Object.entries(variables)) {
    const value = formatValue(raw, asRegex);
    const forms = [`\${${name}}`, `[[${name}]]`];
    for (const form of forms) out = out.split(form).join(value);
    out = out.replace(new RegExp(`\\$${name}(?![A-Za-z0-9_])`, "g"), () => value);
  }
  return out;
}

/** Regex literals of InfluxQL (`=~ /…/`, `!~ /…/`, `FROM /…/`). */
const REGEX_LITERAL = /(=~|!~|\bFROM)(\s*)\/((?:\\.|[^\\/\n])*)\//gi;

/**
 * Substitutes as Grafana does: `$timeFilter`, `$__interval`, and template variables, regex-escaped
 * where they stand in a regex literal and as they are elsewhere.
 */
export function interpolateQuery(query: string, ctx: QueryContext): string {
  const inRegex = query.replace(
    REGEX_LITERAL,
    (_m, op: string, space: string, body: string) =>
      `${op}${space}/${replaceVariables(body, ctx.variables, true)}/`,
  );
  return replaceVariables(inRegex, ctx.variables, false)
    .replace(/\$\{__(from|to):date:(YYYY-MM|YYYY)\}/g, (_m, end: string, format: string) =>
      // Grafana formats the range's end (or start) in the dashboard's time zone, UTC here
      (end === "to" ? ctx.toIso : ctx.fromIso).slice(0, format.length),
    )
    .split("$timeFilter")
    .join(`time >= '${ctx.fromIso}' AND time <= '${ctx.toIso}'`)
    .split("$__interval")
    .join(ctx.interval);
}

/** A panel's query of a dashboard by title and refId, substituted as Grafana does; throws when none. */
export function panelQuery(
  model: Dashboard,
  title: string,
  refId: string,
  ctx: QueryContext,
): string {
  const q = dashboardQueries(model).find(
    (x) => x.source === "panel" && x.title === title && x.refId === refId,
  );
  if (q === undefined) throw new Error(`no panel "${title}" (${refId}) in ${model.title}`);
  return interpolateQuery(q.query, ctx);
}

/** Template references that are left in a query after substitution (`$name`, `${name}`, `[[name]]`). */
export function unresolvedVariables(query: string): string[] {
  return query.match(/\$\{?[A-Za-z_][A-Za-z0-9_]*|\[\[[^\]]+\]\]/g) ?? [];
}

/**
 * The measurement a query reads when it names one (`FROM "name"`, `FROM "policy"."name"`);
 * undefined for regexes.
 */
export function queriedMeasurement(query: string): string | undefined {
  return /\bFROM\s+(?:"(?:[^"\\]|\\.)*"\.)?"((?:[^"\\]|\\.)*)"/i.exec(query)?.[1];
}

/** The rows of an InfluxQL answer a variable query reads (the tests' influxd series). */
export interface AnsweredSeries {
  readonly columns: readonly string[];
  readonly values: readonly (readonly unknown[])[];
}

/**
 * A query variable's options from its query's answer, as Grafana's InfluxDB data source lists
 * them (its ResponseParser): SHOW RETENTION POLICIES the first column, the database's default
 * policy first; other queries the second column when there is one (SHOW TAG VALUES: the value),
 * else the first; each once. Then the variable's regex (a capture group is the value) and its
 * sort (0 as answered, 1 A-Z, 2 Z-A; others are not used by the dashboards and throw).
 */
export function variableOptions(v: DashboardVariable, answer: readonly AnsweredSeries[]): string[] {
  const policies = /show retention policies/i.test(variableQuery(v) ?? "");
  let found: string[] = [];
  for (const series of answer) {
    for (const row of series.values) {
      const value = String(policies ? row[0] : (row[1] ?? row[0]));
      if (found.includes(value)) continue;
      found = policies && row.at(-1) === true ? [value, ...found] : [...found, value];
    }
  }
  const regex = /^\/(.*)\/([a-z]*)$/.exec(v.regex ?? "");
  if (regex) {
    const re = new RegExp(regex[1] ?? "", regex[2]);
    found = found.flatMap((text) => {
      const m = re.exec(text);
      return m === null ? [] : [m[1] ?? m[0]];
    });
  }
  const sort = v.sort ?? 0;
  if (sort === 0) return found;
  if (sort !== 1 && sort !== 2)
    throw new Error(`variable ${v.name}: sort ${sort} is not simulated`);
  const sorted = [...found].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return sort === 1 ? sorted : sorted.reverse();
}

/** The option Grafana selects on load: the saved current value when it is an option, else the first. */
export function selectedOption(
  v: DashboardVariable,
  options: readonly string[],
): string | undefined {
  const current = (v.current as { value?: unknown } | undefined)?.value;
  return typeof current === "string" && options.includes(current) ? current : options[0];
}

/** A query variable as Grafana resolves it on a database: its options and the one selected. */
export interface ResolvedVariable {
  readonly options: readonly string[];
  readonly selected: string | undefined;
}

/**
 * Every single-value query variable of a dashboard resolved as Grafana does on load: in the
 * dashboard's order, each query with the variables before it (and `given`) substituted, run by
 * `run` (the tests' influxd). Multi-value variables (`device`) are left to the caller (`given`).
 */
export async function resolveQueryVariables(
  model: Dashboard,
  run: (query: string) => Promise<readonly AnsweredSeries[]>,
  ctx: QueryContext,
): Promise<Map<string, ResolvedVariable>> {
  const resolved = new Map<string, ResolvedVariable>();
  const variables: Record<string, VariableValue> = { ...ctx.variables };
  for (const v of model.templating?.list ?? []) {
    if (v.type !== "query" || v.multi || v.name === undefined) continue;
    const query = interpolateQuery(variableQuery(v) ?? "", { ...ctx, variables });
    const options = variableOptions(v, await run(query));
    const selected = selectedOption(v, options);
    resolved.set(v.name, { options, selected });
    if (selected !== undefined) variables[v.name] = selected;
  }
  return resolved;
}
