/**
 * What a point costs: CPU per million points of a backfill into influxd, against influxd's own CPU
 * for the same points taken directly, its wall time against that direct ingest, and the peak RSS
 * of 7- and 28-day backfills and of the demo, for each way of starting energy-etl. The API side is the simulator with its answers cached after a
 * warm-up run, so its own CPU is not counted (as against a remote API).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createFleet } from "../src/simulator/model/fleet.js";
import { startSimulator } from "../src/simulator/server.js";
import { RecordEncoder } from "../src/transform/record-encoder.js";
import { ValueIdDecoder } from "../src/transform/value-id.js";
import { influxql, type TestInfluxd } from "../test/support/influxd.js";
import {
  backfillArgs,
  type ChildRun,
  cpuMsOf,
  etlEnv,
  median,
  quietText,
  runEtl,
  type StartMode,
  stateDir,
  untilQuiet,
} from "./harness.js";

/** A result row (see run.ts). */
export interface Row {
  readonly bench: string;
  readonly measured: string;
  readonly baseline: string;
  readonly ratio: number;
  readonly goal: string;
  /** Whether the goal is met; undefined for a row without a goal (a figure for information). */
  readonly met?: boolean;
}

const DAY_S = 86_400;
const DEVICES = ["hybrid-site-01", "offgrid-genset-02", "audit-box-03"];
const log = (text: string) => process.stderr.write(`${text}\n`);

/** `backfill` of the default devices over the last whole `days` before now. */
export function backfillOver(days: number): string[] {
  const toS = Math.floor(Date.now() / 1000 / DAY_S) * DAY_S;
  return backfillArgs(DEVICES, toS - days * DAY_S, toS);
}

/** Points a backfill reported (`… N points …` in its summary). */
export const pointsOf = (run: ChildRun) => Number(/(\d+) points/.exec(run.stdout)?.[1] ?? 0);

let database = 0;

/** A backfill into a new database of `influxd`, with `extra` environment. */
export async function backfillInto(
  influxd: TestInfluxd,
  simUrl: string,
  days: number,
  start: StartMode,
  extra: Record<string, string> = {},
): Promise<ChildRun> {
  const bucket = `points${++database}`;
  await influxql(influxd.rawUrl, "", `CREATE DATABASE "${bucket}"`);
  const state = stateDir();
  try {
    const run = await runEtl(
      backfillOver(days),
      etlEnv(simUrl, { url: influxd.url, token: "test-influx-token", bucket }, state.db, {
        API_RATE_LIMIT: "1000",
        ...extra,
      }),
      { start },
    );
    if (run.code !== 0) throw new Error(`backfill failed: ${run.stderr}`);
    return run;
  } finally {
    state.done();
  }
}

/** The simulator, its answers for `days` cached by a warm-up backfill into /dev/null. */
export async function cachedSimulator(days: number) {
  const sim = await startSimulator({ seed: 1, resolutionS: 60, cacheResponses: true });
  const state = stateDir();
  try {
    const warm = await runEtl(
      [...backfillOver(days), "--output", "/dev/null"],
      etlEnv(sim.url, undefined, state.db, { API_RATE_LIMIT: "1000" }),
    );
    if (warm.code !== 0) throw new Error(`warm-up failed: ${warm.stderr}`);
  } finally {
    state.done();
  }
  return sim;
}

/** The line protocol energy-etl writes for the default devices over the last `days`, made in-process. */
function rawLines(days: number): string[] {
  const toS = Math.floor(Date.now() / 1000 / DAY_S) * DAY_S;
  const fromS = toS - days * DAY_S;
  const fleet = createFleet({ seed: 1, resolutionS: 60 });
  const lines: string[] = [];
  for (const device of DEVICES) {
    for (const resource of fleet.resourceIds(device) ?? []) {
      const ids = (fleet.valueIds(device, resource) ?? []).filter((v) => v !== "values_id").sort();
      const encoder = new RecordEncoder(new ValueIdDecoder(), device, resource);
      for (let c = 0; c < ids.length; c += 20) {
        for (let s = fromS; s <= toS; s += 7 * DAY_S + 1) {
          const to = Math.min(toS, s + 7 * DAY_S);
          encoder.encode(fleet.records(device, resource, ids.slice(c, c + 20), s, to), lines);
        }
      }
    }
  }
  return lines;
}

