/**
 * A reader that closes its end early (`energy-etl status | head -1`, #35): the built CLI as a child
 * process whose stdout is closed right after its first line, as head does, each command 20
 * times. Every run exits 0 with nothing on stderr that looks like a stack trace (an unhandled
 * EPIPE printed one, once in six runs of `status | head -7`).
 */
import { spawn, spawnSync } from "node:child_process";
import { join } from "node:path";
import { builtCli } from "../support/cli-child.js";
import { tempDir } from "../support/temp-dir.js";

const RUNS = 20;
const PARALLEL = 8;
const dir = tempDir("energy-etl-closed-stdout-");
const ENV = {
  ...process.env,
  STATE_DB: join(dir, "state.db"),
  OUTPUT_FILE: join(dir, "out.lp"),
  LOG_FORMAT: "json",
};
/** Commands that print more than a line without the API (offline), by their arguments. */
const COMMANDS: readonly (readonly string[])[] = [
  ["--help"],
  ["backfill", "--help"],
  ["config"],
  ["config", "--schema"],
  ["config", "--json"],
  ["status"],
  ["status", "--json"],
  ["dead-letters"],
  [
    "decode",
    ...Array.from({ length: 400 }, (_, i) => `e_03_01_00_${String(i).padStart(3, "0")}_power_${i}`),
  ],
];

/** One run: stdout closed after its first line; the exit code and stderr. */
function headOne(
  cli: string,
  args: readonly string[],
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], {
      env: ENV,
      cwd: dir,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    let seen = "";
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    child.stdout.on("data", (d: Buffer) => {
      seen += d.toString();
      if (seen.includes("\n")) child.stdout.destroy();
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stderr }));
  });
}

describe("stdout closed after the first line (| head -1)", () => {
  beforeAll(() => {
    // status and dead-letters read a state database: an empty one
    const made = spawnSync(process.execPath, [builtCli(), "migrate"], { env: ENV, cwd: dir });
    expect(made.status).toBe(0);
  });

  it.each(COMMANDS.map((args) => [args.slice(0, 2).join(" "), args] as const))(
    "%s: exits 0 with no stack trace, %# of 20 runs each",
    async (_name, args) => {
      const cli = builtCli();
      const results: { code: number | null; stderr: string }[] = [];
      for (let start = 0; start < RUNS; start += PARALLEL) {
        const batch = Array.from({ length: Math.min(PARALLEL, RUNS - start) }, () =>
          headOne(cli, args),
        );
        results.push(...(await Promise.all(batch)));
      }
      expect(results).toHaveLength(RUNS);
      for (const { code, stderr } of results) {
        expect({ code, stackTrace: /\n\s+at |EPIPE|Unhandled/.test(stderr) }).toEqual({
          code: 0,
          stackTrace: false,
        });
      }
    },
    60_000,
  );
});
