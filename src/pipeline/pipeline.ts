import { setMaxListeners } from "node:events";
import type { Logger } from "pino";
import type { ApiClient } from "../api/api-client.js";
import type { RateGate } from "../api/rate-gate.js";
import { siteOf } from "../config/sites.js";
import { timeZonesOf } from "../config/values.js";
import type { Config } from "../config.js";
import type { InfluxQuery } from "../influx/influx-query.js";
import type { PointSink } from "../influx/point-sink.js";
import { RollupLock } from "../rollups/rollup-lock.js";
import type { RollupParts } from "../rollups/rollup-run.js";
import { rollupHomeOf } from "../rollups/series.js";
import { type Owner, processOwner } from "../state/owner.js";
import type { StateStore } from "../state/state-store.js";
import { ValueIdDecoder } from "../transform/value-id.js";
import { sleep } from "../util/timers.js";
import { type ChunkMetrics, ChunkRunner } from "./chunk-runner.js";

/** The state the runs keep (not the file itself: its locks, checks and closing are the CLI's). */
export type RunStore = Pick<
  StateStore,
  "runs" | "cursors" | "jobs" | "catalog" | "deadLetters" | "rollups" | "transaction" | "isOpen"
>;

/** The settings the runs read: SYNC_*, FAILURE_* and PARK_AFTER, the shard, the sites. */
export type RunSettings = Pick<Config, "sync" | "failures" | "shard" | "sites"> & {
  readonly api: Pick<Config["api"], "concurrency">;
};

export interface PipelineParts {
  readonly client: ApiClient;
  readonly store: RunStore & Pick<StateStore, "locks" | "close">;
  readonly sink: PointSink;
  readonly config: RunSettings &
    Pick<Config, "rollups"> & {
      readonly influx: Pick<Config["influx"], "batchSize">;
      readonly api: Pick<Config["api"], "answerBudgetMb">;
    };
  readonly logger: Logger;
  /** The client's rate gate, for status and metrics. */
  readonly gate?: RateGate;
  /** Where chunks are counted (the service's metrics). */
  readonly metrics?: ChunkMetrics;
  readonly now?: () => Date;
  /** This process, for leases and runs (default: this process as `energy-etl`). */
  readonly owner?: Owner;
  /** Where rollups read raw points back (InfluxDB); none: no rollups (a file sink, a dry run). */
  readonly rollupQuery?: Pick<InfluxQuery, "query">;
  /** The rollups' own sink, on ROLLUP_BUCKET; none: they go with the raw points. */
  readonly rollupSink?: PointSink;
}

/** The running pipeline, wired once, with one request queue for every run (its chunk runner). */
export class Pipeline {
  readonly client: ApiClient;
  readonly store: RunStore;
  readonly sink: PointSink;
  readonly config: RunSettings;
  readonly logger: Logger;
  readonly chunks: ChunkRunner;
  /** Value ids decoded once each (what they become in InfluxDB). */
  readonly decoder: ValueIdDecoder;
  readonly gate: RateGate | undefined;
  readonly now: () => Date;
  readonly owner: Owner;
  /** Backfill jobs this process works on now (a job runs once at a time, here too). */
  readonly activeJobs = new Set<number>();
  /** What writing rollups needs; undefined when there are none (points not going to InfluxDB). */
  readonly rollups: RollupParts | undefined;
  private readonly rollupSink: PointSink | undefined;
  private readonly closeStore: () => void;
  private readonly stopper = new AbortController();

  constructor(parts: PipelineParts) {
    // every chunk waiting for answer budget listens to it: many at once is no leak
    setMaxListeners(0, this.stopper.signal);
    this.client = parts.client;
    this.store = parts.store;
    this.closeStore = () => parts.store.close();
    this.sink = parts.sink;
    const { sync, failures, shard, sites, api } = parts.config;
    this.config = { sync, failures, shard, sites, api: { concurrency: api.concurrency } };
    this.logger = parts.logger;
    this.gate = parts.gate;
    this.now = parts.now ?? (() => new Date());
    this.owner = parts.owner ?? processOwner("energy-etl");
    this.decoder = new ValueIdDecoder(parts.logger);
    this.chunks = new ChunkRunner({
      client: parts.client,
      sink: parts.sink,
      decoder: this.decoder,
      batchLines: parts.config.influx.batchSize,
      rollups: parts.rollupQuery ? parts.store.rollups : undefined,
      deadLetters: parts.store.deadLetters,
      now: this.now,
      concurrency: parts.config.api.concurrency,
      answerBudgetBytes: parts.config.api.answerBudgetMb * 2 ** 20,
      stopping: this.stopper.signal,
      metrics: parts.metrics,
    });
    this.rollupSink = parts.rollupSink;
    this.rollups = parts.rollupQuery
      ? {
          marks: parts.store.rollups,
          catalog: parts.store.catalog,
          decoder: this.decoder,
          query: parts.rollupQuery,
          sink: parts.rollupSink ?? parts.sink,
          zones: timeZonesOf(parts.config.rollups.timeZones),
          // ROLLUP_BUCKET's policy only where the rollups are written there
          home: parts.rollupSink ? rollupHomeOf(parts.config) : {},
          kwpOf: (deviceId: string) => siteOf(parts.config.sites, deviceId)?.kwp,
          lock: new RollupLock(parts.store.locks, this.owner),
          deadLetters: parts.store.deadLetters,
          now: this.now,
          logger: parts.logger,
        }
      : undefined;
  }

  /** Now as the API sees it (see ApiClock): what runs plan and report by. */
  readonly apiNow = (): Date => this.client.clock.now();

  /** True once {@link stop} was called: no new work is taken. */
  get isStopping(): boolean {
    return this.stopper.signal.aborted;
  }

  /**
   * Takes no new jobs, waits up to `graceMs` for those in flight, then aborts what is still open
   * (their chunks are fetched again next time). True when everything finished in time.
   */
  async stop(graceMs: number): Promise<boolean> {
    this.stopper.abort(new Error("shutting down"));
    const idle = this.chunks.onIdle().then(() => true);
    const finished = await Promise.race([idle, sleep(graceMs, { unref: true }).then(() => false)]);
    if (!finished) {
      this.abort("shutting down");
      // what was aborted settles at once; never wait on a dependency beyond that
      await Promise.race([idle, sleep(1000, { unref: true })]);
    }
    const flushed = Promise.all([this.sink.flush(), this.rollupSink?.flush()]);
    await Promise.race([flushed, sleep(1000, { unref: true })]);
    return finished;
  }

  /** Ends every open API request and InfluxDB write at once; later ones fail at once too. */
  abort(reason: string): void {
    this.stopper.abort(new Error(reason));
    this.client.abort(reason);
    this.sink.abort?.(reason);
    this.rollupSink?.abort?.(reason);
  }

  /** Flushes and closes the sinks and the state database. */
  async close(): Promise<void> {
    try {
      await this.sink.close();
      await this.rollupSink?.close();
    } finally {
      this.closeStore();
    }
  }
}
