/**
 * `dead-letters --retry` of many refused lines against the backfill's own write rate (issue 40):
 * a backfill whose counter lines a write front refuses among good ones (they become dead letters),
 * then the retry once the front takes them, and `audit --rollups` after it; the baseline is a
 * clean backfill of the same data into a database of its own, in the same session.
 */
import Database from "better-sqlite3";
import { influxql, type TestInfluxd } from "../test/support/influxd.js";
import { startWriteFront } from "../test/support/write-front.js";
import { etlEnv, runEtl, stateDir } from "./harness.js";
import { backfillInto, backfillOver, cachedSimulator, pointsOf, type Row } from "./points.js";

const log = (text: string) => process.stderr.write(`${text}\n`);

/** The raw lines of counters (not their rollups): those the front refuses during the backfill. */
const isCounterLine = (line: string) =>
  !line.startsWith("rollup_") && line.includes(",type=cumulative,");

/** Dead letters in a state database (read as it is: the bench has no migrations beside it). */
function deadLetters(path: string): number {
  const db = new Database(path, { readonly: true });
  try {
    return Number(db.prepare("SELECT count(*) FROM dead_letters").pluck().get());
  } finally {
    db.close();
  }
}

/** The retry's lines per second against a clean backfill's points per second (goal >= 0.5). */
export async function benchRetry(influxd: TestInfluxd): Promise<Row> {
  const days = 1;
  const sim = await cachedSimulator(days);
  const front = await startWriteFront({ target: influxd.url, drop: isCounterLine });
  const state = stateDir();
  try {
    const clean = await backfillInto(influxd, sim.url, days, "command");
    const backfillRate = pointsOf(clean) / (clean.wallMs / 1000);
    const bucket = `retry${days}`;
    await influxql(influxd.rawUrl, "", `CREATE DATABASE "${bucket}"`);
    const target = { url: front.url, token: "test-influx-token", bucket };
    const env = etlEnv(sim.url, target, state.db, { API_RATE_LIMIT: "1000" });
    log(`retry: clean backfill ${(clean.wallMs / 1000).toFixed(1)} s; now one with refusals…`);
    const refused = await runEtl(backfillOver(days), env);
    if (refused.code !== 0) throw new Error(`backfill with refusals failed: ${refused.stderr}`);
    log(`retry: backfill with refusals ${(refused.wallMs / 1000).toFixed(1)} s`);
    const letters = deadLetters(state.db);
    log(`retry: ${letters} dead letters (${front.dropped.size} lines refused); retrying…`);
    // the retry writes to influxd as the clean backfill does (not through the front)
    const direct = { ...env, INFLUX_URL: influxd.url };
    const retry = await runEtl(["dead-letters", "--retry"], direct);
    if (retry.code !== 0) throw new Error(`dead-letters --retry failed: ${retry.stderr}`);
    const left = deadLetters(state.db);
    const [from, to] = [backfillOver(days).at(-3), backfillOver(days).at(-1)];
    const auditArgs = ["audit", "--rollups", "--from", from ?? "", "--to", to ?? ""];
    const audit = await runEtl([...auditArgs, "--sample-days", String(days + 1)], direct);
    const retryRate = letters / (retry.wallMs / 1000);
    const ratio = retryRate / backfillRate;
    log(`retry: ${retryRate.toFixed(0)} lines/s vs ${backfillRate.toFixed(0)} points/s`);
    return {
      bench: `\`dead-letters --retry\` of ${letters} refused lines (a ${days}-day backfill of 3 devices at 1 min whose counter lines a front refused among good ones; rollups recomputed; ${left} left; \`audit --rollups\` after it: exit ${audit.code})`,
      measured: `${retryRate.toFixed(0)} lines/s (${(retry.wallMs / 1000).toFixed(1)} s)`,
      baseline: `${backfillRate.toFixed(0)} points/s (a clean backfill of the same data: ${pointsOf(clean)} points in ${(clean.wallMs / 1000).toFixed(1)} s)`,
      ratio,
      goal: ">= 0.5, audit exit 0",
      met: ratio >= 0.5 && audit.code === 0 && left === 0 && letters >= 20_000,
    };
  } finally {
    state.done();
    await front.close();
    await sim.close();
  }
}
