import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";

/** What a child energy-etl run took: wall time, peak RSS, exit code, output. */
export interface ChildRun {
  readonly code: number | null;
  readonly wallMs: number;
  readonly peakRssMb: number;
  readonly stdout: string;
  readonly stderr: string;
}

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
 * Runs `energy-etl args…` as the installed command does (with its node flags) in a child
 * process, sampling its peak RSS until it exits.
 */
export function runEtl(args: readonly string[], env: Record<string, string>): Promise<ChildRun> {
  const started = performance.now();
  const child = spawn(process.execPath, [...CLI_NODE_FLAGS, CLI, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
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
    child.on("exit", (code) => {
      clearInterval(timer);
      resolveRun({ code, wallMs: performance.now() - started, peakRssMb: peak, stdout, stderr });
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
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}
