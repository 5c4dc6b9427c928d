/**
 * The dashboards against `@grafana/schema`'s Dashboard type, of the Grafana release that
 * docker-compose.yml runs (11.3.0): a type check of the JSON files as TypeScript reads them, by
 * `npm run typecheck` and by the test below (ts-jest compiles without checking types). JSON gives `string` and `number` where the schema has
 * enums and literal unions (a panel `type`, a mapping `type`), so those are loosened; the rest is
 * checked: required fields (a variable's `current.text` and `value`) and the types of the known
 * fields. Unknown extra fields are not (TypeScript flags excess properties only in literals).
 */
import type { Dashboard } from "@grafana/schema";
import ts from "typescript";
import { loadDashboards } from "../support/dashboard-queries.js";

/** T with every string or number type (enums, literal unions) widened to string or number. */
type Loose<T> = T extends string
  ? string
  : T extends number
    ? number
    : T extends boolean
      ? boolean
      : T extends readonly (infer E)[]
        ? Loose<E>[]
        : T extends object
          ? { [K in keyof T]: Loose<T[K]> }
          : T;

/** Compiles only when D fits the schema's Dashboard. */
type Checked<D extends Loose<Dashboard>> = D;

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
    const config = ts.getParsedCommandLineOfConfigFile("tsconfig.json", undefined, {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
      },
    });
    const program = ts.createProgram([THIS_FILE], { ...config?.options, noEmit: true });
    const errors = ts
      .getPreEmitDiagnostics(program)
      .map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n").split("\n").at(-1)?.trim());
    expect(errors).toEqual([]);
  });

  it("type-checks every dashboard file (a new file must be added to the checked types above)", () => {
    expect(loadDashboards().map((d) => [d.file, d.model.uid])).toEqual(
      Object.entries(CHECKED).map(([file, { uid }]) => [file, uid]),
    );
  });
});
