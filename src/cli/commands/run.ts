import type { Command } from "commander";
import { openPipeline } from "../../pipeline/create-pipeline.js";
import { secondsBefore } from "../../pipeline/cursor.js";
import type { Pipeline } from "../../pipeline/pipeline.js";
import { EtlService } from "../../service/etl-service.js";
import { EtlMetrics } from "../../service/metrics.js";
import { processOwner } from "../../state/owner.js";
import { messageOf } from "../../util/errors.js";
import { sleep } from "../../util/timers.js";
import { createContext } from "../context.js";
import type { CliIo } from "../io.js";

/** `run`: the long-running service (scheduler, backfill jobs, health server). */
export function registerRunCommand(program: Command, io: CliIo): void {
  program
    .command("run")
    .description(
      "run the service: a sync now and on every SYNC_CRON tick, due backfill jobs in the " +
        "background, /healthz, /readyz and /metrics on HTTP_HOST:HTTP_PORT; SIGTERM/SIGINT stop " +
        "it within SHUTDOWN_TIMEOUT_MS (exit 0)",
    )
    .addHelpText("after", "\nExample:\n  SYNC_CRON='*/5 * * * *' HTTP_PORT=8080 energy-etl run")
    .action(async (_opts: unknown, command: Command) => {
      const context = createContext(command, io);
      const { config, logger } = context;
      const timeoutMs = config.service.shutdownTimeoutMs;
      const owner = processOwner("run");
      let pipeline: Pipeline | undefined;
      let service: EtlService | undefined;
      let signalled: (signal: string) => void = () => undefined;
      const signal = new Promise<string>((resolve) => {
        signalled = resolve;
      });
      let stopping = false;
      // installed before anything that can wait on a dependency, and kept until the end: every
      // signal is ours, so a second Ctrl-C never skips the clean-up
      const onSignal = (name: string) => () => {
        if (stopping) {
          logger.warn({ signal: name }, "already stopping (within SHUTDOWN_TIMEOUT_MS)");
          return;
        }
        stopping = true;
        logger.info({ signal: name }, "stopping the service");
        signalled(name);
        // whatever the dependencies do, the process is gone within the timeout and a second
        const hard = setTimeout(() => {
          logger.error({ timeoutMs }, "the service did not stop in time: exiting");
          process.exit(0);
        }, timeoutMs + 1000);
        hard.unref();
        // still starting (e.g. waiting for InfluxDB): nothing is in flight that matters
        if (service === undefined) process.exit(0);
      };
      const onInt = onSignal("SIGINT");
      const onTerm = onSignal("SIGTERM");
      process.on("SIGINT", onInt);
      process.on("SIGTERM", onTerm);
      try {
        const metrics = new EtlMetrics();
        pipeline = await openPipeline(config, logger, { metrics, owner });
        const stale = pipeline.store.runs.markStaleInterrupted(pipeline.now(), owner);
        if (stale > 0) logger.warn({ runs: stale }, "runs of a dead process marked interrupted");
        const nowS = Math.floor(Date.now() / 1000);
        service = new EtlService(pipeline, {
          cron: config.sync.cron,
          httpPort: config.http.port,
          httpHost: config.http.host,
          metrics,
          readiness: {
            maxLagS: secondsBefore(nowS, config.service.readyMaxLag),
            failedSyncs: config.service.readyFailedSyncs,
            checkIntervalMs: config.service.readyCheckIntervalMs,
          },
        });
        await service.start();
        const ended = await Promise.race([
          signal.then(() => undefined),
          service.failure.then((error) => error),
        ]);
        await service.stop(timeoutMs);
        if (ended !== undefined) throw ended;
      } finally {
        process.off("SIGINT", onInt);
        process.off("SIGTERM", onTerm);
        if (pipeline) {
          const open = pipeline;
          await Promise.race([open.close(), sleep(1000, { unref: true })]).catch((error) =>
            logger.warn({ error: messageOf(error) }, "closing the pipeline failed"),
          );
          open.store.close();
        }
      }
    });
}
