import type { Logger } from "pino";
import { ApiClient } from "../api/api-client.js";
import { ApiClock } from "../api/api-clock.js";
import type { ApiTelemetry } from "../api/api-request.js";
import { RateGate } from "../api/rate-gate.js";
import { apiClientSettings, type Config } from "../config.js";
import { DRY_RUN_SINK, openRollupSink, pointSinkOpener } from "../influx/create-sink.js";
import { InfluxQuery } from "../influx/influx-query.js";
import type { PointSink } from "../influx/point-sink.js";
import type { ChunkMetrics } from "../pipeline/chunk-runner.js";
import { Pipeline } from "../pipeline/pipeline.js";
import type { WatchedParts } from "../service/metrics.js";
import type { Owner } from "../state/owner.js";
import { StateStore } from "../state/state-store.js";

/** Where API attempts and chunks are counted, where they happen; `watch` reads the pipeline. */
export interface PipelineMetrics extends ApiTelemetry, ChunkMetrics {
  watch?(parts: WatchedParts): void;
}

export interface OpenPipelineOptions {
  /** Line-protocol file instead of InfluxDB (`-` for stdout). */
  readonly output?: string;
  /** Plans only: no sink is opened (none is needed), and a write fails. */
  readonly dryRun?: boolean;
  readonly now?: () => Date;
  /** Where API attempts and chunks are counted (the service's /metrics). */
  readonly metrics?: PipelineMetrics;
  /** This process, for leases, locks and runs. */
  readonly owner?: Owner;
  /** The clock and waits of the rate gate and the client's retries (tests' virtual time). */
  readonly timers?: { readonly now: () => number; readonly sleep: (ms: number) => Promise<void> };
}

/** A pipeline and the state file it runs on (its locks, checks and closing are the command's). */
export interface OpenedPipeline {
  readonly pipeline: Pipeline;
  readonly state: StateStore;
}

/** A pipeline from the whole config; nowhere to write is a ConfigError before the state opens. */
export async function openPipeline(
  config: Config,
  logger: Logger,
  options: OpenPipelineOptions = {},
): Promise<OpenedPipeline> {
  const settings = apiClientSettings(config);
  const openSink = options.dryRun
    ? async () => DRY_RUN_SINK
    : pointSinkOpener(config, logger, options.output);
  const store = StateStore.open(config.state.db, { logger });
  const sinks: PointSink[] = [];
  try {
    const sink = await openSink();
    sinks.push(sink);
    // rollups are recomputed from what InfluxDB stores: only when the points go there
    const toInflux =
      config.rollups.enabled &&
      !options.dryRun &&
      options.output === undefined &&
      config.output.file === "" &&
      config.influx.url !== "";
    // ROLLUP_BUCKET: the rollups' own bucket, checked at start as the raw points' is
    const rollupSink = toInflux ? await openRollupSink(config, logger) : undefined;
    if (rollupSink) sinks.push(rollupSink);
    const { metrics, now, owner, timers } = options;
    const gate = new RateGate({ ratePerSecond: config.api.rateLimit, ...timers });
    const client = new ApiClient({
      ...settings,
      ...timers,
      logger,
      gate,
      telemetry: metrics,
      clock: new ApiClock(now),
    });
    const pipeline = new Pipeline({
      client,
      store,
      sink,
      config,
      logger,
      gate,
      metrics,
      now,
      owner,
      rollupQuery: toInflux ? new InfluxQuery(config.influx) : undefined,
      rollupSink,
    });
    metrics?.watch?.(pipeline);
    return { pipeline, state: store };
  } catch (error) {
    for (const opened of sinks) await opened.close().catch(() => undefined);
    store.close();
    throw error;
  }
}
