import { rmSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { type BackfillRunResult, runBackfillJobs } from "../../pipeline/backfill.js";
import { planBackfill, queueBackfill } from "../../pipeline/backfill-plan.js";
import { openPipeline } from "../../pipeline/create-pipeline.js";
import { runSync } from "../../pipeline/sync.js";
import { DEFAULT_SIM_API_KEY, DEFAULT_SIM_USERS, startSimulator } from "../../simulator/server.js";
import { createContext } from "../context.js";
import { type CliIo, writeLine } from "../io.js";
import { BackfillProgressReporter } from "../progress.js";

const DEMO_DIR = "./data/demo";
const DEMO_DAYS = 2;

/** `demo`: the embedded simulator, a 2-day backfill and one sync, into InfluxDB or files. */
export function registerDemoCommand(program: Command, io: CliIo): void {
  program
    .command("demo")
    .description(
      `start the embedded simulator, then migrate, backfill the last ${DEMO_DAYS} days of every ` +
        "device and run one sync: into InfluxDB when INFLUX_URL is set, otherwise into " +
        `line protocol under ${DEMO_DIR}/`,
    )
    .addHelpText(
      "after",
      "\nExamples:\n  npm run demo\n  INFLUX_URL=http://localhost:8086 INFLUX_TOKEN=... INFLUX_ORG=energy energy-etl demo",
    )
    .action(async (_opts: unknown, command: Command) => {
      const startedMs = Date.now();
      const context = createContext(command, io);
      const { logger } = context;
      const dir = resolve(DEMO_DIR);
      const stateDb = join(dir, "state.db");
      const output = context.config.influx.url === "" ? join(dir, "energy.lp") : undefined;
      for (const file of [
        stateDb,
        `${stateDb}-wal`,
        `${stateDb}-shm`,
        ...(output ? [output] : []),
      ]) {
        rmSync(file, { force: true });
      }
      const user = DEFAULT_SIM_USERS[0] ?? { user: "demo", password: "demo-password" };
      const simulator = await startSimulator({ port: 0, seed: 1 });
      writeLine(
        io.stdout,
        `simulator: ${simulator.url} (devices: ${simulator.fleet.deviceIds().join(", ")})`,
      );
      const config = {
        ...context.config,
        api: {
          ...context.config.api,
          url: simulator.url,
          key: DEFAULT_SIM_API_KEY,
          user: user.user,
          password: user.password ?? "",
          rateLimit: 50,
        },
        state: { db: stateDb },
      };
      const pipeline = await openPipeline(config, logger, { output });
      try {
        writeLine(io.stdout, `state: ${stateDb} (migrated); data -> ${pipeline.sink.target}`);
        const nowS = Math.floor(Date.now() / 1000);
        const { jobs: plan, requests: catalogRequests } = await planBackfill(pipeline, {
          devices: "all",
          fromS: nowS - DEMO_DAYS * 86_400,
          toS: nowS,
        });
        const jobs = queueBackfill(pipeline, plan).jobs.map((q) => q.job);
        const total = jobs.reduce((n, j) => n + j.chunksTotal, 0);
        const already = jobs.reduce((n, j) => n + j.chunksDone, 0);
        const progress = new BackfillProgressReporter(total, already, logger, context.terminal);
        let backfill: BackfillRunResult;
        try {
          backfill = await runBackfillJobs(pipeline, jobs, progress);
        } finally {
          progress.stop();
        }
        const sync = await runSync(pipeline);
        const values = plan.reduce((n, p) => n + p.spec.valueIds.length, 0);
        const c = {
          points: backfill.counters.points + sync.counters.points,
          requests: catalogRequests + backfill.counters.requests + sync.counters.requests,
          dataRequests: backfill.counters.dataRequests + sync.counters.dataRequests,
        };
        writeLine(io.stdout, "");
        writeLine(io.stdout, "demo finished:");
        writeLine(io.stdout, `  devices   ${sync.devices.length}`);
        writeLine(io.stdout, `  values    ${values} (over ${plan.length} device resources)`);
        writeLine(io.stdout, `  points    ${c.points}`);
        writeLine(io.stdout, `  requests  ${c.requests} (${c.dataRequests} for data)`);
        writeLine(io.stdout, `  elapsed   ${((Date.now() - startedMs) / 1000).toFixed(1)} s`);
        writeLine(io.stdout, `  data      ${pipeline.sink.target}`);
        writeLine(io.stdout, `  status    energy-etl status --state-db ${stateDb}`);
      } finally {
        await pipeline.close();
        await simulator.close();
      }
    });
}
