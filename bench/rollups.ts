/**
 * What rollups buy and cost: a year of daily energy of 10 devices as the dashboard asks for it,
 * from the daily rollups against from the raw 1-minute readings on the same influxd; and the CPU
 * a backfill spends on them (energy-etl's own, and influxd's answering their queries).
 */
import { InfluxQuery } from "../src/influx/influx-query.js";
import { recomputeRollups } from "../src/rollups/recompute.js";
import { startSimulator } from "../src/simulator/server.js";
import type { LineBatch } from "../src/transform/line-protocol.js";
import { loadDashboards, panelQuery } from "../test/support/dashboard-queries.js";
import { influxql, type TestInfluxd } from "../test/support/influxd.js";
import {
  backfillArgs,
  cpuMsOf,
  etlEnv,
  iso,
  median,
  quietText,
  runEtl,
  stateDir,
  untilQuiet,
} from "./harness.js";
import { backfillInto, cachedSimulator, pointsOf, postLines, type Row } from "./points.js";

const DAY_S = 86_400;
const log = (text: string) => process.stderr.write(`${text}\n`);

/**
 * A solar counter at 1 minute for `devices` over `days`: the day's energy follows the sun
 * (a half sine from 06:00 to 18:00 UTC), scaled per device.
 */
function counterLines(device: string, scale: number, fromS: number, days: number): string[] {
  const lines: string[] = [];
  let kwh = 1000 * scale;
  for (let s = fromS; s < fromS + days * DAY_S; s += 60) {
    const hour = (s % DAY_S) / 3600;
    if (hour >= 6 && hour < 18) kwh += (scale * Math.sin(((hour - 6) / 12) * Math.PI)) / 60;
    lines.push(
      `total_solar_energy,device_id=${device},resource_id=all_data,type=cumulative,unit=kWh,values_id=000 value=${kwh} ${s}`,
    );
  }
  return lines;
}

/**
 * A year (`quick`: 30 days) of 10 devices' solar counter at 1 minute written to influxd, its
 * rollups computed, then the overview's "Energy per day ($tz)" query (solar, every device, UTC,
 * the whole range) against the raw-readings query it replaced: median of 11 each, alternating.
 */
