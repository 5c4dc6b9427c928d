/**
 * Dashboards against `@grafana/schema`'s Dashboard type, as TypeScript reads JSON: a file's type
 * has `string` and `number` where the schema has enums and literal unions (a panel `type`, a
 * mapping `type`), so those are loosened; everything else is checked (required fields, the types
 * of the known fields). `dashboardTypeErrors` compiles dashboards given as text, in memory.
 */
import { resolve } from "node:path";
import type { Dashboard } from "@grafana/schema";
import ts from "typescript";

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
export type Checked<D extends Loose<Dashboard>> = D;

let options: ts.CompilerOptions | undefined;

/** The project's compiler options (tsconfig.json, read once), without emitting. */
export function projectOptions(): ts.CompilerOptions {
  if (options) return options;
  const config = ts.getParsedCommandLineOfConfigFile("tsconfig.json", undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    },
  });
  options = { ...config?.options, noEmit: true };
  return options;
}

/** The files every planted dashboard's program reads (libs, @types, the schema), parsed once. */
const parsed = new Map<string, ts.SourceFile>();

/** The last line of each diagnostic of `program`. */
export function typeErrors(program: ts.Program): string[] {
  return ts
    .getPreEmitDiagnostics(program)
    .map(
      (d) => ts.flattenDiagnosticMessageText(d.messageText, "\n").split("\n").at(-1)?.trim() ?? "",
    );
}

/**
 * The type errors of `dashboard` (a dashboard's JSON text) checked as the provisioned files are:
 * its object literal's type, as a JSON import would give it, against Checked. Nothing is written.
 */
export function dashboardTypeErrors(dashboard: string): string[] {
  const file = resolve("test/support/planted-dashboard.ts");
  const text = [
    'import type { Checked } from "./grafana-schema.js";',
    `const dashboard = ${dashboard};`,
    "export type Planted = Checked<typeof dashboard>;",
    "",
  ].join("\n");
  const compilerOptions = projectOptions();
  const host = ts.createCompilerHost(compilerOptions);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (name) => name === file || fileExists.call(host, name);
  host.readFile = (name) => (name === file ? text : readFile.call(host, name));
  host.getSourceFile = (name, language, ...rest) => {
    if (name === file) return ts.createSourceFile(name, text, language);
    const known = parsed.get(name);
    if (known) return known;
    const source = getSourceFile.call(host, name, language, ...rest);
    if (source) parsed.set(name, source);
    return source;
  };
  return typeErrors(ts.createProgram([file], compilerOptions, host));
}
