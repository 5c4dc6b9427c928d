import PQueue from "p-queue";
import type { Logger } from "pino";
import type { ApiClient } from "../api/client.js";
import type { RateGate } from "../api/rate-gate.js";
import type { Config } from "../config.js";
import type { PointSink } from "../influx/point-sink.js";
import { type Owner, processOwner } from "../state/owner.js";
import type { StateStore } from "../state/state-store.js";
import { ValueIdDecoder } from "../transform/value-id.js";
import { sleep } from "../util/timers.js";
import { DeviceSlots } from "./device-slots.js";
import type { ChunkDeps, ChunkResult } from "./fetch-chunk.js";

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
  /** This process, for leases and runs (default: this process as `energy-etl`). */
  readonly owner?: Owner;
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
  /** A device's share of the queue: API_CONCURRENCY - 1 slots at most (1 when that is 1). */
  readonly deviceSlots: DeviceSlots;
  readonly gate: RateGate | undefined;
  readonly observer: PipelineObserver | undefined;
  readonly now: () => Date;
  readonly owner: Owner;
  /** Backfill jobs this process works on now (a job runs once at a time, here too). */
  readonly activeJobs = new Set<number>();
  private stopping = false;
  /** The API's clock at its latest answer, and this clock's time then (epoch ms). */
  private serverClock: { serverMs: number; localMs: number } | undefined;

  constructor(parts: PipelineParts) {
    this.client = parts.client;
    this.store = parts.store;
    this.sink = parts.sink;
    this.config = parts.config;
    this.logger = parts.logger;
    this.gate = parts.gate;
    this.observer = parts.observer;
    this.now = parts.now ?? (() => new Date());
    this.owner = parts.owner ?? processOwner("energy-etl");
    this.decoder = new ValueIdDecoder(parts.logger);
    this.queue = new PQueue({ concurrency: parts.config.api.concurrency });
    this.deviceSlots = new DeviceSlots(Math.max(1, parts.config.api.concurrency - 1));
    this.client.onServerTime((serverMs) => {
      this.serverClock = { serverMs, localMs: this.now().getTime() };
    });
  }

  /**
   * Runs a request of a device in the shared queue, within the device's share of it: one slow
   * device never holds every request slot. Higher `priority` runs first (catalog reads between
   * ticks run after data requests).
   */
  forDevice<T>(deviceId: string, task: () => Promise<T>, priority = 0): Promise<T> {
    return this.deviceSlots.run(deviceId, () => this.queue.add(task, { priority }));
  }

  /** What fetching a chunk needs of the pipeline. */
  get chunkDeps(): ChunkDeps {
    return {
      client: this.client,
      sink: this.sink,
      decoder: this.decoder,
      deadLetters: this.store.deadLetters,
      now: this.now,
    };
  }

  /**
   * Now as the API sees it: the local clock, or the API's clock when that is behind (its latest
   * `Date` header plus the local time passed since), so a local clock running ahead never makes a
   * run read or report the future, also between answers. A local clock that jumps ahead between
   * answers is seen at the next answer (windows are capped by the answers' own `Date`).
   */
  apiNow(): Date {
    const local = this.now();
    const clock = this.serverClock;
    if (clock === undefined) return local;
    if (local.getTime() < clock.localMs) {
      // the local clock went back since that answer: what it said is no measure any more
      this.serverClock = undefined;
      return local;
    }
    const server = clock.serverMs + Math.max(0, local.getTime() - clock.localMs);
    return server < local.getTime() ? new Date(server) : local;
  }

  /** True once {@link stop} was called: no new work is taken. */
  get isStopping(): boolean {
    return this.stopping;
  }

  /**
   * Takes no new jobs (queued ones end at once without a request: they check
   * {@link isStopping}), waits up to `graceMs` for those in flight, then aborts what is still open
   * (API requests and InfluxDB writes end at once; their chunks are fetched again next time).
   * Resolves true when everything in flight finished in time.
   */
  async stop(graceMs: number): Promise<boolean> {
    this.stopping = true;
    const idle = this.queue.onIdle().then(() => true);
    const finished = await Promise.race([idle, sleep(graceMs, { unref: true }).then(() => false)]);
    if (!finished) {
      this.abort("shutting down");
      // what was aborted settles at once; never wait on a dependency beyond that
      await Promise.race([idle, sleep(1000, { unref: true })]);
    }
    await Promise.race([this.sink.flush(), sleep(1000, { unref: true })]);
    return finished;
  }

  /** Ends every open API request and InfluxDB write at once; later ones fail at once too. */
  abort(reason: string): void {
    this.stopping = true;
    this.client.abort(reason);
    this.sink.abort?.(reason);
  }

  /** Flushes and closes the sink and the state database. */
  async close(): Promise<void> {
    await this.sink.close();
    this.store.close();
  }
}
