/**
 * The built CLI on a real pseudo-terminal (util-linux `script -qec … /dev/null`), as an operator
 * sees it (#35): a terminal that reports 0 columns (what `script` gives when it has no terminal
 * of its own) gets tables 80 columns wide, not squashed; a backfill's progress bar on an
 * 80-column terminal keeps every frame within 80 columns with the rate and the ETA in it.
 * `script` is in Debian's bsdutils (.ci/run installs it when missing); without it these tests
 * fail, saying so, never skip.
 */
import { spawn, spawnSync } from "node:child_process";
import { join } from "node:path";
import type { Simulator } from "../../src/simulator/server.js";
import { builtCli } from "../support/cli-child.js";
import { NO_ENV_DIR } from "../support/cli-io.js";
import { startTestSimulator } from "../support/simulator.js";
import { tempDir } from "../support/temp-dir.js";

const CSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;?]*[A-Za-z]`, "g");
const columnsOf = (line: string) => [...line].length;

/** `node dist/cli.js …args` on a pty whose `stty` settings are `stty`; its output, CRs dropped. */
function onPty(
  stty: string,
  args: readonly string[],
  env: Record<string, string>,
): Promise<{ code: number | null; out: string }> {
  const quoted = [process.execPath, builtCli(), ...args].map(
    (a) => `'${a.replace(/'/g, "'\\''")}'`,
  );
  const command = `stty ${stty}; stty size; exec ${quoted.join(" ")}`;
  return new Promise((resolve, reject) => {
    const child = spawn("script", ["-qec", command, "/dev/null"], {
      cwd: NO_ENV_DIR,
      env: { ...process.env, NO_COLOR: "1", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString("utf8");
    });
    child.stderr.on("data", (d: Buffer) => {
      out += d.toString("utf8");
    });
    const bound = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("error", (error) =>
      reject(new Error(`util-linux script(1) is needed for a pseudo-terminal: ${error.message}`)),
    );
    child.on("close", (code) => {
      clearTimeout(bound);
      resolve({ code, out });
    });
  });
}

describe("on a pseudo-terminal", () => {
  beforeAll(() => {
    const found = spawnSync("script", ["--version"], { encoding: "utf8" });
    if (found.error) {
      throw new Error(
        `util-linux script(1) is needed (Debian: apt-get install bsdutils): ${found.error.message}`,
      );
    }
  });

  it("a terminal of 0 columns (unknown) gets tables 80 columns wide, the same as 80 columns", async () => {
    // ids that fill 80 columns: squashed to the narrowest (what 0 columns did), they wrap more
    const ids = ["e_01_02_00_002_voltage_l1", "e_03_01_00_001_power_total"];
    const shown = async (stty: string) => {
      const { code, out } = await onPty(`${stty} rows 40`, ["decode", ...ids], {});
      const [size, ...lines] = out.replace(/\r/g, "").split("\n");
      return { code, size, lines };
    };
    const [zero, eighty, narrow] = [
      await shown("cols 0"),
      await shown("cols 80"),
      await shown("cols 40"),
    ];
    expect([zero.code, eighty.code, narrow.code]).toEqual([0, 0, 0]);
    // the pty really said 0 columns
    expect(zero.size).toBe("40 0");
    const table = zero.lines.filter((line) => /^[┌│├└]/.test(line));
    expect(table.length).toBeGreaterThan(5);
    expect(new Set(table.map(columnsOf))).toEqual(new Set([80]));
    expect(zero.lines).toContain(
      "│ id            │ measurement │ field          │ unit │ type       │ values id │",
    );
    expect(zero.lines).toEqual(eighty.lines);
    expect(narrow.lines).not.toEqual(zero.lines);
  });

  describe("a backfill against the simulator", () => {
    let sim: Simulator;
    beforeAll(async () => {
      sim = await startTestSimulator({ resolutionS: 900 });
    });
    afterAll(() => sim.close());

    it("draws its progress bar within 80 columns, the rate and the ETA first", async () => {
      const dir = tempDir("energy-etl-pty-");
      const { code, out } = await onPty(
        "cols 80 rows 40",
        ["backfill", "--all", "--from", "-10d", "-o", join(dir, "out.lp")],
        {
          ENERGY_API_URL: sim.url,
          ENERGY_API_KEY: sim.apiKey,
          ENERGY_API_USER: "demo",
          ENERGY_API_PASSWORD: "demo-password",
          STATE_DB: join(dir, "state.db"),
          API_RATE_LIMIT: "20",
          LOG_LEVEL: "warn",
        },
      );
      expect(code).toBe(0);
      // each frame of the bar starts at column 1 (CSI 1G); what it shows up to a line break
      const frames = out
        .split("\u001b[1G")
        .slice(1)
        .map((frame) => frame.replace(CSI, "").split(/[\r\n]/)[0] ?? "");
      const bars = frames.filter((frame) => frame.startsWith("backfill "));
      expect(bars.length).toBeGreaterThan(3);
      expect(bars.filter((bar) => columnsOf(bar) > 80)).toEqual([]);
      // once a chunk is done: the rate and a known ETA lead the line
      const known = bars.filter((bar) =>
        /^backfill \d+\.\d req\/s \| ETA \d+(s|m\d\ds|h\d\dm) [=-]+ \d+% \d+\/\d+ \| \S+ pts$/.test(
          bar,
        ),
      );
      expect(known.length).toBeGreaterThan(0);
      expect(out).toMatch(/backfill: \d+\/\d+ jobs done/);
    });
  });
});
