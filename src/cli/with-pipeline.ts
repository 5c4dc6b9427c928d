import type { Command } from "commander";
import { openPipeline } from "../pipeline/create-pipeline.js";
import type { Pipeline } from "../pipeline/pipeline.js";
import { type CommandContext, createContext } from "./context.js";
import type { CliIo } from "./io.js";

/** How long in-flight requests may take to finish after SIGTERM/SIGINT. */
export const SHUTDOWN_GRACE_MS = 30_000;

/** A command stopped by SIGINT/SIGTERM after finishing its in-flight work (exit code 130). */
export class InterruptedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InterruptedError";
  }
}

/**
 * Runs `work` with an open pipeline; on SIGINT/SIGTERM stops taking new chunks, lets in-flight
 * ones finish (up to {@link SHUTDOWN_GRACE_MS}), flushes, and closes the sink and the state.
 */
export async function withPipeline<T>(
  command: Command,
  io: CliIo,
  options: { output?: string },
  work: (pipeline: Pipeline, context: CommandContext) => Promise<T>,
): Promise<T> {
  const context = createContext(command, io);
  const pipeline = await openPipeline(context.config, context.logger, { output: options.output });
  let signal: string | undefined;
  const onSignal = (name: string) => () => {
    if (signal) return;
    signal = name;
    context.logger.warn({ signal: name }, "stopping: finishing the requests in flight");
    void pipeline.stop(SHUTDOWN_GRACE_MS);
    // a request still retrying past the grace: chunks not recorded are fetched again next time
    setTimeout(() => {
      context.logger.error("requests still in flight after the grace period: exiting");
      process.exit(130);
    }, SHUTDOWN_GRACE_MS + 5000).unref();
  };
  const onInt = onSignal("SIGINT");
  const onTerm = onSignal("SIGTERM");
  process.on("SIGINT", onInt);
  process.on("SIGTERM", onTerm);
  try {
    const result = await work(pipeline, context);
    if (signal)
      throw new InterruptedError(`stopped by ${signal}; run the same command again to continue`);
    return result;
  } finally {
    process.off("SIGINT", onInt);
    process.off("SIGTERM", onTerm);
    await pipeline.close();
  }
}
