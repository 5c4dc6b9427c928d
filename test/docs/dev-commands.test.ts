/**
 * docs/development.md's commands for running one test file (#42) run as given: `npm test -- FILE`
 * and the direct `node --experimental-vm-modules …` command run that file and only it, and
 * `npx jest FILE` fails with the ESM error the page names. Each runs a nested jest on a small
 * file of pure functions (its global setup starts an influxd of its own, and stops it).
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";

const PAGE = readFileSync("docs/development.md", "utf8");

interface Ran {
  readonly code: number;
  readonly output: string;
}

/** `command args` in the repository, with its exit code and stdout + stderr. */
function run(command: string, args: readonly string[]): Promise<Ran> {
  return new Promise((done) => {
    execFile(
      command,
      [...args],
      { timeout: 120_000, env: { ...process.env, FORCE_COLOR: "0", CI: "1" } },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
        done({ code, output: `${stdout}${stderr}` });
      },
    );
  });
}

/** The page's `npm test -- FILE` line (in its command block) and its direct jest command. */
const npmLine = /^npm test -- (\S+)/m.exec(PAGE);
const nodeLine = /`node --experimental-vm-modules node_modules\/jest\/bin\/jest\.js (\S+)`/.exec(
  PAGE,
);

/** The file a command names; throws when the page gives none (an empty one would run them all). */
function fileOf(line: RegExpExecArray | null): string {
  const file = line?.[1];
  if (file === undefined || !/^test\/[\w/.-]+\.test\.ts$/.test(file)) {
    throw new Error("docs/development.md gives no command for one test file");
  }
  return file;
}

describe("docs/development.md: one test file", () => {
  it("gives both commands", () => {
    expect(npmLine?.[1]).toMatch(/\.test\.ts$/);
    expect(nodeLine?.[1]).toMatch(/\.test\.ts$/);
  });

  it("npm test -- FILE runs that file only (its build left out here: --ignore-scripts)", async () => {
    const file = fileOf(npmLine);
    const listed = await run("npm", ["test", "--ignore-scripts", "--", file, "--listTests"]);
    expect(listed.code).toBe(0);
    expect(listed.output.split("\n").filter((l) => l.endsWith(".test.ts"))).toEqual([
      resolve(file),
    ]);
    const ran = await run("npm", ["test", "--ignore-scripts", "--", file]);
    expect(ran.output).toMatch(/Test Suites: 1 passed, 1 total/);
    expect(ran.code).toBe(0);
  });

  it("the direct command runs that file", async () => {
    const file = fileOf(nodeLine);
    const ran = await run("node", [
      "--experimental-vm-modules",
      "node_modules/jest/bin/jest.js",
      file,
    ]);
    expect(ran.output).toMatch(/Test Suites: 1 passed, 1 total/);
    expect(ran.code).toBe(0);
  });

  it("npx jest FILE fails with the error the page names", async () => {
    expect(PAGE.replace(/\s+/g, " ")).toContain('"Cannot use import statement outside a module"');
    const ran = await run("npx", ["jest", fileOf(nodeLine)]);
    expect(ran.output).toContain("Cannot use import statement outside a module");
    expect(ran.code).not.toBe(0);
  });
});
