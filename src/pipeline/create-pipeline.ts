import type { Logger } from "pino";
import { ApiClient } from "../api/client.js";
import { RateGate } from "../api/rate-gate.js";
import { apiClientSettings, type Config } from "../config.js";
import { createPointSink } from "../influx/create-sink.js";
import type { EtlMetrics } from "../service/metrics.js";
import { StateStore } from "../state/state-store.js";
import { Pipeline } from "./pipeline.js";

/** Options of {@link openPipeline}. */
export interface OpenPipelineOptions {
  /** Line-protocol file instead of InfluxDB (`-` for stdout). */
  readonly output?: string;
  readonly now?: () => Date;
  /** Metrics fed by the client's and the pipeline's hooks (the service's /metrics). */
  readonly metrics?: EtlMetrics;
}

/**
 * Wires a pipeline from the configuration: the state database (migrated), the API client paced
 * by a rate gate (API_RATE_LIMIT), and the sink (InfluxDB after its start-up check, or a
 * line-protocol file).
 */
export async function openPipeline(
  config: Config,
  logger: Logger,
  options: OpenPipelineOptions = {},
): Promise<Pipeline> {
  const settings = apiClientSettings(config);
  const store = StateStore.open(config.state.db, { logger });
  try {
    const sink = await createPointSink(config, logger, options.output);
    const gate = new RateGate({ ratePerSecond: config.api.rateLimit });
    const { metrics, now } = options;
    const client = new ApiClient({
      ...settings,
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
    });
    metrics?.watch(pipeline);
    return pipeline;
  } catch (error) {
    store.close();
    throw error;
  }
}
