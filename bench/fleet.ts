/**
 * Fleet benchmarks: the built CLI's `run` (the service as users run it) against the simulator's
 * generated fleet, measured tick by tick from the outside — requests by the simulator's log, CPU
 * time and RSS of the child from /proc, each tick's end from its "sync finished" log line.
 */
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { valueGroups } from "../src/pipeline/plan-chunks.js";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { CLI, CLI_NODE_FLAGS, cpuMsOf, rssMb } from "./harness.js";

/** What one tick of `run` cost. */
export interface Tick {
  /** Wall time of the tick as the service logged it. */
  readonly ms: number;
  /** Requests the simulator answered since the previous tick ended, by endpoint. */
  readonly requests: Readonly<Record<string, number>>;
  /** CPU time of the energy-etl process since the previous tick ended. */
  readonly cpuMs: number;
  /** Resident set size at the end of the tick. */
  readonly rssMb: number;
}

export interface FleetRun {
  readonly ticks: readonly Tick[];
  readonly stderrTail: string;
}

/** Total of a tick's requests. */
export const total = (counts: Readonly<Record<string, number>>) =>
  Object.values(counts).reduce((a, b) => a + b, 0);

/** The data minimum of the fleet as the simulator lists it at `atS`. */
export function dataMinimum(sim: Simulator, atS: number): number {
  let sum = 0;
  for (const device of sim.fleet.deviceIds()) {
    for (const resource of sim.fleet.resourceIds(device, atS) ?? []) {
      sum += valueGroups(sim.fleet.valueIds(device, resource, atS) ?? []).length;
    }
  }
  return sum;
}

/** Preloaded into the child: node-cron ticks every second (SYNC_CRON takes once a minute at most). */
const EVERY_SECOND = resolve("bench/ticks-every-second.mjs");

/**
 * Runs `energy-etl run` with a cron of every second (a tick starts as soon as the previous one
 * ended) until `ticks` ticks have finished, then stops it with SIGTERM.
 */
export function runTicks(
  sim: Simulator,
  env: Record<string, string>,
  ticks: number,
): Promise<FleetRun> {
  const child = spawn(process.execPath, [...CLI_NODE_FLAGS, "--import", EVERY_SECOND, CLI, "run"], {
    env: { ...process.env, ...env, HTTP_PORT: "0", LOG_LEVEL: "info" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const pid = child.pid ?? 0;
  const out: Tick[] = [];
  // requests before this process started are not its own
  let seen = sim.requests.length;
  let cpuBefore = 0;
  let tail: string[] = [];
  const lines = createInterface({ input: child.stderr });
  return new Promise((resolve, reject) => {
    lines.on("line", (line) => {
      tail = [...tail.slice(-20), line];
      // a tick that began as the process was told to stop is not one of the ticks asked for
      if (out.length >= ticks || !line.includes('"sync finished"')) return;
      const event = JSON.parse(line) as { ms?: number; status?: string };
      const cpu = cpuMsOf(pid);
      const requests: Record<string, number> = {};
      for (const r of sim.requests.slice(seen)) {
        requests[r.endpoint] = (requests[r.endpoint] ?? 0) + 1;
      }
      seen = sim.requests.length;
      out.push({
        ms: event.ms ?? 0,
        requests,
        cpuMs: cpu - cpuBefore,
        rssMb: rssMb(pid, "VmRSS"),
      });
      cpuBefore = cpu;
      if (event.status !== "ok") {
        child.kill("SIGTERM");
        reject(new Error(`tick ${out.length} ended ${event.status}: ${tail.join("\n")}`));
      } else if (out.length === ticks) child.kill("SIGTERM");
    });
    child.on("exit", (code) => {
      if (out.length < ticks) {
        reject(new Error(`run exited ${code} after ${out.length} ticks: ${tail.join("\n")}`));
      } else resolve({ ticks: out, stderrTail: tail.join("\n") });
    });
  });
}

/** Simulated time between two ticks of the default SYNC_CRON (every 5 minutes). */
export const SCHEDULE_STEP_MS = 5 * 60_000;

/** A fleet simulator whose clock moves one step per tick of `run`. */
export interface FleetSimulator {
  readonly sim: Simulator;
  /** Data requests of every tick: one per value group of every resource (the data minimum). */
  readonly perTick: number;
}

/**
 * A simulator of `devices` devices reporting every 5 minutes (no value appearing later) whose
 * clock stands at `startMs` during the first tick and moves `stepMs` per tick: every tick reads
 * the same stretch of simulated time, however many devices there are (with a clock in real
 * time, a tick of 10,000 devices, ten times as long as one of 1,000, read ten times as much).
 *
 * A tick is counted by the data requests the simulator answered: every tick makes exactly
 * `perTick` of them (the caller checks it) and starts after the previous one ended, so a request
 * of tick k finds between k and k + 1 ticks' worth logged before it (the log is unbounded here:
 * it is read by index). The Date header of a tick's last answer, made after that answer is
 * logged, already shows the next tick's time, which is the time the next tick plans with.
 */
export async function startFleetSimulator(
  devices: number,
  startMs: number,
  stepMs: number,
): Promise<FleetSimulator> {
  let sim: Simulator | undefined;
  let perTick = 0;
  let counted = 0;
  let dataAnswered = 0;
  const now = () => {
    const log = sim?.requests ?? [];
    for (; counted < log.length; counted++) if (log[counted]?.endpoint === "data") dataAnswered++;
    return startMs + (perTick > 0 ? Math.floor(dataAnswered / perTick) : 0) * stepMs;
  };
  const startS = Math.floor(startMs / 1000);
  sim = await startSimulator({
    now,
    devices,
    newValueShare: 0,
    resolutionS: 300,
  });
  perTick = dataMinimum(sim, startS);
  return { sim, perTick };
}

/**
 * Wall time from spawning `energy-etl simulate --devices N` to its GET /devices answer, and how
 * many ids that answer listed.
 */
export async function simulatorStart(devices: number): Promise<{ ms: number; ids: number }> {
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [CLI, "simulate", "--port", "0", "--devices", String(devices)],
    {
      stdio: ["ignore", "pipe", "ignore"],
    },
  );
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const lines = createInterface({ input: child.stdout });
      lines.on("line", (line) => {
        const m = /listening on (\S+)/.exec(line);
        if (m?.[1]) resolve(m[1]);
      });
      child.on("exit", (code) => reject(new Error(`simulate exited ${code}`)));
    });
    const created = await fetch(`${url}/create_token`, {
      method: "POST",
      headers: {
        "x-api-key": "sim-api-key",
        authorization: `Basic ${Buffer.from("demo:demo-password").toString("base64")}`,
      },
    });
    const { token } = (await created.json()) as { token: string };
    const listed = await fetch(`${url}/devices`, { headers: { authorization: `Bearer ${token}` } });
    const { device_ids } = (await listed.json()) as { device_ids: string[] };
    return { ms: performance.now() - started, ids: device_ids.length };
  } finally {
    child.kill("SIGTERM");
  }
}
