/**
 * `backfill --dry-run`'s estimate against the backfill it plans, on the simulator with 200 ms
 * latency (issues #35, #42): within 30 %.
 */
import { z } from "zod";
import { startSimulator } from "../src/simulator/server.js";
import { backfillArgs, etlEnv, runEtl, stateDir } from "./harness.js";
import type { Row } from "./points.js";

const DAY_S = 86_400;
const NOW_S = Math.floor(Date.UTC(2026, 5, 15) / 1000);
const DEVICES = ["hybrid-site-01", "offgrid-genset-02", "audit-box-03"];
const LATENCY_MS = 200;
const log = (text: string) => process.stderr.write(`${text}\n`);

/** The dry run's debug line with its estimate (src/cli/commands/backfill.ts). */
const estimateLine = z.object({
  msg: z.literal("backfill estimate"),
  seconds: z.number(),
  rateOnlySeconds: z.number(),
  latencyMs: z.number(),
  catalogMs: z.number(),
  bound: z.enum(["rate", "latency"]),
  pointsSeconds: z.number(),
  learnedFromRuns: z.number(),
  msPerPoint: z.number().optional(),
});

/** The estimate a dry run logged (LOG_LEVEL=debug), its log lines parsed with zod. */
function loggedEstimate(stderr: string): z.infer<typeof estimateLine> {
  for (const line of stderr.split("\n")) {
    if (!line.includes('"backfill estimate"')) continue;
    return estimateLine.parse(JSON.parse(line));
  }
  throw new Error(`the dry run logged no estimate: ${stderr.slice(-500)}`);
}

/**
 * One comparison: the rate, the records' spacing, the days; `learn`: a backfill of the `days`
 * before first, into the same state file, for the estimate to learn the points' cost from.
 */
interface EtaCase {
  readonly rate: number;
  readonly resolutionS: number;
  readonly days: number;
  readonly learn: boolean;
}

/**
 * Per case a dry run then the backfill it plans, 3 devices into a file, each the built CLI in a
 * child process against the simulator answering everything 200 ms late. Hourly records at 5
 * requests/s (the default: the rate limit holds it) and 20/s (the latency does), on a fresh state
 * file (no earlier run: the requests alone); then minute records (the simulator's default: 8 MB
 * answers, where the points' own work is most of the time), after a backfill of the days before
 * that the estimate learns the points' cost from.
 */
export async function benchDryRunEta(quick: boolean): Promise<Row[]> {
  const days = quick ? 28 : 90;
  const cases: EtaCase[] = [
    { rate: 5, resolutionS: 3600, days, learn: false },
    { rate: 20, resolutionS: 3600, days, learn: false },
    { rate: 5, resolutionS: 60, days: quick ? 7 : 14, learn: true },
  ];
  const rows: Row[] = [];
  for (const c of cases) rows.push(await etaRow(c));
  return rows;
}

/** A backfill into /dev/null that must succeed; its wall time (process start included), in s. */
async function backfill(args: readonly string[], env: Record<string, string>): Promise<number> {
  const run = await runEtl([...args, "--output", "/dev/null"], { ...env, LOG_LEVEL: "warn" });
  if (run.code !== 0) throw new Error(`backfill failed: ${run.stderr.slice(-500)}`);
  return run.wallMs / 1000;
}

/**
 * A day's backfill of the 3 devices into a state file of its own (nothing learned from it): the
 * simulator's first large answers in this process are slower (its code not yet compiled, its heap
 * growing), which would make the run learned from slower than the API it stands for.
 */
async function warmUp(simUrl: string, rate: number): Promise<void> {
  const state = stateDir();
  try {
    const env = etlEnv(simUrl, undefined, state.db, { API_RATE_LIMIT: String(rate) });
    await backfill(backfillArgs(DEVICES, NOW_S - 3 * DAY_S, NOW_S - 2 * DAY_S), env);
  } finally {
    state.done();
  }
}

/** One case's row: the dry run's estimate over the backfill's wall time. */
async function etaRow({ rate, resolutionS, days, learn }: EtaCase): Promise<Row> {
  const sim = await startSimulator({
    now: () => NOW_S * 1000,
    resolutionS,
    latencyMs: LATENCY_MS,
  });
  const state = stateDir();
  try {
    const env = etlEnv(sim.url, undefined, state.db, {
      API_RATE_LIMIT: String(rate),
      API_CONCURRENCY: "4",
      LOG_LEVEL: "debug",
    });
    if (learn) await warmUp(sim.url, rate);
    const learnedS = learn
      ? await backfill(backfillArgs(DEVICES, NOW_S - 2 * days * DAY_S, NOW_S - days * DAY_S), env)
      : undefined;
    const args = backfillArgs(DEVICES, NOW_S - days * DAY_S, NOW_S);
    const dry = await runEtl([...args, "--dry-run"], env);
    if (dry.code !== 0) throw new Error(`dry run failed: ${dry.stderr.slice(-500)}`);
    const estimate = loggedEstimate(dry.stderr);
    if (estimate.learnedFromRuns !== (learn ? 1 : 0)) {
      throw new Error(`the estimate learned from ${estimate.learnedFromRuns} runs, not ${+learn}`);
    }
    const dataBefore = sim.count("data");
    const actualS = await backfill(args, env);
    const requests = sim.count("data") - dataBefore;
    const ratio = estimate.seconds / actualS;
    log(
      `  ${rate}/s, ${resolutionS} s records: estimate ${estimate.seconds.toFixed(2)} s, actual ${actualS.toFixed(2)} s`,
    );
    const points =
      learnedS === undefined
        ? "no earlier run: the requests alone"
        : `points ${estimate.pointsSeconds.toFixed(1)} s at ${((estimate.msPerPoint ?? 0) * 1000).toFixed(1)} µs, learned from a backfill of the ${days} days before (${learnedS.toFixed(1)} s)`;
    return {
      bench: `Dry-run ETA vs the backfill, ${days} days of 3 devices at ${resolutionS === 60 ? "1-minute" : "hourly"} records (${requests} data requests), ${rate} req/s, ${LATENCY_MS} ms latency`,
      measured: `estimate ${estimate.seconds.toFixed(1)} s (latency ${Math.round(estimate.latencyMs)} ms measured, held by the ${estimate.bound === "rate" ? "rate limit" : "latency"}; the rate alone said ${Math.ceil(requests / rate)} s; ${points})`,
      baseline: `${actualS.toFixed(1)} s the backfill took (process start included)`,
      ratio,
      goal: "0.70-1.30",
      met: ratio >= 0.7 && ratio <= 1.3,
    };
  } finally {
    state.done();
    await sim.close();
  }
}
