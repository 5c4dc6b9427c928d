import { realpathSync, rmSync } from "node:fs";
import { delimiter, dirname, isAbsolute, join, relative, resolve } from "node:path";
import type { Command } from "commander";
import type { Config } from "../../config.js";
import { planBackfill, queueBackfill } from "../../pipeline/backfill-plan.js";
import type { Pipeline } from "../../pipeline/pipeline.js";
import { runSync } from "../../pipeline/sync.js";
import { DEFAULT_SIM_API_KEY, DEFAULT_SIM_USERS } from "../../util/demo-defaults.js";
import { epochSeconds } from "../../util/utc-time.js";
import { type CommandContext, createContext } from "../context.js";
import { type CliIo, examples, writeLine } from "../io.js";
import { runBackfillWithProgress } from "../progress.js";
import { startSimulatorProcess } from "../simulator-process.js";

const DEMO_DAYS = 2;

/** `demo/` next to STATE_DB: the image's working directory is read-only. */
export function demoDir(stateDb: string): string {
  return join(dirname(resolve(stateDb)), "demo");
}

export function registerDemoCommand(program: Command, io: CliIo): void {
  program
    .command("demo")
    .description(
      `start the embedded simulator, then migrate, backfill the last ${DEMO_DAYS} days of every ` +
        "device and run one sync: into InfluxDB when INFLUX_URL is set, otherwise into " +
        "line protocol; state and files under demo/ next to STATE_DB (./data/demo/ by default, " +
        "/data/demo/ in the image)",
    )
    .addHelpText(
      "after",
      examples(
        "npm run demo",
        "INFLUX_URL=http://localhost:8086 INFLUX_TOKEN=... INFLUX_ORG=energy energy-etl demo",
      ),
    )
    .action((_opts: unknown, command: Command) => runDemo(io, command));
}

/** The demo: a fresh state (and file) under demoDir, the simulator, a backfill and a sync. */
async function runDemo(io: CliIo, command: Command): Promise<void> {
  const startedMs = Date.now();
  const context = createContext(command, io);
  const dir = demoDir(context.config.state.db);
  const stateDb = join(dir, "state.db");
  const output = context.config.influx.url === "" ? join(dir, "energy.lp") : undefined;
  for (const file of [stateDb, `${stateDb}-wal`, `${stateDb}-shm`, ...(output ? [output] : [])]) {
    rmSync(file, { force: true });
  }
  const simulator = await startSimulatorProcess(["--seed", "1"]);
  writeLine(io.stdout, `simulator: ${simulator.url} (pid ${simulator.pid})`);
  const config = demoConfig(context.config, simulator.url, stateDb);
  const { openPipeline } = await import("../open-pipeline.js");
  const { pipeline } = await openPipeline(config, context.logger, { output });
  try {
    writeLine(io.stdout, `state: ${stateDb} (migrated); data -> ${pipeline.sink.target}`);
    const c = await backfillAndSync(pipeline, context);
    const summary = [
      "",
      "demo finished:",
      `  devices   ${c.devices}`,
      `  values    ${c.values} (over ${c.resources} device resources)`,
      `  points    ${c.points}`,
      `  requests  ${c.requests} (${c.dataRequests} for data)`,
      `  elapsed   ${((Date.now() - startedMs) / 1000).toFixed(1)} s`,
      `  data      ${pipeline.sink.target}`,
      `  status    ${cliCommand(io)} status --state-db ${stateDb}`,
      ...(output ? loadLines(output) : []),
    ];
    for (const line of summary) writeLine(io.stdout, line);
  } finally {
    await pipeline.close();
    await simulator.stop();
  }
}

/** How to run energy-etl again: `energy-etl` if the PATH's is this script, else `node <script>`. */
export function cliCommand(io: Pick<CliIo, "cwd" | "env">, script = process.argv[1] ?? ""): string {
  const self = realOrUndefined(script);
  const onPath = (io.env.PATH ?? "").split(delimiter).filter((dir) => dir !== "");
  if (self && onPath.some((dir) => realOrUndefined(join(dir, "energy-etl")) === self)) {
    return "energy-etl";
  }
  const shown = relative(io.cwd, script);
  return shown.startsWith("..") || isAbsolute(shown) ? `node ${resolve(script)}` : `node ${shown}`;
}

function realOrUndefined(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/** `influx write` of the demo's file: its timestamps are seconds (else they land in 1970). */
function loadLines(file: string): string[] {
  return [
    `  load it   influx write --org energy --bucket energy --precision s --file ${file}`,
    "            (InfluxDB 2.x CLI, with --host and --token; the timestamps are seconds)",
  ];
}

/** `config` reading the simulator at `url` as its default user, into the demo's `stateDb`. */
function demoConfig(config: Config, url: string, stateDb: string): Config {
  const user = DEFAULT_SIM_USERS[0] ?? { user: "demo", password: "demo-password" };
  return {
    ...config,
    api: {
      ...config.api,
      url,
      key: DEFAULT_SIM_API_KEY,
      user: user.user,
      password: user.password ?? "",
      rateLimit: 50,
    },
    state: { db: stateDb },
  };
}

async function backfillAndSync(pipeline: Pipeline, context: CommandContext) {
  const nowS = epochSeconds(new Date());
  const { jobs: plan, requests: catalogRequests } = await planBackfill(pipeline, {
    devices: "all",
    fromS: nowS - DEMO_DAYS * 86_400,
    toS: nowS,
  });
  const jobs = queueBackfill(pipeline, plan).jobs.map((q) => q.job);
  const { run: backfill } = await runBackfillWithProgress(pipeline, jobs, context);
  const sync = await runSync(pipeline);
  return {
    devices: sync.devices.length,
    values: plan.reduce((n, p) => n + p.spec.valueIds.length, 0),
    resources: plan.length,
    points: backfill.counters.points + sync.counters.points,
    requests: catalogRequests + backfill.counters.requests + sync.counters.requests,
    dataRequests: backfill.counters.dataRequests + sync.counters.dataRequests,
  };
}
