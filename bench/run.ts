/**
 * `npm run bench`: the numbers behind energy-etl's claims, each measured against a baseline in the
 * same session. Writes bench/RESULTS.md. `--quick` runs smaller sizes (a smoke run, not results).
 */
import { writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { type Simulator, startSimulator } from "../src/simulator/server.js";
import { influxql, TestInfluxd } from "../test/support/influxd.js";
import { benchDryRunEta } from "./eta.js";
import { runTicks, SCHEDULE_STEP_MS, simulatorStart, startFleetSimulator, total } from "./fleet.js";
import {
  backfillArgs,
  etlEnv,
  median,
  quietText,
  runEtl,
  stateDir,
  untilQuiet,
} from "./harness.js";
import { benchMemory, benchMemoryConcurrency, benchPointCost, type Row } from "./points.js";
import { benchRetry } from "./retry.js";
import { benchRollupQuery, benchRollupRateBound, benchRollupWriteCost } from "./rollups.js";
import { benchStartup } from "./startup.js";
import {
  answerBytes,
  bigRecordMs,
  fuzzTranscoder,
  naivePath,
  ourPath,
  sampleRecords,
} from "./transform.js";

const QUICK = process.argv.includes("--quick");
/** `--only name[,name]`: run just these benchmarks (RESULTS.md only with `--write`). */
const ONLY = process.argv.includes("--only")
  ? (process.argv[process.argv.indexOf("--only") + 1] ?? "").split(",")
  : undefined;
const FLEET_MAX = process.argv.includes("--fleet-max")
  ? Number(process.argv[process.argv.indexOf("--fleet-max") + 1])
  : Number.POSITIVE_INFINITY;
const DAY_S = 86_400;
const NOW_S = Math.floor(Date.UTC(2026, 5, 15) / 1000);

const rows: Row[] = [];
const log = (text: string) => process.stderr.write(`${text}\n`);

async function withSimulator<T>(
  options: Parameters<typeof startSimulator>[0],
  work: (sim: Simulator) => Promise<T>,
) {
  const sim = await startSimulator({ now: () => NOW_S * 1000, ...options });
  try {
    return await work(sim);
  } finally {
    await sim.close();
  }
}

/** Requests issued for a 90-day backfill of 3 devices vs the theoretical minimum. */
async function benchRequests(): Promise<void> {
  const days = QUICK ? 30 : 90;
  const devices = ["hybrid-site-01", "offgrid-genset-02", "audit-box-03"];
  await withSimulator({ resolutionS: 3600 }, async (sim) => {
    let minimum = 0;
    for (const d of devices) {
      for (const r of sim.fleet.resourceIds(d) ?? []) {
        const v = (sim.fleet.valueIds(d, r) ?? []).filter((x) => x !== "values_id").length;
        minimum += Math.ceil(v / 20) * Math.ceil((days * DAY_S) / (7 * DAY_S));
      }
    }
    const run = await runEtl(
      backfillArgs(devices, NOW_S - days * DAY_S, NOW_S, "--output", "/dev/null"),
      etlEnv(sim.url, undefined, stateDir().db, { API_RATE_LIMIT: "1000" }),
    );
    if (run.code !== 0) throw new Error(`requests bench failed: ${run.stderr}`);
    const issued = sim.count("data");
    const ratio = issued / minimum;
    rows.push({
      bench: `Requests: ${days}-day backfill of 3 devices (${Math.max(...devices.map((d) => (sim.fleet.valueIds(d, "all_data")?.length ?? 1) - 1))} values max)`,
      measured: `${issued} data requests`,
      baseline: `${minimum} (sum of ceil(V/20) x ceil(T/7 d))`,
      ratio,
      goal: "1.00",
      met: ratio === 1,
    });
  });
}

/** Backfill wall time at 10 requests/s with 50 ms latency vs requests / 10 per s. */
async function benchRateBound(): Promise<void> {
  const days = QUICK ? 21 : 63;
  await withSimulator(
    { resolutionS: 3600, rateLimit: { perSecond: 10 }, latencyMs: 50 },
    async (sim) => {
      const run = await runEtl(
        backfillArgs(["hybrid-site-01"], NOW_S - days * DAY_S, NOW_S, "--output", "/dev/null"),
        etlEnv(sim.url, undefined, stateDir().db, { API_RATE_LIMIT: "10", API_CONCURRENCY: "4" }),
      );
      if (run.code !== 0) throw new Error(`rate-bound bench failed: ${run.stderr}`);
      const requests = sim.count();
      const ideal = (requests / 10) * 1000;
      const ratio = run.wallMs / ideal;
      rows.push({
        bench: "Rate-bound time: API limited to 10 req/s, 50 ms latency",
        measured: `${(run.wallMs / 1000).toFixed(2)} s for ${requests} requests (${sim.count(undefined, 429)} x 429)`,
        baseline: `${(ideal / 1000).toFixed(2)} s (requests / 10 per s)`,
        ratio,
        goal: "<= 1.10",
        met: ratio <= 1.1,
      });
    },
  );
}

/** Our record -> line protocol path vs a Point per value and writePoint, over the same values. */
async function benchTransform(): Promise<void> {
  const target = QUICK ? 200_000 : 1_000_000;
  const { records, values, ids } = sampleRecords(target);
  const answers = answerBytes(records);
  const ours: number[] = [];
  const naive: number[] = [];
  for (let round = 0; round < 5; round++) {
    let t = performance.now();
    const p1 = ourPath(answers, ids);
    ours.push(p1 / ((performance.now() - t) / 1000));
    t = performance.now();
    const p2 = naivePath(answers, values);
    naive.push(p2 / ((performance.now() - t) / 1000));
  }
  const o = median(ours);
  const n = median(naive);
  rows.push({
    bench: `Read + transform + serialise: ${(values / 1e6).toFixed(1)} M values from the answers' JSON bytes (median of 5, one core)`,
    measured: `${(o / 1e6).toFixed(2)} M points/s (AnswerTranscoder)`,
    baseline: `${(n / 1e6).toFixed(2)} M points/s (JSON.parse, Point + writePoint)`,
    ratio: o / n,
    goal: ">= 3x and >= 1 M/s",
    met: o / n >= 3 && o >= 1e6,
  });
}

/** A 1 MB record in 16-byte pieces vs in one piece: the record reader resumes where it stopped. */
async function benchBigRecord(): Promise<void> {
  const rounds = QUICK ? 5 : 31;
  const [one = Number.NaN, gathered = Number.NaN, each = Number.NaN] = bigRecordMs(
    [{ pieceBytes: 2 ** 22 }, { pieceBytes: 16 }, { pieceBytes: 16, gatherBytes: 1 }],
    rounds,
  );
  rows.push({
    bench: `A 1 MB record read by the AnswerTranscoder in 16-byte pieces (65,537 pieces) vs in one piece (median of ${rounds} rounds, the ways taking turns)`,
    measured: `${gathered.toFixed(1)} ms`,
    baseline: `${one.toFixed(1)} ms in one piece`,
    ratio: gathered / one,
    goal: "<= 2x",
    met: gathered / one <= 2,
  });
  // without the gathering of small pieces: the record reader resumes 65,537 times
  rows.push({
    bench:
      "The same, each 16-byte piece read as it comes (no gathering): the reader resumes where it stopped, so linear",
    measured: `${each.toFixed(1)} ms`,
    baseline: `${one.toFixed(1)} ms in one piece`,
    ratio: each / one,
    goal: "-",
  });
}

/** The transcoder's differential fuzz, longer than the suite's fixed seeds: 0 differences. */
async function benchFuzz(): Promise<void> {
  const runs = QUICK ? 5_000 : 50_000;
  const seed = Date.now() % 2 ** 31;
  const { ms, failure } = fuzzTranscoder(runs, seed);
  rows.push({
    bench: `Differential fuzz of the AnswerTranscoder against its oracle (test/support/answer-oracle.ts): ${runs.toLocaleString("en")} answers, seed ${seed}${failure ? `; differs: ${failure.slice(0, 300)}` : ""}`,
    measured: failure ? "a difference" : "0 differences",
    baseline: `${(ms / 1000).toFixed(1)} s`,
    ratio: failure ? 1 : 0,
    goal: "0 differences",
    met: failure === undefined,
  });
}

/** The fleet simulator's clock: 19 days after its devices were commissioned (2025-01-01). */
const FLEET_NOW_MS = Date.UTC(2025, 0, 20);

/** One fleet size's steady ticks: CPU per device, requests, RSS, wall against requests / rate. */
interface FleetFigures {
  readonly devices: number;
  readonly cpuPerDeviceMs: number;
  readonly requests: number;
  readonly minimum: number;
  readonly rssMb: number;
  readonly wallS: number;
  readonly idealS: number;
  /** A tick that did not make the data minimum, which the fleet clock counts on. */
  readonly offClock: string | undefined;
}

/**
 * Simulated time per tick in the fleet rows: 5 s on the fleet's 5-minute grid, from a whole hour,
 * so the steady ticks find no new row: their figure is what a tick costs per device besides its
 * points (its data requests, cursors, catalog, logs), the same work for every fleet size.
 */
const BACK_TO_BACK_STEP_MS = 5_000;

const k = (n: number) => n.toLocaleString("en");

/**
 * `ticks` ticks of `run` over a fleet of `devices`, its clock moving `stepMs` per tick. A tick
 * that did not make exactly the data minimum of requests (the fleet clock counts on it) is named
 * in `offClock`: the figures are then not those of the same work per device.
 */
async function fleetFigures(
  influxd: TestInfluxd,
  fleet: { devices: number; ticks: number; rate: number; stepMs: number },
): Promise<FleetFigures> {
  const { devices, ticks, rate, stepMs } = fleet;
  const quiet = quietText(await untilQuiet(influxd.pid));
  const { sim, perTick } = await startFleetSimulator(devices, FLEET_NOW_MS, stepMs);
  try {
    const bucket = `fleet${devices}x${stepMs}`;
    await influxql(influxd.rawUrl, "", `CREATE DATABASE "${bucket}"`);
    const env = etlEnv(
      sim.url,
      { url: influxd.url, token: "test-influx-token", bucket },
      stateDir().db,
      // the first tick reads 5 minutes per device (a row per value), not an hour: 10,000 devices'
      // hour was 7 M points, which influxd was still compacting through the steady ticks
      { SYNC_START: "PT5M", API_RATE_LIMIT: String(rate), API_CONCURRENCY: "8" },
    );
    log(`fleet: ${devices} devices, ${ticks} ticks of run, ${stepMs / 1000} s apart (${quiet})…`);
    const all = (await runTicks(sim, env, ticks)).ticks;
    const off = all.findIndex((t) => t.requests.data !== perTick);
    const offClock =
      off < 0
        ? undefined
        : `tick ${off + 1} of ${k(devices)} devices made ${all[off]?.requests.data ?? 0} data requests, not ${perTick}`;
    const steady = all.slice(1);
    const requests = steady.reduce((a, t) => a + total(t.requests), 0);
    const figures = {
      devices,
      cpuPerDeviceMs: median(steady.map((t) => t.cpuMs)) / devices,
      requests,
      minimum: perTick * steady.length,
      rssMb: Math.max(...steady.map((t) => t.rssMb)),
      wallS: steady.reduce((a, t) => a + t.ms, 0) / 1000,
      idealS: requests / rate,
      offClock,
    };
    log(
      `fleet: ${devices} devices: ${figures.cpuPerDeviceMs.toFixed(2)} ms CPU per device per tick${offClock ? ` (${offClock})` : ""}`,
    );
    return figures;
  } finally {
    await sim.close();
  }
}

/**
 * Steady ticks of `run` over fleets of 100, 1,000 and 10,000 devices (tick 1 reads the catalog
 * and SYNC_START, 5 minutes; the others follow each other, cron every second, each
 * {@link BACK_TO_BACK_STEP_MS} of simulated time after the one before): CPU per device per tick,
 * requests against the data minimum, RSS, and wall time against requests / API_RATE_LIMIT; then
 * 1,000 devices whose ticks are 5 simulated minutes apart (a new row per value each tick).
 */
async function benchFleet(influxd: TestInfluxd): Promise<void> {
  const all: readonly [number, number, number][] = QUICK
    ? [
        [20, 3, 1000],
        [200, 3, 1000],
        [2000, 2, 500],
      ]
    : [
        [100, 5, 1000],
        [1000, 5, 1000],
        // the same request rate as 1,000 (a per-device figure depends on how busy the process is);
        // four ticks: the median of three steady ones
        [10_000, 4, 1000],
      ];
  // `--fleet-max N`: only the fleets of at most N devices
  const runs = all.filter(([devices]) => devices <= FLEET_MAX);
  const figures: FleetFigures[] = [];
  for (const [devices, ticks, rate] of runs) {
    figures.push(
      await fleetFigures(influxd, { devices, ticks, rate, stepMs: BACK_TO_BACK_STEP_MS }),
    );
  }
  const [small, middle, large] = figures;
  if (!small || !middle) return;
  rows.push(...fleetRows(small, middle, large, runs[2]?.[2]));
  const middleRun = runs[1];
  if (middleRun) {
    const [devices, ticks, rate] = middleRun;
    const apart = await fleetFigures(influxd, { devices, ticks, rate, stepMs: SCHEDULE_STEP_MS });
    figures.push(apart);
    rows.push({
      bench: `CPU per device per tick, ${k(devices)} devices, ticks 5 simulated minutes apart (a new row per value each tick; the ticks follow each other, so no hourly lookback or rollup hour among them)`,
      measured: `${apart.cpuPerDeviceMs.toFixed(2)} ms`,
      baseline: `${middle.cpuPerDeviceMs.toFixed(2)} ms in ticks finding no new row`,
      ratio: apart.cpuPerDeviceMs / middle.cpuPerDeviceMs,
      goal: "none (for information)",
    });
  }
  for (const { offClock } of figures) {
    if (offClock) {
      rows.push({
        bench: "Fleet clock: every tick makes the data minimum",
        measured: offClock,
        baseline: "the data minimum",
        ratio: Number.NaN,
        goal: "every tick",
        met: false,
      });
    }
  }
}

/** The rows of the fleets of 100, 1,000 and (when run) 10,000 devices. */
function fleetRows(
  small: FleetFigures,
  middle: FleetFigures,
  large: FleetFigures | undefined,
  largeRate: number | undefined,
): Row[] {
  const out: Row[] = [
    {
      bench: `CPU of energy-etl per device per steady tick (median), ${k(middle.devices)} vs ${k(small.devices)} devices`,
      measured: `${middle.cpuPerDeviceMs.toFixed(2)} ms at ${k(middle.devices)}`,
      baseline: `${small.cpuPerDeviceMs.toFixed(2)} ms at ${k(small.devices)}`,
      ratio: middle.cpuPerDeviceMs / small.cpuPerDeviceMs,
      goal: "<= 2.5 ms at 1,000",
      met: middle.cpuPerDeviceMs <= 2.5,
    },
    {
      bench: `Steady ticks of \`run\`, ${k(middle.devices)} devices: all requests vs the data minimum`,
      measured: `${middle.requests} requests`,
      baseline: `${middle.minimum} (one per value group of every resource, per tick)`,
      ratio: middle.requests / middle.minimum,
      goal: "<= 1.05",
      met: middle.requests / middle.minimum <= 1.05,
    },
  ];
  if (!large) {
    out.push({
      bench: `RSS of \`run\` in steady ticks (the highest), ${k(middle.devices)} devices`,
      measured: `${middle.rssMb.toFixed(0)} MB`,
      baseline: "150 MB",
      ratio: middle.rssMb / 150,
      goal: "<= 1.00",
      met: middle.rssMb <= 150,
    });
    return out;
  }
  out.push(
    {
      bench: `CPU per device per steady tick, ${k(large.devices)} vs ${k(middle.devices)} devices`,
      measured: `${large.cpuPerDeviceMs.toFixed(2)} ms at ${k(large.devices)}`,
      baseline: `${middle.cpuPerDeviceMs.toFixed(2)} ms at ${k(middle.devices)}`,
      ratio: large.cpuPerDeviceMs / middle.cpuPerDeviceMs,
      goal: "<= 1.10",
      met: large.cpuPerDeviceMs / middle.cpuPerDeviceMs <= 1.1,
    },
    {
      bench: `RSS of \`run\` in steady ticks (the highest), ${k(middle.devices)} and ${k(large.devices)} devices`,
      measured: `${middle.rssMb.toFixed(0)} MB at ${k(middle.devices)}, ${large.rssMb.toFixed(0)} MB at ${k(large.devices)}`,
      baseline: "150 MB",
      ratio: middle.rssMb / 150,
      goal: "<= 1.00 at 1,000",
      met: middle.rssMb <= 150,
    },
    {
      bench: `Steady ticks of ${k(large.devices)} devices at API_RATE_LIMIT=${largeRate}: wall vs requests / rate`,
      measured: `${large.wallS.toFixed(1)} s for ${large.requests} requests`,
      baseline: `${large.idealS.toFixed(1)} s`,
      ratio: large.wallS / large.idealS,
      goal: "<= 1.10",
      met: large.wallS / large.idealS <= 1.1,
    },
  );
  return out;
}

/** `simulate --devices 5000`: spawn to a GET /devices answer, vs the default 4 devices. */
async function benchSimulatorStart(): Promise<void> {
  const n = 5000;
  const big = await simulatorStart(n);
  const small = await simulatorStart(4);
  rows.push({
    bench: `\`simulate --devices ${n}\`: spawn to GET /devices answered`,
    measured: `${(big.ms / 1000).toFixed(2)} s, ${big.ids} ids`,
    baseline: `${(small.ms / 1000).toFixed(2)} s for the default ${small.ids} devices`,
    ratio: big.ms / small.ms,
    goal: `< 2 s and ${n} ids`,
    met: big.ms < 2000 && big.ids === n,
  });
}

function table(): string {
  const head =
    "| benchmark | measured | baseline | ratio | goal | met |\n|---|---|---|---|---|---|";
  return `${head}\n${rows.map((r) => `| ${r.bench} | ${r.measured} | ${r.baseline} | ${r.ratio.toFixed(2)} | ${r.goal} | ${r.met === undefined ? "-" : r.met ? "yes" : "**no**"} |`).join("\n")}`;
}

async function main(): Promise<void> {
  const influxd = new TestInfluxd();
  await influxd.start();
  try {
    for (const [name, bench] of [
      ["requests", benchRequests],
      ["rate-bound", benchRateBound],
      ["dry-run-eta", async () => rows.push(...(await benchDryRunEta(QUICK)))],
      ["transform", benchTransform],
      ["big-record", benchBigRecord],
      ["fuzz", benchFuzz],
      ["point-cost", async () => rows.push(...(await benchPointCost(influxd, QUICK)))],
      ["memory", async () => rows.push(...(await benchMemory(influxd, QUICK)))],
      [
        "memory-concurrency",
        async () => rows.push(...(await benchMemoryConcurrency(influxd, QUICK))),
      ],
      ["simulator", benchSimulatorStart],
      ["start-up", async () => rows.push(...benchStartup(QUICK))],
      [
        "rollups",
        async () => {
          rows.push(await benchRollupQuery(influxd, QUICK));
          rows.push(await benchRollupWriteCost(influxd, QUICK));
        },
      ],
      ["rollups-rate", async () => rows.push(...(await benchRollupRateBound(influxd, QUICK)))],
      ["retry", async () => rows.push(await benchRetry(influxd))],
      ["fleet", () => benchFleet(influxd)],
    ] as const) {
      if (ONLY && !ONLY.includes(name)) continue;
      log(`bench: ${name}… (${quietText(await untilQuiet(influxd.pid))})`);
      await bench();
    }
  } finally {
    await influxd.stop();
  }
  const cpu = cpus()[0]?.model ?? "unknown CPU";
  const text = [
    `Measured ${new Date().toISOString().slice(0, 16)} UTC on ${cpus().length} x ${cpu}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, influxd 1.6 behind the test proxy.`,
    `Command: \`npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}\``,
    "",
    table(),
    "",
    "How each figure is taken: every energy-etl run is the built CLI in a child process, started as",
    "the installed command does (`energy-etl`: node with the heap flags of dist/cli.js's first line)",
    "or as `node dist/cli.js` (no flags), no NODE_OPTIONS either way; its CPU time",
    "(getrusage) and peak RSS (/proc VmHWM) at exit are its own (a preloaded bench/child-usage.mjs",
    "reports them), its wall time includes process start; requests are counted by the simulator. The",
    "API side of the point-cost and memory rows is the simulator with its answers cached after a",
    "warm-up run (its CPU is not energy-etl's); writes go through the small /api/v2/write front the",
    "tests put before influxd 1.6, the raw-ingest baseline POSTs the same lines to influxd's /write",
    "with 4 writers after each backfill (influxd's CPU for them read from /proc). The fleet rows run",
    "`energy-etl run` (cron every second, so ticks follow each other) against the simulator's generated fleet (devices reporting every 5 minutes) in this",
    "process, writing into influxd. The fleet's clock stands 19 days after the devices' commissioning,",
    "on a whole hour, in the first tick and moves a fixed step per tick, the same for every fleet",
    "size: 5 s (the steady ticks find no new row: what a tick costs per device besides points), or",
    "5 minutes in the row saying so (a new row per value each tick). Per-tick CPU and RSS are read",
    'from /proc when the tick\'s "sync finished" line arrives.',
    "The machine is a shared VM: CPU figures vary by about 20 % from run to run.",
  ].join("\n");
  process.stdout.write(`${text}\n`);
  if (!QUICK && (!ONLY || process.argv.includes("--write")))
    writeFileSync("bench/RESULTS.md", `# Benchmark results\n\n${text}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
