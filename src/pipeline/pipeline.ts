import PQueue from "p-queue";
import type { Logger } from "pino";
import type { ApiClient } from "../api/client.js";
import type { RateGate } from "../api/rate-gate.js";
import type { Config } from "../config.js";
import type { PointSink } from "../influx/point-sink.js";
import type { StateStore } from "../state/state-store.js";
import { ValueIdDecoder } from "../transform/value-id.js";
import { sleep } from "../util/sleep.js";
import type { ChunkResult } from "./fetch-chunk.js";

/** What syncs and backfills share: the API, the state, the sink and one request queue. */
export interface PipelineParts {
  readonly client: ApiClient;
  readonly store: StateStore;
  readonly sink: PointSink;
  readonly config: Config;
  readonly logger: Logger;
  /** The client's rate gate, for status and metrics. */
  readonly gate?: RateGate;
  readonly observer?: PipelineObserver;
  /** Clock (default: the real one). */
  readonly now?: () => Date;
}

/** Told about every chunk, for metrics. */
export interface PipelineObserver {
  chunkDone(durationS: number, result: ChunkResult): void;
  chunkFailed(error: unknown): void;
}

/**
 * The running pipeline: one p-queue of fetch jobs (API_CONCURRENCY at once; the client's rate gate
 * spaces them to API_RATE_LIMIT) shared by syncs and backfills, and a value-id decoder. Each run
 * keeps its own counters (see RunContext).
 */
export class Pipeline {
  readonly client: ApiClient;
  readonly store: StateStore;
  readonly sink: PointSink;
  readonly config: Config;
  readonly logger: Logger;
  readonly decoder: ValueIdDecoder;
  readonly queue: PQueue;
  readonly gate: RateGate | undefined;
  readonly observer: PipelineObserver | undefined;
  readonly now: () => Date;
  private stopping = false;

  constructor(parts: PipelineParts) {
    this.client = parts.client;
    this.store = parts.store;
    this.sink = parts.sink;
    this.config = parts.config;
    this.logger = parts.logger;
    this.gate = parts.gate;
    this.observer = parts.observer;
    this.now = parts.now ?? (() => new Date());
    this.decoder = new ValueIdDecoder(parts.logger);
    this.queue = new PQueue({ concurrency: parts.config.api.concurrency });
  }

  /**
   * Now as the API sees it: the local clock, or the API's clock (its latest `Date` header) when
   * that is behind, so a local clock running ahead never makes a run read or report the future.
   */
  apiNow(): Date {
    const local = this.now();
    const server = this.client.serverTimeMs;
    return server !== undefined && server < local.getTime() ? new Date(server) : local;
  }

  /** True once {@link stop} was called: no new work is taken. */
  get isStopping(): boolean {
    return this.stopping;
  }

  /**
   * Takes no new jobs (queued ones end at once without a request: they check
   * {@link isStopping}), waits up to `graceMs` for those in flight, then flushes the sink.
   * Resolves true when everything in flight finished in time.
   */
  async stop(graceMs: number): Promise<boolean> {
    this.stopping = true;
    const finished = await Promise.race([
      this.queue.onIdle().then(() => true),
      sleep(graceMs, { unref: true }).then(() => false),
    ]);
    await this.sink.flush();
    return finished;
  }

  /** Flushes and closes the sink and the state database. */
  async close(): Promise<void> {
    await this.sink.close();
    this.store.close();
  }
}
