import type { Command } from "commander";
import { type MemoryBudgetError, watchMemory } from "../pipeline/memory-budget.js";
import type { Pipeline } from "../pipeline/pipeline.js";
import { LockHeartbeat } from "../service/lock-heartbeat.js";
import { processOwner } from "../state/owner.js";
import type { StateStore } from "../state/state-store.js";
import { sleep } from "../util/timers.js";
import { type CommandContext, createContext } from "./context.js";
import { type CliIo, writeLine } from "./io.js";
import type { OpenedPipeline, OpenPipelineOptions } from "./open-pipeline.js";
import { requireStateDb } from "./with-state-store.js";

/** A command stopped by SIGINT/SIGTERM after finishing its in-flight work (exit code 130). */
export class InterruptedError extends Error {
  constructor(signal: string) {
    super(`stopped by ${signal}; run the same command again to continue`);
    this.name = "InterruptedError";
  }
}

interface WithPipelineOptions extends Pick<OpenPipelineOptions, "output" | "dryRun"> {
  /** Hold the service lock while working (`sync` must not race `run` over the same cursors). */
  readonly lock?: boolean;
  /** STATE_DB must exist already (a command that only reads what others kept there). */
  readonly stateMustExist?: boolean;
}

/**
 * Tells {@link withPipeline} that the work is whole (every job done): a SIGINT/SIGTERM from then
 * on, or one that came during its last steps (rollups, flush, summary), is no interruption.
 */
export type MarkFinished = () => void;

/** `work` on a pipeline; SIGINT/SIGTERM: in-flight chunks finish within SHUTDOWN_TIMEOUT_MS. */
export async function withPipeline<T>(
  command: Command,
  io: CliIo,
  options: WithPipelineOptions,
  work: (pipeline: Pipeline, context: CommandContext, finished: MarkFinished) => Promise<T>,
): Promise<T> {
  const context = createContext(command, io);
  if (options.stateMustExist) requireStateDb(context.config.state.db);
  const owner = processOwner(command.name());
  const timeoutMs = context.config.service.shutdownTimeoutMs;
  let opened: OpenedPipeline | undefined;
  let signal: string | undefined;
  /** What ended the work early: over MEMORY_BUDGET_MB, or the service lock lost. */
  let cutBy: MemoryBudgetError | Error | undefined;
  // installed before the start-up (which may wait for InfluxDB), kept to the end
  /** The work said it is whole: a stop signal only hurries its last steps. */
  let whole = false;
  const removeSignals = onStopSignals((name) => {
    if (signal) return;
    signal = name;
    if (whole) {
      context.logger.info({ signal: name }, "stopping: the work is done, ending its last steps");
      return;
    }
    context.logger.warn({ signal: name }, "stopping: finishing the requests in flight");
    if (opened === undefined) process.exit(130);
    void opened.pipeline.stop(timeoutMs);
    // chunks not recorded as done are fetched again next time
    setTimeout(() => {
      context.logger.error("requests still in flight after SHUTDOWN_TIMEOUT_MS: exiting");
      process.exit(130);
    }, timeoutMs + 1000).unref();
  });
  try {
    // the pipeline's parts (got, the InfluxDB client) load here, for the commands that run one
    const { openPipeline } = await import("./open-pipeline.js");
    opened = await openPipeline(context.config, context.logger, {
      output: options.output,
      dryRun: options.dryRun,
      owner,
    });
  } catch (error) {
    removeSignals();
    throw error;
  }
  const { pipeline: open, state } = opened;
  const cut = (error: Error) => {
    cutBy ??= error;
    context.logger.error(error.message);
    void open.stop(timeoutMs);
  };
  let stopWatching = () => {};
  try {
    stopWatching = watchWork(state, context, options.lock ? owner : undefined, cut);
    // a shutdown's cut is an interruption, a state file gone the failure, whatever they threw
    const cutShort = () =>
      cutBy ?? (signal === undefined || whole ? undefined : new InterruptedError(signal));
    const finished = () => {
      whole = true;
    };
    const result = await work(open, context, finished).catch((error: unknown) => {
      throw cutShort() ?? state.fileProblem() ?? error;
    });
    const ended = cutShort() ?? state.fileProblem();
    if (ended) throw ended;
    // Ctrl-C once every job was done: nothing to run again (#42)
    if (signal)
      writeLine(io.stderr, `energy-etl: finished (${signal} came after the work was done)`);
    return result;
  } finally {
    stopWatching();
    removeSignals();
    // what is done is kept whole: its writes flushed by close(), not aborted
    if (signal && !whole) open.abort(`stopped by ${signal}`);
    await Promise.race([open.close(), sleep(timeoutMs, { unref: true })]);
    state.close();
  }
}

/** Watches the service lock (of `lockOwner`), MEMORY_BUDGET_MB, STATE_DB; returns the unwatch. */
function watchWork(
  state: StateStore,
  context: CommandContext,
  lockOwner: ReturnType<typeof processOwner> | undefined,
  cut: (error: Error) => void,
): () => void {
  const lock =
    lockOwner === undefined
      ? undefined
      : new LockHeartbeat({
          store: state,
          owner: lockOwner,
          log: context.logger,
          nowMs: Date.now,
          mayRenew: () => state.isOpen,
          fatal: cut,
        });
  const unwatchMemory = watchMemory({
    budgetMb: context.config.service.memoryBudgetMb,
    logger: context.logger,
    onOver: cut,
    ...(context.io.residentMb ? { rssMb: context.io.residentMb } : {}),
  });
  const unwatchState = state.watchFile(cut);
  const stop = () => {
    unwatchState();
    unwatchMemory();
    lock?.stop();
    lock?.releaseAtStop();
  };
  try {
    lock?.hold();
  } catch (error) {
    stop();
    throw error;
  }
  return stop;
}

/** Calls `stop` with the signal's name on every SIGINT and SIGTERM until the returned function. */
export function onStopSignals(stop: (signal: string) => void): () => void {
  const handlers = (["SIGINT", "SIGTERM"] as const).map(
    (name) => [name, () => stop(name)] as const,
  );
  for (const [name, handler] of handlers) process.on(name, handler);
  return () => {
    for (const [name, handler] of handlers) process.off(name, handler);
  };
}