/** Lines POSTed straight to influxd's /write (database `db`) by `writers` concurrent writers. */
export async function postLines(
  influxd: TestInfluxd,
  db: string,
  lines: readonly string[],
  writers: number,
  batch: number,
): Promise<void> {
  let next = 0;
  const writer = async () => {
    for (let i = next; i < lines.length; i = next) {
      next += batch;
      const res = await fetch(`${influxd.rawUrl}/write?db=${db}&precision=s`, {
        method: "POST",
        body: lines.slice(i, i + batch).join("\n"),
      });
      if (res.status !== 204)
        throw new Error(`raw write failed: ${res.status} ${await res.text()}`);
    }
  };
  await Promise.all(Array.from({ length: writers }, writer));
}

/** What a direct ingest of lines into influxd took: wall seconds and influxd's own CPU. */
interface Ingest {
  readonly wallS: number;
  /** influxd's utime + stime (/proc/<pid>/stat) from the first request to the last answer. */
  readonly influxdCpuMs: number;
}

/**
 * The same lines POSTed straight to influxd's /write by `writers` concurrent writers, into a new
 * database, once influxd is quiet (else its CPU would carry the compaction of the points before).
 */
async function rawIngest(influxd: TestInfluxd, lines: readonly string[], writers: number) {
  const quiet = await untilQuiet(influxd.pid);
  if (!quiet.quiet) log(`point cost: ${quietText(quiet)} before the direct ingest`);
  const db = `raw${++database}`;
  await influxql(influxd.rawUrl, "", `CREATE DATABASE "${db}"`);
  const cpuBefore = cpuMsOf(influxd.pid);
  const started = performance.now();
  await postLines(influxd, db, lines, writers, 5000);
  const ingest: Ingest = {
    wallS: (performance.now() - started) / 1000,
    influxdCpuMs: cpuMsOf(influxd.pid) - cpuBefore,
  };
  if (ingest.influxdCpuMs <= 0) throw new Error("influxd's CPU time could not be read from /proc");
  return ingest;
}

/** One way of starting, in one round: energy-etl's backfill and the direct ingest after it. */
interface Pair {
  /** energy-etl's CPU per million points (process start included). */
  readonly etlS: number;
  /** influxd's CPU per million points, taking the same lines directly. */
  readonly influxdS: number;
  /** energy-etl's points per second, end to end, and the direct ingest's. */
  readonly ours: number;
  readonly raw: number;
}

const HOW: Record<StartMode, string> = { command: "`energy-etl`", node: "`node dist/cli.js`" };

/**
 * CPU per million points of a 14-day backfill (3 devices at 1 min) into influxd, started as the
 * command and as plain node; after each, the same lines POSTed directly to influxd (4 writers,
 * batches of 5,000) with influxd's own CPU read from /proc: energy-etl's CPU per point over
 * influxd's, and its wall time against the direct ingest's; each figure the median of `rounds`
 * rounds, each ratio taken pair by pair.
 */
