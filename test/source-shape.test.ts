/**
 * The shape of src/, read with the TypeScript compiler API (nothing is compiled or run): no file
 * over 400 lines, no function over 80 lines, and the simulator's boundary (docs/simulator.md):
 * src/simulator imports, of the project's own code, only the API's vocabulary (the files of
 * SIMULATOR_MAY_IMPORT) and src/util; of the rest of src/, only the `simulate` command imports the
 * simulator (the demo starts it as a process). Packages (`node:http`, `zod`) are not the project's code and are not
 * checked. Each failure names the file (and the function with its first line).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const MAX_FILE_LINES = 400;
const MAX_FUNCTION_LINES = 80;
const SIMULATOR = "src/simulator/";
/** The project's files the simulator may import: the API's vocabulary, and src/util/. */
const SIMULATOR_MAY_IMPORT: readonly string[] = [
  "src/api/limits.ts",
  "src/api/schemas.ts",
  "src/api/time-format.ts",
  // spec 2.4's records (their members, timestamp and schema), shared by the client and the transformer
  "src/records/data-record.ts",
  // spec 2.3's value ids of every device: the ETL needs them too, so they cannot live in the simulator
  "src/api/common-values.ts",
];
const SIMULATOR_MAY_IMPORT_UNDER = "src/util/";
/** The files outside src/simulator that may import it: the command that starts it (the demo runs that command). */
const MAY_IMPORT_SIMULATOR: readonly string[] = ["src/cli/commands/simulate.ts"];

/** A TypeScript file: its path from the repository root (with `/`), its text and its syntax tree. */
interface Source {
  readonly path: string;
  readonly text: string;
  readonly tree: ts.SourceFile;
}

function parse(path: string, text: string): Source {
  return { path, text, tree: ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true) };
}

/** Every .ts file below `dir` (a path from the repository root), parsed. */
function sourcesUnder(dir: string): Source[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".ts"))
    .map((name) => posix.join(dir, name.split("\\").join("/")))
    .sort()
    .map((path) => parse(path, readFileSync(join(ROOT, path), "utf8")));
}

/** Lines of a text as `wc -l` counts them (a last line without a newline counts too). */
function lineCount(text: string): number {
  if (text === "") return 0;
  return text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
}

/** The name a function is known by: its own, or that of the variable or property it is assigned to. */
function nameOf(node: ts.SignatureDeclaration): string {
  const own = node.name ?? (ts.isConstructorDeclaration(node) ? "constructor" : undefined);
  const parent = node.parent;
  const named =
    own ??
    ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) &&
    parent.initializer === node
      ? parent.name
      : undefined);
  if (named === undefined) return "(anonymous)";
  const text = typeof named === "string" ? named : named.getText();
  const owner = ts.isClassLike(parent) && parent.name ? `${parent.name.text}.` : "";
  return `${owner}${text}`;
}

