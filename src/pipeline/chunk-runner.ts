import PQueue from "p-queue";
import type { ApiClient } from "../api/api-client.js";
import { AnswerBudget, claimFor } from "./answer-budget.js";
import {
  type ChunkResult,
  type ChunkTarget,
  type ChunkWriterParts,
  chunkContext,
  dataQuery,
  finishChunk,
  writeAnswer,
} from "./chunk-writer.js";
import { DeviceSlots, deviceShare } from "./device-slots.js";
import { cutByShutdown, isFatal, isRefusal } from "./errors.js";
import type { Chunk } from "./plan-chunks.js";
import type { RunContext } from "./run-context.js";

export type ChunkOutcome =
  | { readonly chunk: Chunk; readonly result: ChunkResult }
  | { readonly chunk: Chunk; readonly error: unknown };

/** Where chunks are counted (the service's metrics), where their results arrive. */
export interface ChunkMetrics {
  chunkDone(durationS: number, result: ChunkResult): void;
  chunkFailed(error: unknown): void;
}

export interface ChunkRunnerParts extends ChunkWriterParts {
  readonly client: Pick<ApiClient, "data">;
  readonly concurrency: number;
  /** API_ANSWER_BUDGET_MB in bytes: what the chunks in flight hold at once. */
  readonly answerBudgetBytes: number;
  /** The pipeline's stop: no chunk starts after it, and a wait for budget ends at once. */
  readonly stopping: AbortSignal;
  readonly metrics?: ChunkMetrics;
}

export interface RunChunksOptions {
  /** Checked before each chunk starts: true stops starting chunks (a lease lost). */
  readonly stop?: () => boolean;
  /** More log context of a failed chunk (its job). */
  readonly context?: Readonly<Record<string, unknown>>;
  /**
   * Records a stored chunk done (a sync's cursor, a job's chunk), before its outcome is yielded;
   * one that throws ends the run with its error, and nothing is committed after it.
   */
  readonly commit: (chunk: Chunk, result: ChunkResult) => void;
}

/** What ended a run before all its chunks ran: none starts after it. */
type Ended = { readonly by: "fatal" | "refused" | "commit"; readonly error: unknown };

/**
 * The one place chunks run: one p-queue (API_CONCURRENCY at once), a device's share of it at most
 * API_CONCURRENCY - 1 slots. A chunk cut short by our own shutdown is read again next time.
 */
export class ChunkRunner {
  readonly queue: PQueue;
  /** What the chunks in flight hold, their answers and their writes: each waits for room. */
  readonly budget: AnswerBudget;
  private readonly slots: DeviceSlots;

  constructor(private readonly parts: ChunkRunnerParts) {
    this.queue = new PQueue({ concurrency: parts.concurrency });
    this.budget = new AnswerBudget(parts.answerBudgetBytes);
    this.slots = new DeviceSlots(deviceShare(parts.concurrency));
  }

  /** Runs a request of a device in the shared queue, within its share; higher `priority` first. */
  forDevice<T>(deviceId: string, task: () => Promise<T>, priority = 0): Promise<T> {
    return this.slots.run(deviceId, () => this.queue.add(task, { priority }));
  }

  /**
   * Fetches, writes and commits `chunks`, yielding each outcome; none starts after a fatal
   * failure, a write InfluxDB refused whole, a failed commit, or a stop.
   */
  async *run(
    run: RunContext,
    target: ChunkTarget,
    chunks: readonly Chunk[],
    options: RunChunksOptions,
  ): AsyncGenerator<ChunkOutcome, void, undefined> {
    const settled: ChunkOutcome[] = [];
    let wake: (() => void) | undefined;
    let pending = chunks.length;
    let ended: Ended | undefined;
    let notRun = 0;
    // none is committed after a commit threw, nor once the caller left
    let left = false;
    const commit = (chunk: Chunk, result: ChunkResult) => {
      if (left || ended?.by === "commit") return;
      try {
        options.commit(chunk, result);
      } catch (error) {
        ended = { by: "commit", error };
      }
    };
    const stopped = () =>
      ended !== undefined || this.parts.stopping.aborted || options.stop?.() === true;
    for (const chunk of chunks) {
      void this.runChunk(run, target, chunk, { ...options, commit }, stopped).then((outcome) => {
        pending--;
        if (outcome === undefined) notRun++;
        else if ("error" in outcome && ended === undefined) {
          if (isFatal(outcome.error)) ended = { by: "fatal", error: outcome.error };
          else if (isRefusal(outcome.error)) ended = { by: "refused", error: outcome.error };
        }
        if (outcome) settled.push(outcome);
        wake?.();
      });
    }
    try {
      while (ended?.by !== "commit" && (pending > 0 || settled.length > 0)) {
        const next = settled.shift();
        if (next) yield next;
        else await new Promise<void>((resolve) => (wake = resolve));
      }
      if (ended?.by === "commit") throw ended.error;
      if (ended && notRun > 0) {
        const context = {
          ...options.context,
          device: target.deviceId,
          resource: target.resourceId,
        };
        run.logger.warn({ ...context, ended: ended.by, notRun }, "chunks not run: read next time");
      }
    } finally {
      left = true;
    }
  }

