import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/** What a child energy-etl run took: wall time, CPU time, peak RSS, exit code, output. */
export interface ChildRun {
  readonly code: number | null;
  readonly wallMs: number;
  /** User + system CPU time of the energy-etl process (its own getrusage at exit). */
  readonly cpuS: number;
  readonly peakRssMb: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** How a child is started: as the installed command (its first line's flags) or `node dist/cli.js`. */
export type StartMode = "command" | "node";

/** Preloaded into every child: reports its CPU time and peak RSS at exit. */
const USAGE_HOOK = resolve("bench/child-usage.mjs");

export const CLI = resolve("dist/cli.js");

/**
 * The node flags of the CLI's first line (`#!/usr/bin/env -S node …`): what the installed
 * `energy-etl` command runs with, so a child started with them runs as users run it.
 */
export const CLI_NODE_FLAGS = (readFileSync(CLI, "utf8").split("\n")[0] ?? "")
  .split(/\s+/)
  .filter((word) => word.startsWith("--"));

/**
 * Resident set size of a live process in MB, its peak (VmHWM) or current (VmRSS); 0 when it
 * cannot be read.
 */
export function rssMb(pid: number, which: "VmHWM" | "VmRSS"): number {
  try {
    const m = new RegExp(`${which}:\\s+(\\d+) kB`).exec(
      readFileSync(`/proc/${pid}/status`, "utf8"),
    );
    return m?.[1] ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * Runs `energy-etl args…` in a child process, as the installed command does (with its node flags)
 * or as `node dist/cli.js`, and reads its CPU time and peak RSS at exit.
 */
export function runEtl(
  args: readonly string[],
  env: Record<string, string>,
  options: { readonly start?: StartMode; readonly cwd?: string } = {},
): Promise<ChildRun> {
  const started = performance.now();
  const flags = options.start === "node" ? [] : CLI_NODE_FLAGS;
  const child = spawn(process.execPath, [...flags, "--import", USAGE_HOOK, CLI, ...args], {
    env: { ...process.env, NODE_OPTIONS: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    cwd: options.cwd,
  });
  let stdout = "";
  let stderr = "";
  let peak = 0;
  child.stdout.on("data", (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  const timer = setInterval(() => {
    if (child.pid) peak = Math.max(peak, rssMb(child.pid, "VmHWM"));
  }, 50);
  return new Promise((resolveRun) => {
    child.on("close", (code) => {
      clearInterval(timer);
      // the last report is the child's own (a simulator it started reports first)
      const usage = [...stderr.matchAll(/__usage (\{.*\})/g)].at(-1)?.[1];
      const { cpuUs = 0, maxRssKb = peak * 1024 } = usage
        ? (JSON.parse(usage) as { cpuUs?: number; maxRssKb?: number })
        : {};
      resolveRun({
        code,
        wallMs: performance.now() - started,
        cpuS: cpuUs / 1e6,
        peakRssMb: Math.max(peak, maxRssKb / 1024),
        stdout,
        stderr,
      });
    });
  });
}

/** Environment for energy-etl against a simulator, writing to InfluxDB (or a file with output). */
export function etlEnv(
  simUrl: string,
  influx: { url: string; token: string; bucket: string } | undefined,
  stateDb: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    ENERGY_API_URL: simUrl,
    ENERGY_API_KEY: "sim-api-key",
    ENERGY_API_USER: "demo",
    ENERGY_API_PASSWORD: "demo-password",
    INFLUX_URL: influx?.url ?? "",
    INFLUX_TOKEN: influx?.token ?? "",
    INFLUX_ORG: "bench",
    INFLUX_BUCKET: influx?.bucket ?? "energy",
    STATE_DB: stateDb,
    LOG_LEVEL: "warn",
    ...extra,
  };
}

/** Median of numbers. */
/** An instant as the CLI's `--from`/`--to` take it. */
export const iso = (s: number): string => new Date(s * 1000).toISOString();

/** `backfill` arguments for `devices` over [fromS, toS], with extra flags. */
export const backfillArgs = (
  devices: readonly string[],
  fromS: number,
  toS: number,
  ...extra: string[]
): string[] => [
  "backfill",
  ...devices.flatMap((d) => ["--device", d]),
  "--from",
  iso(fromS),
  "--to",
  iso(toS),
  ...extra,
];

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** State directories not removed yet: removed when the bench exits, whatever happened. */
const stateDirs = new Set<string>();
process.on("exit", () => {
  for (const dir of stateDirs) rmSync(dir, { recursive: true, force: true });
});

/** A fresh state file in a directory of its own; `done()` removes it (else the bench's exit). */
export function stateDir(): { db: string; done: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "bench-"));
  stateDirs.add(dir);
  return {
    db: join(dir, "state.db"),
    done: () => {
      rmSync(dir, { recursive: true, force: true });
      stateDirs.delete(dir);
    },
  };
}

const CLOCK_TICKS_PER_S = 100;

/** utime + stime of a live process, in ms (0 once it is gone, or without a pid). */
export function cpuMsOf(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields[0] is field 3 (state): utime is field 14, stime field 15
    return ((Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_S) * 1000;
  } catch {
    return 0;
  }
}

/**
 * Waits until a process (influxd) is quiet: under 5 % of a core in two 2-s windows in a row, at
 * most `maxS` seconds. The previous row's points are compacted in the background on the same
 * cores, which the next row's CPU figures would otherwise carry. Says how long it waited, and
 * whether the process went quiet (false once `maxS` passed, or the process is gone).
 */
export async function untilQuiet(
  pid: number | undefined,
  maxS = 180,
): Promise<{ waitedS: number; quiet: boolean }> {
  const started = performance.now();
  let quietWindows = 0;
  for (;;) {
    const waitedS = (performance.now() - started) / 1000;
    if (pid === undefined || !existsSync(`/proc/${pid}`)) return { waitedS, quiet: false };
    if (quietWindows === 2) return { waitedS, quiet: true };
    if (waitedS >= maxS) return { waitedS, quiet: false };
    const before = cpuMsOf(pid);
    await sleep(2000);
    quietWindows = cpuMsOf(pid) - before < 100 ? quietWindows + 1 : 0;
  }
}

/** How {@link untilQuiet} went, for a log line. */
export const quietText = ({ waitedS, quiet }: { waitedS: number; quiet: boolean }): string =>
  quiet
    ? `influxd quiet after ${waitedS.toFixed(0)} s`
    : `influxd NOT quiet after ${waitedS.toFixed(0)} s`;
