/**
 * The installed command (`energy-etl`, package.json "bin": dist/cli.js) starts node as the file's
 * first line says: `#!/usr/bin/env node`, or `#!/usr/bin/env -S node --flag…` when node takes
 * flags at start (no V8 flag is changed while the program runs). Run here as the kernel runs a
 * `#!` line: env with the rest of the line as one argument, then the script and its arguments.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname } from "node:path";
import { builtCli } from "../support/cli-child.js";

describe("dist/cli.js's first line", () => {
  const cli = builtCli();
  const line = readFileSync(cli, "utf8").split("\n")[0] ?? "";

  it("is the source's, and names node with the flags it takes at start", () => {
    expect(line).toBe(readFileSync("src/cli.ts", "utf8").split("\n")[0]);
    expect(line).toMatch(/^#!\/usr\/bin\/env (node|-S node( --[a-z-]+=\d+)+)$/);
  });

  it("starts the CLI through env with those flags, which reach node", () => {
    const [interpreter = "", rest = ""] = line.slice(2).split(/ (.*)/s);
    const flags = rest.split(" ").filter((word) => word.startsWith("--"));
    const report =
      "process.on('exit',()=>process.stderr.write('argv:'+process.execArgv.join(' ')))";
    const run = spawnSync(interpreter, [rest, cli, "--version"], {
      encoding: "utf8",
      timeout: 30_000,
      env: {
        ...process.env,
        PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}`,
        NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(report)}`,
      },
    });
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^\d+\.\d+\.\d+/);
    expect(/argv:(.*)$/.exec(run.stderr)?.[1]?.split(" ").filter(Boolean)).toEqual(flags);
  });
});
