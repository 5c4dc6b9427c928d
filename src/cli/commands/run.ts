import type { Command } from "commander";
import type { Logger } from "pino";
import { secondsBefore } from "../../pipeline/cursor.js";
import type { EtlService } from "../../service/etl-service.js";
import { processOwner } from "../../state/owner.js";
import { messageOf } from "../../util/errors.js";
import { sleep } from "../../util/timers.js";
import { epochSeconds } from "../../util/utc-time.js";
import { createContext } from "../context.js";
import type { CliIo } from "../io.js";
import type { OpenedPipeline } from "../open-pipeline.js";
import { onStopSignals } from "../with-pipeline.js";

export function registerRunCommand(program: Command, io: CliIo): void {
  program
    .command("run")
    .description(
      "run the service: a sync now and on every SYNC_CRON tick, due backfill jobs in the " +
        "background, /healthz, /readyz and /metrics on HTTP_HOST:HTTP_PORT; SIGTERM/SIGINT stop " +
        "it within SHUTDOWN_TIMEOUT_MS (exit 0)",
    )
    .addHelpText("after", "\nExample:\n  SYNC_CRON='*/5 * * * *' HTTP_PORT=8080 energy-etl run")
    .action((_opts: unknown, command: Command) => runService(io, command));
}

/** The service until a signal or a failure it cannot go on with; the pipeline closed after. */
async function runService(io: CliIo, command: Command): Promise<void> {
  const { config, logger } = createContext(command, io);
  const timeoutMs = config.service.shutdownTimeoutMs;
  const owner = processOwner("run");
  let opened: OpenedPipeline | undefined;
  let service: EtlService | undefined;
  const signals = listenForStop(logger, timeoutMs, () => service !== undefined);
  try {
    // loaded when the service runs, not for `--help`: got, the InfluxDB client, prom-client
    const [{ openPipeline }, { EtlService: Service }, { EtlMetrics }] = await Promise.all([
      import("../open-pipeline.js"),
      import("../../service/etl-service.js"),
      import("../../service/metrics.js"),
    ]);
    const metrics = new EtlMetrics();
    opened = await openPipeline(config, logger, { metrics, owner });
    const { pipeline, state } = opened;
    const stale = pipeline.store.runs.markStaleInterrupted(pipeline.now(), owner);
    if (stale > 0) logger.warn({ runs: stale }, "runs of a dead process marked interrupted");
    service = new Service(pipeline, {
      state,
      memoryBudgetMb: config.service.memoryBudgetMb,
      cron: config.sync.cron,
      httpPort: config.http.port,
      httpHost: config.http.host,
      metrics,
      ...(io.residentMb ? { residentMb: io.residentMb } : {}),
      readiness: {
        maxLagS: secondsBefore(epochSeconds(new Date()), config.service.readyMaxLag),
        failedSyncs: config.service.readyFailedSyncs,
        checkIntervalMs: config.service.readyCheckIntervalMs,
      },
    });
    await service.start();
    const ended = await Promise.race([
      signals.signalled.then(() => undefined),
      service.failure.then((error) => error),
    ]);
    await service.stop(timeoutMs);
    if (ended !== undefined) throw ended;
  } finally {
    signals.remove();
    if (opened) {
      await Promise.race([opened.pipeline.close(), sleep(1000, { unref: true })]).catch((error) =>
        logger.warn({ error: messageOf(error) }, "closing the pipeline failed"),
      );
      opened.state.close();
    }
  }
}

/** SIGINT/SIGTERM until `remove`: the first resolves `signalled`; a second skips no clean-up. */
function listenForStop(
  logger: Logger,
  timeoutMs: number,
  started: () => boolean,
): { readonly signalled: Promise<string>; remove(): void } {
  let stopping = false;
  let remove = (): void => undefined;
  const signalled = new Promise<string>((resolve) => {
    remove = onStopSignals((name) => {
      if (stopping) {
        logger.warn({ signal: name }, "already stopping (within SHUTDOWN_TIMEOUT_MS)");
        return;
      }
      stopping = true;
      logger.info({ signal: name }, "stopping the service");
      resolve(name);
      // whatever the dependencies do, the process is gone within the timeout and a second
      setTimeout(() => {
        logger.error({ timeoutMs }, "the service did not stop in time: exiting");
        process.exit(0);
      }, timeoutMs + 1000).unref();
      // still starting (e.g. waiting for InfluxDB): nothing is in flight that matters
      if (!started()) process.exit(0);
    });
  });
  return { signalled, remove };
}