export async function benchRollupQuery(influxd: TestInfluxd, quick: boolean): Promise<Row> {
  const days = quick ? 30 : 365;
  const devices = Array.from({ length: 10 }, (_, i) => `site-${String(i + 1).padStart(2, "0")}`);
  const bucket = `rollupq${days}`;
  await influxql(influxd.rawUrl, "", `CREATE DATABASE "${bucket}"`);
  // the rollups' own home, as compose and ROLLUP_BUCKET make it: a year per shard group
  await influxql(
    influxd.rawUrl,
    "",
    `CREATE RETENTION POLICY "rollups" ON "${bucket}" DURATION INF REPLICATION 1 SHARD DURATION 520w`,
  );
  const toS = Math.floor(Date.UTC(2026, 5, 1) / 1000);
  const fromS = toS - days * DAY_S;
  let points = 0;
  for (const [i, device] of devices.entries()) {
    const lines = counterLines(device, 1 + i / 10, fromS, days);
    points += lines.length;
    await postLines(influxd, bucket, lines, 4, 10_000);
  }
  log(`rollups: ${points} raw points written; computing the rollups…`);
  // influxd itself, as Grafana reads it (not through the tests' write front)
  const query = new InfluxQuery({
    url: influxd.rawUrl,
    token: "test-influx-token",
    bucket,
    timeoutMs: 120_000,
  });
  const sink = {
    write: async (batch: LineBatch) => {
      const res = await fetch(`${influxd.rawUrl}/write?db=${bucket}&rp=rollups&precision=s`, {
        method: "POST",
        body: batch.bytes,
      });
      if (res.status !== 204) throw new Error(`write failed: ${res.status} ${await res.text()}`);
      return { written: batch.lines, rejected: [] };
    },
  };
  const counters = [{ measurement: "total_solar_energy", unit: "kWh", type: "cumulative" }];
  const built = performance.now();
  for (const device of devices) {
    await recomputeRollups(
      { query, sink, zones: ["UTC"], home: { retentionPolicy: "rollups" }, kwpOf: () => undefined },
      { deviceId: device, resourceId: "all_data", counters },
      fromS,
      toS - 1,
    );
  }
  const buildS = (performance.now() - built) / 1000;
  // both queries against a quiet influxd (it compacts the year just written for a while)
  log(`rollups: ${quietText(await untilQuiet(influxd.pid))}`);
  const overview = loadDashboards().find((d) => d.model.uid === "energy-overview")?.model;
  if (overview === undefined) throw new Error("no energy overview dashboard");
  const range = { fromIso: iso(fromS), toIso: iso(toS - 1), interval: "1d" };
  const fromRollups = panelQuery(overview, "Energy per day ($tz)", "A", {
    variables: { device: devices, tz: "UTC", rollup_rp: "rollups" },
    ...range,
  });
  const fromRaw =
    `SELECT non_negative_difference(last("value")) FROM "total_solar_energy" WHERE "device_id" =~ /^(${devices.join("|")})$/ ` +
    `AND time >= '${range.fromIso}' AND time <= '${range.toIso}' GROUP BY time(1d), "device_id" fill(none) tz('UTC')`;
  const timed = async (q: string) => {
    const t = performance.now();
    const [result = []] = await query.query([q]);
    return {
      ms: performance.now() - t,
      total: result.reduce((a, s) => a + s.values.reduce((b, r) => b + Number(r[1] ?? 0), 0), 0),
    };
  };
  await timed(fromRollups);
  await timed(fromRaw);
  const rollupMs: number[] = [];
  const rawMs: number[] = [];
  let totals = { rollups: 0, raw: 0 };
  for (let round = 0; round < 11; round++) {
    const a = await timed(fromRollups);
    const b = await timed(fromRaw);
    rollupMs.push(a.ms);
    rawMs.push(b.ms);
    totals = { rollups: a.total, raw: b.total };
  }
  const r = median(rollupMs);
  const w = median(rawMs);
  log(
    `rollups: ${r.toFixed(1)} ms from rollups, ${w.toFixed(1)} ms from raw (built in ${buildS.toFixed(1)} s)`,
  );
  // the raw query has no value for the first day (no day before it)
  const agree = Math.abs(totals.rollups - totals.raw) / totals.raw;
  return {
    bench: `A year of daily energy, 10 devices (${(points / 1e6).toFixed(1)} M raw points at 1 min): the overview's "Energy per day" query from the rollups vs from raw readings (median of 11; rollups built in ${buildS.toFixed(0)} s; totals differ by ${(agree * 100).toFixed(2)} %, the raw query's missing first day)`,
    measured: `${r.toFixed(1)} ms (rollup_day)`,
    baseline: `${w.toFixed(0)} ms (non_negative_difference(last) per day)`,
    ratio: w / r,
    goal: ">= 50x faster",
    met: w / r >= 50,
  };
}

/**
 * The same 14-day backfill (3 devices at 1 minute) with and without rollups, side by side:
 * energy-etl's CPU per million points, and influxd's CPU over the run (writes and the rollups'
 * queries).
 */
export async function benchRollupWriteCost(influxd: TestInfluxd, quick: boolean): Promise<Row> {
  const days = quick ? 2 : 14;
  // five rounds: a single pair of runs moves by 5-10 % on this VM, the difference looked for
  const rounds = quick ? 1 : 5;
  const sim = await cachedSimulator(days);
  const cpu = { on: [] as number[], off: [] as number[] };
  const influxCpu = { on: [] as number[], off: [] as number[] };
  let points = 0;
  try {
    for (let round = 1; round <= rounds; round++) {
      for (const mode of ["off", "on"] as const) {
        const before = cpuMsOf(influxd.pid) / 1000;
        const run = await backfillInto(influxd, sim.url, days, "command", {
          ROLLUPS: mode === "on" ? "true" : "false",
        });
        influxCpu[mode].push(cpuMsOf(influxd.pid) / 1000 - before);
        points = pointsOf(run);
        cpu[mode].push((run.cpuS / points) * 1e6);
      }
      log(
        `rollup write cost: round ${round}: ${cpu.on.at(-1)?.toFixed(2)} vs ${cpu.off.at(-1)?.toFixed(2)} s/M`,
      );
    }
  } finally {
    await sim.close();
  }
  const on = median(cpu.on);
  const off = median(cpu.off);
  // alternating rounds: each round's own ratio too (a pair run side by side)
  const paired = median(cpu.on.map((c, i) => c / (cpu.off[i] ?? c)));
  return {
    bench: `Rollups' write cost: ${days}-day backfill of 3 devices at 1 min (${(points / 1e6).toFixed(2)} M points) with vs without rollups, energy-etl's CPU per M points (median of ${rounds}, alternating; median of the rounds' own ratios ${paired.toFixed(2)}; influxd's CPU over the run ${median(influxCpu.on).toFixed(1)} vs ${median(influxCpu.off).toFixed(1)} s)`,
    measured: `${on.toFixed(2)} s/M with (${cpu.on.map((c) => c.toFixed(2)).join(" / ")})`,
    baseline: `${off.toFixed(2)} s/M with ROLLUPS=false (${cpu.off.map((c) => c.toFixed(2)).join(" / ")})`,
    ratio: on / off,
    goal: "<= 1.05",
    met: on / off <= 1.05,
  };
}