/** Functions with a body (declarations, methods, accessors, arrows, expressions) over `max` lines. */
function longFunctions(source: Source, max: number): string[] {
  const found: string[] = [];
  const lineOf = (pos: number): number => source.tree.getLineAndCharacterOfPosition(pos).line;
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body !== undefined) {
      const first = lineOf(node.getStart());
      const lines = lineOf(node.getEnd()) - first + 1;
      if (lines > max) found.push(`${source.path}:${first + 1} ${nameOf(node)} (${lines} lines)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source.tree);
  return found;
}

/** Module specifiers of every import, re-export, `import x = require()` and `import()` call. */
function specifiersOf(source: Source): string[] {
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier !== undefined &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push(node.moduleSpecifier.text);
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteral(node.moduleReference.expression)
    ) {
      found.push(node.moduleReference.expression.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      found.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source.tree);
  return found;
}

/** The project files a source imports (relative specifiers, `.js` read as `.ts`); packages left out. */
function projectImports(source: Source): string[] {
  return specifiersOf(source)
    .filter((specifier) => specifier.startsWith("."))
    .map((specifier) =>
      posix.normalize(posix.join(posix.dirname(source.path), specifier)).replace(/\.js$/, ".ts"),
    );
}

/** Imports that break the simulator's boundary, as `importer -> imported`. */
function boundaryBreaks(sources: readonly Source[]): { out: string[]; into: string[] } {
  const out: string[] = [];
  const into: string[] = [];
  for (const source of sources) {
    const inside = source.path.startsWith(SIMULATOR);
    for (const target of projectImports(source)) {
      const targetInside = target.startsWith(SIMULATOR);
      if (
        inside &&
        !targetInside &&
        !SIMULATOR_MAY_IMPORT.includes(target) &&
        !target.startsWith(SIMULATOR_MAY_IMPORT_UNDER)
      ) {
        out.push(`${source.path} -> ${target}`);
      }
      if (!inside && targetInside && !MAY_IMPORT_SIMULATOR.includes(source.path)) {
        into.push(`${source.path} -> ${target}`);
      }
    }
  }
  return { out, into };
}

const SRC = sourcesUnder("src");

describe("the shape of src/", () => {
  it("reads every TypeScript file of src/", () => {
    const paths = SRC.map((s) => s.path);
    expect(paths).toEqual(expect.arrayContaining(["src/cli.ts", "src/simulator/server.ts"]));
    expect(paths.length).toBeGreaterThan(100);
  });

  it(`has no file over ${MAX_FILE_LINES} lines`, () => {
    const over = SRC.filter((s) => lineCount(s.text) > MAX_FILE_LINES).map(
      (s) => `${s.path} (${lineCount(s.text)} lines)`,
    );
    expect(over).toEqual([]);
  });

  it(`has no function over ${MAX_FUNCTION_LINES} lines`, () => {
    expect(SRC.flatMap((s) => longFunctions(s, MAX_FUNCTION_LINES))).toEqual([]);
  });

  it("src/simulator imports only the API's vocabulary and src/util", () => {
    expect(boundaryBreaks(SRC).out).toEqual([]);
  });

  it("only the simulate command imports src/simulator", () => {
    expect(boundaryBreaks(SRC).into).toEqual([]);
  });
});

describe("the checks of the shape", () => {
  const body = (lines: number): string =>
    Array.from({ length: lines - 2 }, () => "  x++;").join("\n");

  it("count lines as wc -l does", () => {
    expect([lineCount(""), lineCount("a"), lineCount("a\n"), lineCount("a\nb\n")]).toEqual([
      0, 1, 1, 2,
    ]);
  });

  it("name each kind of long function, and only those over the limit", () => {
    const text = [
      `function fine() {\n${body(80)}\n}`,
      `function declared() {\n${body(81)}\n}`,
      `const arrow = () => {\n${body(81)}\n};`,
      `const table = { expressed: function () {\n${body(81)}\n} };`,
      `class Owner {\n  method() {\n${body(81)}\n  }\n}`,
      `run(() => {\n${body(81)}\n});`,
    ].join("\n");
    const found = longFunctions(parse("src/x.ts", text), 80).map((f) => f.replace(/:\d+/, ""));
    expect(found).toEqual([
      "src/x.ts declared (81 lines)",
      "src/x.ts arrow (81 lines)",
      "src/x.ts expressed (81 lines)",
      "src/x.ts Owner.method (81 lines)",
      "src/x.ts (anonymous) (81 lines)",
    ]);
  });

  it("see every kind of import, and judge the boundary both ways", () => {
    const sim = parse(
      "src/simulator/model/a.ts",
      [
        'import { z } from "zod";',
        'import type { A } from "../../api/schemas.js";',
        'import { B } from "../../util/timers.js";',
        'import { C } from "./b.js";',
        'export * from "../../pipeline/sync.js";',
        'const d = await import("../../transform/screen.js");',
        'import e = require("../../api/client.js");',
      ].join("\n"),
    );
    const cli = parse(
      "src/cli/commands/doctor.ts",
      'import { S } from "../../simulator/server.js";',
    );
    const simulate = parse(
      "src/cli/commands/simulate.ts",
      'import { S } from "../../simulator/server.js";',
    );
    expect(boundaryBreaks([sim, cli, simulate])).toEqual({
      out: [
        "src/simulator/model/a.ts -> src/pipeline/sync.ts",
        "src/simulator/model/a.ts -> src/transform/screen.ts",
        "src/simulator/model/a.ts -> src/api/client.ts",
      ],
      into: ["src/cli/commands/doctor.ts -> src/simulator/server.ts"],
    });
  });
});
