/**
 * docs/dashboards.md lists what Grafana shows: every panel of a dashboard (rows too), as
 * `*title*` in the dashboard's section (the `## … (`uid`)` heading up to the next `## `), and
 * every alert rule of grafana/provisioning/alerting, its uid and its title, in *Alert rules*.
 */
import { readFileSync } from "node:fs";
import { loadAlertRules } from "../deploy/alert-rules.js";
import { allPanels, loadDashboards } from "../support/dashboard-queries.js";

const DOC = "docs/dashboards.md";

/** The dashboards, each of whose panels the page names. */
const LISTED = ["device-explorer.json", "overview.json", "pipeline-health.json"];

const doc = readFileSync(DOC, "utf8");
const dashboards = loadDashboards();

/** The text of the `## ` section whose heading contains `marker`, up to the next `## `. */
function section(marker: string): string {
  const lines = doc.split("\n");
  const start = lines.findIndex((l) => l.startsWith("## ") && l.includes(marker));
  if (start < 0) throw new Error(`${DOC}: no section with ${marker}`);
  const end = lines.findIndex((l, i) => i > start && l.startsWith("## "));
  return lines.slice(start, end < 0 ? undefined : end).join("\n");
}

describe(`${DOC} names each panel and alert rule`, () => {
  it("lists every dashboard file panel by panel", () => {
    expect(dashboards.map((d) => d.file).sort()).toEqual(LISTED);
  });

  it.each(LISTED)("%s: every panel's title, as *title*, in its section", (file) => {
    const dashboard = dashboards.find((d) => d.file === file);
    if (dashboard === undefined) throw new Error(`no dashboard ${file}`);
    const text = section(`(\`${dashboard.model.uid}\`)`);
    const titles = allPanels(dashboard.model).map((p) => p.title ?? "");
    expect(titles.length).toBeGreaterThan(0);
    expect(titles.filter((t) => !text.includes(`*${t}*`))).toEqual([]);
  });

  it("every alert rule's uid and title in *Alert rules*", () => {
    const text = section("Alert rules");
    const rules = loadAlertRules();
    expect(rules.length).toBe(11);
    const missing = rules.filter((r) => !text.includes(`\`${r.uid}\``) || !text.includes(r.title));
    expect(missing.map((r) => r.uid)).toEqual([]);
  });
});