/**
 * A rate-bound backfill (the API at 10 requests/s, 50 ms latency; 60 days of hourly data of 3
 * devices into influxd) with rollups on and off, side by side: the wall time (the rollups run
 * along the fetching, while the rate limit holds it) and energy-etl's CPU.
 */
export async function benchRollupRateBound(influxd: TestInfluxd, quick: boolean): Promise<Row[]> {
  const days = quick ? 14 : 60;
  const rounds = quick ? 1 : 3;
  const devices = ["hybrid-site-01", "offgrid-genset-02", "audit-box-03"];
  const toS = Math.floor(Date.UTC(2026, 5, 15) / 1000);
  const sim = await startSimulator({
    now: () => toS * 1000,
    resolutionS: 3600,
    rateLimit: { perSecond: 10 },
    latencyMs: 50,
  });
  const wall = { on: [] as number[], off: [] as number[] };
  const cpu = { on: [] as number[], off: [] as number[] };
  let requests = 0;
  try {
    for (let round = 1; round <= rounds; round++) {
      for (const mode of ["off", "on"] as const) {
        const bucket = `ratebound${mode}${round}`;
        await influxql(influxd.rawUrl, "", `CREATE DATABASE "${bucket}"`);
        const state = stateDir();
        const before = sim.count();
        try {
          const run = await runEtl(
            backfillArgs(devices, toS - days * DAY_S, toS),
            etlEnv(sim.url, { url: influxd.url, token: "test-influx-token", bucket }, state.db, {
              API_RATE_LIMIT: "10",
              API_CONCURRENCY: "4",
              ROLLUPS: mode === "on" ? "true" : "false",
              ROLLUP_TIME_ZONES: "UTC,Europe/Berlin",
            }),
          );
          if (run.code !== 0) throw new Error(`rate-bound backfill failed: ${run.stderr}`);
          wall[mode].push(run.wallMs / 1000);
          cpu[mode].push(run.cpuS);
          requests = sim.count() - before;
        } finally {
          state.done();
        }
      }
      log(
        `rollups rate-bound: round ${round}: wall ${wall.on.at(-1)?.toFixed(2)} vs ${wall.off.at(-1)?.toFixed(2)} s, CPU ${cpu.on.at(-1)?.toFixed(2)} vs ${cpu.off.at(-1)?.toFixed(2)} s`,
      );
    }
  } finally {
    await sim.close();
  }
  const list = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(" / ");
  const ideal = requests / 10;
  const [wOn, wOff, cOn, cOff] = [
    median(wall.on),
    median(wall.off),
    median(cpu.on),
    median(cpu.off),
  ];
  const what = `Rate-bound backfill with rollups: the API at 10 req/s (50 ms latency), ${days} days of hourly data of 3 devices into influxd (${requests} requests: ${ideal.toFixed(1)} s at the rate), rollups on vs ROLLUPS=false (median of ${rounds})`;
  return [
    {
      bench: `${what}: wall time`,
      measured: `${wOn.toFixed(2)} s with rollups (${list(wall.on)}; ${(wOn / ideal).toFixed(2)} of requests / rate)`,
      baseline: `${wOff.toFixed(2)} s without (${list(wall.off)}; ${(wOff / ideal).toFixed(2)})`,
      ratio: wOn / wOff,
      goal: "<= 1.05",
      met: wOn / wOff <= 1.05,
    },
    {
      bench: `${what}: energy-etl's CPU`,
      measured: `${cOn.toFixed(2)} s with rollups (${list(cpu.on)})`,
      baseline: `${cOff.toFixed(2)} s without (${list(cpu.off)})`,
      ratio: cOn / cOff,
      goal: "<= 1.05",
      met: cOn / cOff <= 1.05,
    },
  ];
}
