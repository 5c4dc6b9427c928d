import PQueue from "p-queue";
import type { Logger } from "pino";
import type { ApiClient } from "../api/client.js";
import type { Config } from "../config.js";
import type { PointSink } from "../influx/point-sink.js";
import type { StateStore } from "../state/state-store.js";
import { ValueIdDecoder } from "../transform/value-id.js";
import type { RateGate } from "./rate-gate.js";

/** What the sync and the backfill share: the API, the state, the sink and one request queue. */
export interface PipelineParts {
  readonly client: ApiClient;
  readonly store: StateStore;
  readonly sink: PointSink;
  readonly config: Config;
  readonly logger: Logger;
  /** The client's rate gate, for status and metrics. */
  readonly gate?: RateGate;
  readonly observer?: PipelineObserver;
  /** Counters shared with the client's attempt hook (default: new ones). */
  readonly counters?: PipelineCounters;
  /** Clock (default: the real one). */
  readonly now?: () => Date;
}

/** Counters a pipeline keeps while it runs (read by runs, progress and metrics). */
export interface PipelineCounters {
  requests: number;
  dataRequests: number;
  points: number;
  chunks: number;
  chunkErrors: number;
}

/** Told about every chunk, for metrics. */
export interface PipelineObserver {
  chunkDone(durationS: number, points: number): void;
  chunkFailed(error: unknown): void;
}

/** Counters at zero. */
export function emptyCounters(): PipelineCounters {
  return { requests: 0, dataRequests: 0, points: 0, chunks: 0, chunkErrors: 0 };
}

/**
 * The running pipeline: one p-queue of fetch jobs (API_CONCURRENCY at once; the client's rate gate
 * spaces them to API_RATE_LIMIT) shared by syncs and backfills, a value-id decoder, and counters.
 */
export class Pipeline {
  readonly client: ApiClient;
  readonly store: StateStore;
  readonly sink: PointSink;
  readonly config: Config;
  readonly logger: Logger;
  readonly decoder: ValueIdDecoder;
  readonly queue: PQueue;
  readonly counters: PipelineCounters;
  readonly gate: RateGate | undefined;
  readonly observer: PipelineObserver | undefined;
  private readonly clock: () => Date;
  private stopping = false;

  constructor(parts: PipelineParts) {
    this.client = parts.client;
    this.store = parts.store;
    this.sink = parts.sink;
    this.config = parts.config;
    this.logger = parts.logger;
    this.counters = parts.counters ?? emptyCounters();
    this.gate = parts.gate;
    this.observer = parts.observer;
    this.clock = parts.now ?? (() => new Date());
    this.decoder = new ValueIdDecoder(parts.logger);
    this.queue = new PQueue({ concurrency: parts.config.api.concurrency });
  }

  now(): Date {
    return this.clock();
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
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), graceMs);
    });
    const finished = await Promise.race([this.queue.onIdle().then(() => true), timedOut]);
    clearTimeout(timer);
    await this.sink.flush();
    return finished;
  }

  /** Flushes and closes the sink and the state database. */
  async close(): Promise<void> {
    await this.sink.close();
    this.store.close();
  }
}