export async function benchPointCost(influxd: TestInfluxd, quick: boolean): Promise<Row[]> {
  const days = quick ? 2 : 14;
  const rounds = quick ? 1 : 3;
  const sim = await cachedSimulator(days);
  const lines = rawLines(days);
  const pairs: Record<StartMode, Pair[]> = { command: [], node: [] };
  let points = 0;
  try {
    for (let round = 1; round <= rounds; round++) {
      for (const start of ["command", "node"] as const) {
        // influxd quiet, as for the direct ingest: not compacting the points before
        const quiet = await untilQuiet(influxd.pid);
        if (!quiet.quiet) log(`point cost: ${quietText(quiet)} before the backfill`);
        // the hot path alone: the rollups' own cost is the rollups benchmark's
        const run = await backfillInto(influxd, sim.url, days, start, { ROLLUPS: "false" });
        points = pointsOf(run);
        if (points !== lines.length) log(`point cost: ${points} points, ${lines.length} lines`);
        const ingest = await rawIngest(influxd, lines, 4);
        const pair: Pair = {
          etlS: (run.cpuS / points) * 1e6,
          influxdS: (ingest.influxdCpuMs / 1000 / lines.length) * 1e6,
          ours: points / (run.wallMs / 1000),
          raw: lines.length / ingest.wallS,
        };
        pairs[start].push(pair);
        log(
          `point cost: round ${round}, ${start}: ${pair.etlS.toFixed(2)} s/M, influxd ${pair.influxdS.toFixed(2)} s/M, e2e ${(pair.ours / pair.raw).toFixed(2)}`,
        );
      }
    }
  } finally {
    await sim.close();
  }
  const mPoints = (points / 1e6).toFixed(2);
  const what = `${days}-day backfill of 3 devices at 1 min into influxd (${mPoints} M points; ROLLUPS=false; median of ${rounds})`;
  return [cpuRow(what, pairs), overInfluxdRow(what, pairs), endToEndRow(what, pairs, lines.length)];
}

const fixed = (values: readonly number[]) => values.map((v) => v.toFixed(2)).join(" / ");

/** energy-etl's CPU per million points, for information (judged against influxd's: the next row). */
function cpuRow(what: string, pairs: Record<StartMode, Pair[]>): Row {
  const command = pairs.command.map((p) => p.etlS);
  const node = pairs.node.map((p) => p.etlS);
  return {
    bench: `CPU per million points, end to end: ${what}; process start included`,
    measured: `${median(command).toFixed(2)} s as ${HOW.command} (${fixed(command)})`,
    baseline: `${median(node).toFixed(2)} s as ${HOW.node} (${fixed(node)})`,
    ratio: median(command) / median(node),
    goal: "none (for information: judged against influxd's CPU, the next row)",
  };
}

/** energy-etl's CPU per point over influxd's for the same points, for each way of starting. */
function overInfluxdRow(what: string, pairs: Record<StartMode, Pair[]>): Row {
  const ratio = (start: StartMode) => median(pairs[start].map((p) => p.etlS / p.influxdS));
  const figure = (start: StartMode) => {
    const etl = median(pairs[start].map((p) => p.etlS)).toFixed(2);
    const inf = median(pairs[start].map((p) => p.influxdS)).toFixed(2);
    return `${ratio(start).toFixed(2)} as ${HOW[start]} (${etl} / ${inf} s per M points)`;
  };
  const worst = Math.max(ratio("command"), ratio("node"));
  return {
    bench: `CPU per point, energy-etl over influxd's for the same points: ${what}, against its lines POSTed to influxd /write right after by 4 writers in batches of 5,000 (influxd's utime + stime from /proc/<pid>/stat during that ingest); ratios pair by pair: ${fixed(pairs.command.map((p) => p.etlS / p.influxdS))} (${HOW.command}), ${fixed(pairs.node.map((p) => p.etlS / p.influxdS))} (${HOW.node})`,
    measured: figure("command"),
    baseline: figure("node"),
    ratio: worst,
    goal: "<= 0.80 both (ratio: the higher)",
    met: worst <= 0.8,
  };
}

/** Wall time of the backfill against the direct ingest's, for each way of starting. */
function endToEndRow(what: string, pairs: Record<StartMode, Pair[]>, lines: number): Row {
  const ratio = (start: StartMode) => median(pairs[start].map((p) => p.ours / p.raw));
  const rate = (values: readonly number[]) => `${Math.round(median(values) / 1000)} k points/s`;
  const figure = (start: StartMode) =>
    `${ratio(start).toFixed(2)} as ${HOW[start]}: ${rate(pairs[start].map((p) => p.ours))} (${fixed(pairs[start].map((p) => p.ours / p.raw))})`;
  const worst = Math.min(ratio("command"), ratio("node"));
  return {
    bench: `End to end vs direct ingest: ${what}, through the test's v2 write front, vs its ${lines} lines POSTed to influxd /write by 4 writers`,
    measured: `${figure("command")}; ${figure("node")}`,
    baseline: `${rate([...pairs.command, ...pairs.node].map((p) => p.raw))} directly`,
    ratio: worst,
    goal: ">= 0.90 both (ratio: the lower)",
    met: worst >= 0.9,
  };
}

