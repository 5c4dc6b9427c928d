/**
 * What a point costs: CPU per million points of a backfill into influxd, its wall time against raw
 * ingest of the same lines, and the peak RSS of 7- and 28-day backfills and of the demo, for each
 * way of starting energy-etl. The API side is the simulator with its answers cached after a
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
  etlEnv,
  median,
  runEtl,
  type StartMode,
  stateDir,
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

/** The same lines POSTed straight to influxd's /write by `writers` concurrent writers; seconds. */
async function rawIngest(influxd: TestInfluxd, lines: readonly string[], writers: number) {
  const db = `raw${++database}`;
  await influxql(influxd.rawUrl, "", `CREATE DATABASE "${db}"`);
  const started = performance.now();
  await postLines(influxd, db, lines, writers, 5000);
  return (performance.now() - started) / 1000;
}

/**
 * CPU per million points of a 14-day backfill (3 devices at 1 minute) into influxd, started as
 * the command and as plain node, and its wall time against raw ingest with 4 writers; each
 * figure the median of `rounds` rounds run side by side.
 */
export async function benchPointCost(influxd: TestInfluxd, quick: boolean): Promise<Row[]> {
  const days = quick ? 2 : 14;
  const rounds = quick ? 1 : 3;
  const sim = await cachedSimulator(days);
  const lines = rawLines(days);
  const cpu: Record<StartMode, number[]> = { command: [], node: [] };
  const ratios: number[] = [];
  const figures: { ours: number; raw: number }[] = [];
  let points = 0;
  try {
    for (let round = 1; round <= rounds; round++) {
      for (const start of ["command", "node"] as const) {
        // the hot path alone: the rollups' own cost is the rollups benchmark's
        const run = await backfillInto(influxd, sim.url, days, start, { ROLLUPS: "false" });
        points = pointsOf(run);
        cpu[start].push((run.cpuS / points) * 1e6);
        if (start === "command") {
          const rawS = await rawIngest(influxd, lines, 4);
          const ours = points / (run.wallMs / 1000);
          const raw = lines.length / rawS;
          ratios.push(ours / raw);
          figures.push({ ours, raw });
        }
      }
      log(
        `point cost: round ${round}: ${cpu.command.at(-1)?.toFixed(2)} s/M (command), e2e ${ratios.at(-1)?.toFixed(2)}`,
      );
    }
  } finally {
    await sim.close();
  }
  const command = median(cpu.command);
  const node = median(cpu.node);
  const ratio = median(ratios);
  const mid = figures[ratios.indexOf(ratio)] ?? figures[0] ?? { ours: 0, raw: 0 };
  const mPoints = (points / 1e6).toFixed(2);
  return [
    {
      bench: `CPU per million points, end to end: ${days}-day backfill of 3 devices at 1 min into influxd (${mPoints} M points; process start included; ROLLUPS=false; median of ${rounds})`,
      measured: `${command.toFixed(2)} s as the command starts (${cpu.command.map((c) => c.toFixed(2)).join(" / ")})`,
      baseline: `${node.toFixed(2)} s as node dist/cli.js`,
      ratio: command / node,
      goal: "<= 1.6 s both",
      met: command <= 1.6 && node <= 1.6,
    },
    {
      bench: `End to end vs raw ingest: the same backfill (ROLLUPS=false) vs its lines POSTed to influxd /write by 4 writers (median of ${rounds}: ${ratios.map((r) => r.toFixed(2)).join(" / ")})`,
      measured: `${Math.round(mid.ours / 1000)} k points/s (through the test's v2 write front)`,
      baseline: `${Math.round(mid.raw / 1000)} k points/s (${lines.length} lines)`,
      ratio,
      goal: ">= 0.85",
      met: ratio >= 0.85,
    },
  ];
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
        goal: "<= 160 MB both",
        met: b.peakRssMb <= 160 && a.peakRssMb <= 160,
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