  onIdle(): Promise<void> {
    return this.queue.onIdle();
  }

  /**
   * One chunk, top to bottom: fetch, transcode + write (both in its queue slot: the writes pace
   * the fetching), finish, commit. Undefined when cut by a stop.
   */
  private async runChunk(
    run: RunContext,
    target: ChunkTarget,
    chunk: Chunk,
    options: RunChunksOptions,
    stopped: () => boolean,
  ): Promise<ChunkOutcome | undefined> {
    const startedMs = Date.now();
    // the API requests of a chunk whose write then failed count all the same
    let requests = 0;
    const { stopping, batchLines } = this.parts;
    // only a stop ends the wait for budget: the chunk is read again next time
    const claim = await claimFor(this.budget, chunk, batchLines, stopping).catch(() => undefined);
    if (claim === undefined) return undefined;
    let result: ChunkResult;
    try {
      const held = await this.forDevice(target.deviceId, async () => {
        if (stopped()) return undefined;
        // 1. fetch: the whole answer (a failure midway is retried in the client, before writes)
        const answered = await this.parts.client.data(dataQuery(target, chunk), {
          onHeld: claim.onHeld,
        });
        claim.whole();
        requests = answered.requests;
        // 2. transcode + write, batch by batch; the last write is left running
        const written = await writeAnswer(this.parts, target, chunk, answered.value);
        return { answered, written };
      });
      if (held === undefined) return undefined;
      // 3. finish: the last write settled, dead letters kept, the rollup range marked
      result = await finishChunk(this.parts, target, chunk, held.answered, held.written);
      this.parts.metrics?.chunkDone((Date.now() - startedMs) / 1000, result);
      run.countChunk(result);
      this.logDropped(run, target, chunk, result);
    } catch (error) {
      if (cutByShutdown(error, stopping.aborted)) return undefined;
      this.parts.metrics?.chunkFailed(error);
      run.chunkFailed({ ...options.context, ...chunkContext(target, chunk) }, error, requests);
      return { chunk, error };
    } finally {
      claim.release();
    }
    // 4. commit: the caller's record that the chunk is stored (a cursor, a job's chunk)
    options.commit(chunk, result);
    return { chunk, result };
  }

  /** What a chunk dropped and set aside, told once. */
  private logDropped(run: RunContext, target: ChunkTarget, chunk: Chunk, result: ChunkResult) {
    if (result.dropped.outOfWindow + result.dropped.duplicates + result.dropped.extraMembers > 0) {
      run.logger.warn(
        {
          ...chunkContext(target, chunk),
          ...result.dropped,
          ...(result.extraMemberNames.length > 0
            ? { extraMemberNames: result.extraMemberNames }
            : {}),
        },
        "answer held more than was asked for: dropped",
      );
    }
    if (result.deadLetters > 0) {
      const context = {
        ...chunkContext(target, chunk),
        deadLetters: result.deadLetters,
        new: result.newDeadLetters,
        error: result.firstDeadLetterError,
      };
      // a known bad row read again by the lookback is no news
      if (result.newDeadLetters > 0) {
        run.logger.warn(context, "bad rows, members or lines kept as dead letters");
      } else run.logger.debug(context, "known dead letters read again");
    }
    if (result.resolvedDeadLetters > 0) {
      run.logger.info(
        { ...chunkContext(target, chunk), resolved: result.resolvedDeadLetters },
        "refused lines kept as dead letters were written now: forgotten",
      );
    }
  }
}