/** Peak RSS of a 7- and a 28-day backfill for each way of starting, and of the demo. */
export async function benchMemory(influxd: TestInfluxd, quick: boolean): Promise<Row[]> {
  const [short, long] = quick ? [2, 8] : [7, 28];
  const rows: Row[] = [];
  const sim = await startSimulator({ seed: 1, resolutionS: 60 });
  try {
    for (const start of ["command", "node"] as const) {
      const a = await backfillInto(influxd, sim.url, short, start);
      const b = await backfillInto(influxd, sim.url, long, start);
      log(`memory (${start}): ${a.peakRssMb.toFixed(0)} / ${b.peakRssMb.toFixed(0)} MB`);
      const how = start === "command" ? "as the command starts" : "as node dist/cli.js";
      rows.push({
        bench: `Memory: peak RSS of a ${long}-day backfill of 3 devices at 1 min into influxd (${(pointsOf(b) / 1e6).toFixed(1)} M points), ${how}`,
        measured: `${b.peakRssMb.toFixed(0)} MB`,
        baseline: `${a.peakRssMb.toFixed(0)} MB for ${short} days (${(pointsOf(a) / 1e6).toFixed(1)} M points)`,
        ratio: b.peakRssMb / a.peakRssMb,
        goal: "<= 200 MB both (#41)",
        met: b.peakRssMb <= 200 && a.peakRssMb <= 200,
      });
    }
  } finally {
    await sim.close();
  }
  rows.push(await benchDemo());
  return rows;
}

/**
 * Peak RSS of a 28-day backfill at API_CONCURRENCY 16 against the same at 4, for each way of
 * starting: what API_ANSWER_BUDGET_MB holds flat.
 */
export async function benchMemoryConcurrency(influxd: TestInfluxd, quick: boolean): Promise<Row[]> {
  const days = quick ? 8 : 28;
  const rows: Row[] = [];
  const sim = await startSimulator({ seed: 1, resolutionS: 60 });
  try {
    for (const start of ["command", "node"] as const) {
      const [at4, at16] = [
        await backfillInto(influxd, sim.url, days, start, { API_CONCURRENCY: "4" }),
        await backfillInto(influxd, sim.url, days, start, { API_CONCURRENCY: "16" }),
      ].map((run) => run.peakRssMb);
      if (at4 === undefined || at16 === undefined) throw new Error("a backfill did not run");
      log(`memory at API_CONCURRENCY 4 / 16 (${start}): ${at4.toFixed(0)} / ${at16.toFixed(0)} MB`);
      const how = start === "command" ? "as the command starts" : "as node dist/cli.js";
      rows.push({
        bench: `Memory: peak RSS of a ${days}-day backfill of 3 devices at 1 min into influxd at API_CONCURRENCY 16 vs 4, ${how}`,
        measured: `${at16.toFixed(0)} MB at 16`,
        baseline: `${at4.toFixed(0)} MB at 4`,
        ratio: at16 / at4,
        goal: "<= 1.15 and <= 200 MB",
        met: at16 / at4 <= 1.15 && at16 <= 200 && at4 <= 200,
      });
    }
  } finally {
    await sim.close();
  }
  return rows;
}

/** `npm run demo` (node dist/cli.js demo) in a directory of its own: its peak RSS. */
async function benchDemo(): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), "bench-demo-"));
  try {
    const run = await runEtl(["demo"], { INFLUX_URL: "" }, { start: "node", cwd: dir });
    if (run.code !== 0) throw new Error(`demo failed: ${run.stderr}`);
    return {
      bench:
        "Memory: peak RSS of `npm run demo` (node dist/cli.js demo: simulator, 2-day backfill, sync)",
      measured: `${run.peakRssMb.toFixed(0)} MB`,
      baseline: "150 MB",
      ratio: run.peakRssMb / 150,
      goal: "<= 1.00",
      met: run.peakRssMb <= 150,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
