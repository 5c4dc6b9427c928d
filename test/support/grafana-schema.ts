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
export type Loose<T> = T extends string
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

/** The project's compiler options (tsconfig.json), without emitting. */
export function projectOptions(): ts.CompilerOptions {
  const config = ts.getParsedCommandLineOfConfigFile("tsconfig.json", undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    },
  });
  return { ...config?.options, noEmit: true };
}

/** The last line of each diagnostic of a program over `files`. */
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
  const options = projectOptions();
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (name) => name === file || fileExists.call(host, name);
  host.readFile = (name) => (name === file ? text : readFile.call(host, name));
  host.getSourceFile = (name, language, ...rest) =>
    name === file
      ? ts.createSourceFile(name, text, language)
      : getSourceFile.call(host, name, language, ...rest);
  return typeErrors(ts.createProgram([file], options, host));
}
