/**
 * A reader that closes its end early (`energy-etl status | head -1`, #35): the built CLI as a child
 * process whose stdout is closed right after its first line, as head does, each command 20
 * times. Every run exits 0 with nothing on stderr that looks like a stack trace (an unhandled
 * EPIPE printed one, once in six runs of `status | head -7`). The commands that talk to the API
 * and InfluxDB: closed-stdout-api.test.ts.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { builtCli } from "../support/cli-child.js";
import { headOne, inBatches, looksLikeStackTrace } from "../support/head-one.js";
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
  ["migrate"],
  [
    "decode",
    ...Array.from({ length: 400 }, (_, i) => `e_03_01_00_${String(i).padStart(3, "0")}_power_${i}`),
  ],
];

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
      const results = await inBatches(RUNS, PARALLEL, () => headOne(cli, args, ENV, dir));
      expect(results).toHaveLength(RUNS);
      for (const { code, stderr } of results) {
        expect({ code, stackTrace: looksLikeStackTrace(stderr) }).toEqual({
          code: 0,
          stackTrace: false,
        });
      }
    },
    60_000,
  );
});
