import type { Logger } from "pino";
import { ApiClient } from "../api/client.js";
import { RateGate } from "../api/rate-gate.js";
import { apiClientSettings, type Config } from "../config.js";
import { DRY_RUN_SINK, pointSinkOpener } from "../influx/create-sink.js";
import type { EtlMetrics } from "../service/metrics.js";
import type { Owner } from "../state/owner.js";
import { StateStore } from "../state/state-store.js";
import { Pipeline } from "./pipeline.js";

/** Options of {@link openPipeline}. */
export interface OpenPipelineOptions {
  /** Line-protocol file instead of InfluxDB (`-` for stdout). */
  readonly output?: string;
  /** Plans only: no sink is opened (none is needed), and a write fails. */
  readonly dryRun?: boolean;
  readonly now?: () => Date;
  /** Metrics fed by the client's and the pipeline's hooks (the service's /metrics). */
  readonly metrics?: EtlMetrics;
  /** This process, for leases, locks and runs. */
  readonly owner?: Owner;
  /**
   * The clock and waits of the rate gate and of the client's retries (default: real time);
   * tests inject a virtual one so that 429 pauses and backoffs take no real time.
   */
  readonly timers?: { readonly now: () => number; readonly sleep: (ms: number) => Promise<void> };
}

/**
 * Wires a pipeline from the configuration: the state database (migrated), the API client paced
 * by a rate gate (API_RATE_LIMIT), and the sink (InfluxDB after its start-up check, or a
 * line-protocol file). With nowhere to write (and no dry run) it throws a ConfigError before
 * the state database is opened or created.
 */
export async function openPipeline(
  config: Config,
  logger: Logger,
  options: OpenPipelineOptions = {},
): Promise<Pipeline> {
  const settings = apiClientSettings(config);
  const openSink = options.dryRun
    ? async () => DRY_RUN_SINK
    : pointSinkOpener(config, logger, options.output);
  const store = StateStore.open(config.state.db, { logger });
  try {
    const sink = await openSink();
    const { metrics, now, owner, timers } = options;
    const gate = new RateGate({ ratePerSecond: config.api.rateLimit, ...timers });
    const client = new ApiClient({
      ...settings,
      ...timers,
      logger,
      gate,
      onAttempt: metrics?.apiAttempt,
      onRetry: metrics?.apiRetry,
    });
    const pipeline = new Pipeline({
      client,
      store,
      sink,
      config,
      logger,
      gate,
      observer: metrics,
      now,
      owner,
    });
    metrics?.watch(pipeline);
    return pipeline;
  } catch (error) {
    store.close();
    throw error;
  }
}
