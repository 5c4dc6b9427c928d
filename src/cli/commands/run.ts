import type { Command } from "commander";
import { openPipeline } from "../../pipeline/create-pipeline.js";
import { EtlService } from "../../service/etl-service.js";
import { EtlMetrics } from "../../service/metrics.js";
import { createContext } from "../context.js";
import type { CliIo } from "../io.js";
import { SHUTDOWN_GRACE_MS } from "../with-pipeline.js";

/** `run`: the long-running service (scheduler, backfill jobs, health server). */
export function registerRunCommand(program: Command, io: CliIo): void {
  program
    .command("run")
    .description(
      "run the service: a sync now and on every SYNC_CRON tick, unfinished backfill jobs in the " +
        "background, health endpoints on HTTP_PORT; SIGTERM/SIGINT stop it cleanly (exit 0)",
    )
    .addHelpText("after", "\nExample:\n  SYNC_CRON='*/5 * * * *' HTTP_PORT=8080 energy-etl run")
    .action(async (_opts: unknown, command: Command) => {
      const context = createContext(command, io);
      const { config, logger } = context;
      const metrics = new EtlMetrics();
      const pipeline = await openPipeline(config, logger, { metrics });
      const stale = pipeline.store.runs.markStaleInterrupted(pipeline.now());
      if (stale > 0) logger.warn({ runs: stale }, "runs of a previous process marked interrupted");
      const service = new EtlService(pipeline, {
        cron: config.sync.cron,
        httpPort: config.http.port,
        metrics,
      });
      await service.start();
      await new Promise<void>((resolve) => {
        const stop = (signal: string) => () => {
          logger.info({ signal }, "stopping the service");
          service
            .stop(SHUTDOWN_GRACE_MS)
            .then(() => pipeline.close())
            .finally(resolve);
        };
        process.once("SIGINT", stop("SIGINT"));
        process.once("SIGTERM", stop("SIGTERM"));
      });
    });
}
