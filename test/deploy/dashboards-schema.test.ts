/**
 * The dashboards against `@grafana/schema`'s Dashboard type, of the Grafana release that
 * docker-compose.yml runs (11.3.0): a type check of the JSON files as TypeScript reads them, by
 * `npm run typecheck` and by the test below (ts-jest compiles without checking types). Enums and
 * literal unions are loosened to string and number (test/support/grafana-schema.ts says why);
 * required fields (a variable's `current.text` and `value`) and the types of the known fields are
 * checked, and planted mismatches show that the check fails on one. Unknown extra fields are not
 * checked (TypeScript flags excess properties only in literals typed as Dashboard).
 */
import { readFileSync } from "node:fs";
import ts from "typescript";
import { loadDashboards } from "../support/dashboard-queries.js";
import {
  type Checked,
  dashboardTypeErrors,
  projectOptions,
  typeErrors,
} from "../support/grafana-schema.js";

type DeviceExplorer = Checked<
  typeof import("../../grafana/dashboards/device-explorer.json", { with: { type: "json" }})
>;
type Overview = Checked<
  typeof import("../../grafana/dashboards/overview.json", { with: { type: "json" }})
>;
type PipelineHealth = Checked<
  typeof import("../../grafana/dashboards/pipeline-health.json", { with: { type: "json" }})
>;

/** The file each checked type was read from, and its uid. */
const CHECKED: Record<string, Pick<DeviceExplorer | Overview | PipelineHealth, "uid">> = {
  "device-explorer.json": { uid: "energy-device-explorer" },
  "overview.json": { uid: "energy-overview" },
  "pipeline-health.json": { uid: "energy-pipeline-health" },
};

const THIS_FILE = "test/deploy/dashboards-schema.test.ts";

describe("Grafana dashboards against @grafana/schema (Grafana 11.3)", () => {
  it("fit the schema's Dashboard type (tsc on this file with the project's tsconfig)", () => {
    const errors = typeErrors(ts.createProgram([THIS_FILE], projectOptions()));
    expect(errors).toEqual([]);
  });

  it("type-checks every dashboard file (a new file must be added to the checked types above)", () => {
    expect(loadDashboards().map((d) => [d.file, d.model.uid])).toEqual(
      Object.entries(CHECKED).map(([file, { uid }]) => [file, uid]),
    );
  });

  describe("a planted mismatch fails the same check (in memory, nothing written)", () => {
    const overview = readFileSync("grafana/dashboards/overview.json", "utf8");
    type Model = Record<string, unknown> & {
      panels: Record<string, unknown>[];
      templating: { list: Record<string, unknown>[] };
    };
    const plant = (mutate: (d: Model) => void): string[] => {
      const model = JSON.parse(overview) as Model;
      mutate(model);
      return dashboardTypeErrors(JSON.stringify(model, null, 2));
    };

    it("the overview as it is passes", () => {
      expect(dashboardTypeErrors(overview)).toEqual([]);
    });

    it.each<[string, (d: Model) => void, string]>([
      [
        "a panel's gridPos.h as a string",
        (d) => {
          d.panels[0] = { ...d.panels[0], gridPos: { h: "8", w: 24, x: 0, y: 0 } };
        },
        "Type 'string' is not assignable to type 'number'.",
      ],
      [
        "a variable's current without its text",
        (d) => {
          d.templating.list[0] = { ...d.templating.list[0], current: { value: "influxdb" } };
        },
        "Type 'undefined' is not assignable to type 'string | string[]'.",
      ],
      [
        "the dashboard's refresh as a number",
        (d) => {
          d.refresh = 30;
        },
        "Type 'number' is not assignable to type 'string'.",
      ],
    ])("%s", (_what, mutate, error) => {
      expect(plant(mutate)).toEqual([error]);
    });
  });
});
