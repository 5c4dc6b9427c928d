import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { ApiTelemetry, AttemptInfo } from "../api/api-request.js";
import { ApiError } from "../api/errors.js";
import { InfluxWriteError } from "../influx/write-errors.js";
import type { ChunkMetrics } from "../pipeline/chunk-runner.js";
import type { ChunkResult } from "../pipeline/chunk-writer.js";
import { silentSince, syncRules } from "../pipeline/cursor.js";
import type { Pipeline } from "../pipeline/pipeline.js";

const PREFIX = "energy_etl_";

/**
 * The service's Prometheus metrics (`GET /metrics`): API requests by endpoint and status, retries,
 * 429s, points written, write errors, chunk durations, queue size, watermark lag per device, the
 * last run, backfill progress. Counters are fed where results arrive (the API client's requester,
 * the chunk runner); gauges are read from the pipeline when scraped.
 */
export class EtlMetrics implements ApiTelemetry, ChunkMetrics {
  readonly registry = new Registry();
  private readonly apiRequests = new Counter({
    name: `${PREFIX}api_requests_total`,
    help: "HTTP attempts to the Energy Monitoring Data API by endpoint and status (or error code)",
    labelNames: ["endpoint", "status"],
    registers: [this.registry],
  });
  private readonly apiRetries = new Counter({
    name: `${PREFIX}api_retries_total`,
    help: "Retries of API requests by endpoint and error code",
    labelNames: ["endpoint", "code"],
    registers: [this.registry],
  });
  private readonly apiInFlight = new Gauge({
    name: `${PREFIX}api_requests_in_flight`,
    help: "HTTP attempts to the API sent and not yet ended",
    registers: [this.registry],
  });
  private readonly rateLimited = new Counter({
    name: `${PREFIX}api_rate_limited_total`,
    help: "API answers 429 (rate limited)",
    registers: [this.registry],
  });
  private readonly points = new Counter({
    name: `${PREFIX}points_written_total`,
    help: "Points accepted by the sink",
    registers: [this.registry],
  });
  private readonly writeErrors = new Counter({
    name: `${PREFIX}write_errors_total`,
    help: "Chunks whose write failed, by code (auth_failed, bucket_not_found, bad_data, unavailable); lines refused one by one are dead letters",
    labelNames: ["code"],
    registers: [this.registry],
  });
  private readonly chunkErrors = new Counter({
    name: `${PREFIX}chunk_errors_total`,
    help: "Chunks that failed, by stage (api, write) and code",
    labelNames: ["stage", "code"],
    registers: [this.registry],
  });
  private readonly dropped = new Counter({
    name: `${PREFIX}dropped_total`,
    help: "What answers held beyond what was asked for, dropped: members not requested, rows outside the window, duplicate rows",
    labelNames: ["what"],
    registers: [this.registry],
  });
  private readonly deadLettered = new Counter({
    name: `${PREFIX}dead_lettered_total`,
    help: "Rows, members and lines kept as dead letters (including ones read again)",
    registers: [this.registry],
  });
  private readonly chunkDuration = new Histogram({
    name: `${PREFIX}chunk_duration_seconds`,
    help: "Time to fetch, transform and write one chunk",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });

  /** Registers the gauges that read the pipeline's state when scraped. */
  watch(pipeline: Pipeline): void {
    const registers = [this.registry];
    new Gauge({
      name: `${PREFIX}queue_size`,
      help: "Fetch jobs waiting or running in the queue",
      registers,
      collect() {
        this.set(pipeline.chunks.queue.size + pipeline.chunks.queue.pending);
      },
    });
    new Gauge({
      name: `${PREFIX}api_rate_limit_per_second`,
      help: "Current request rate of the rate gate (lower after 429s)",
      registers,
      collect() {
        if (pipeline.gate) this.set(pipeline.gate.currentRatePerSecond);
      },
    });
    new Gauge({
      name: `${PREFIX}cursor_lag_seconds`,
      help: "Seconds between now and the newest record written, per device and resource",
      labelNames: ["device_id", "resource_id"],
      registers,
      collect() {
        this.reset();
        const nowS = Math.floor(pipeline.apiNow().getTime() / 1000);
        for (const c of pipeline.store.cursors.list()) {
          this.set(
            { device_id: c.deviceId, resource_id: c.resourceId },
            Math.max(0, nowS - (c.newestRecordS ?? c.startedS)),
          );
        }
      },
    });
    new Gauge({
      name: `${PREFIX}silent_since_seconds`,
      help: "Epoch seconds since when a silent device resource has sent nothing (only silent ones)",
      labelNames: ["device_id", "resource_id"],
      registers,
      collect() {
        this.reset();
        const nowS = Math.floor(pipeline.apiNow().getTime() / 1000);
        const rules = syncRules(pipeline.config, nowS);
        for (const c of pipeline.store.cursors.list()) {
          const since = silentSince(c, nowS, rules);
          if (since !== undefined) {
            this.set({ device_id: c.deviceId, resource_id: c.resourceId }, since);
          }
        }
      },
    });
    new Gauge({
      name: `${PREFIX}dead_letters`,
      help: "Dead letters kept in the state database, per device and resource",
      labelNames: ["device_id", "resource_id"],
      registers,
      collect() {
        this.reset();
        for (const c of pipeline.store.deadLetters.countByResource()) {
          this.set({ device_id: c.deviceId, resource_id: c.resourceId }, c.count);
        }
      },
    });
    new Gauge({
      name: `${PREFIX}parked_jobs`,
      help: "Backfill jobs parked after failing PARK_AFTER times",
      registers,
      collect() {
        this.set(pipeline.store.jobs.parked().length);
      },
    });
    const lastRun = (kind: "sync" | "backfill") => pipeline.store.runs.last(kind);
    new Gauge({
      name: `${PREFIX}last_run_timestamp_seconds`,
      help: "End of the last finished run, by kind",
      labelNames: ["kind"],
      registers,
      collect() {
        for (const kind of ["sync", "backfill"] as const) {
          const run = lastRun(kind);
          if (run?.endedAt) this.set({ kind }, Date.parse(run.endedAt) / 1000);
        }
      },
    });
    new Gauge({
      name: `${PREFIX}last_run_success`,
      help: "1 when the last finished run of the kind was ok, else 0",
      labelNames: ["kind"],
      registers,
      collect() {
        for (const kind of ["sync", "backfill"] as const) {
          const run = lastRun(kind);
          if (run?.endedAt) this.set({ kind }, run.status === "ok" ? 1 : 0);
        }
      },
    });
    new Gauge({
      name: `${PREFIX}backfill_chunks`,
      help: "Chunks of unfinished backfill jobs, by state (done, total)",
      labelNames: ["state"],
      registers,
      collect() {
        const jobs = pipeline.store.jobs.unfinished();
        this.set(
          { state: "done" },
          jobs.reduce((n, j) => n + j.chunksDone, 0),
        );
        this.set(
          { state: "total" },
          jobs.reduce((n, j) => n + j.chunksTotal, 0),
        );
      },
    });
  }

  attemptSent(): void {
    this.apiInFlight.inc();
  }

  attemptEnded(attempt: AttemptInfo): void {
    this.apiInFlight.dec();
    this.apiRequests.inc({
      endpoint: attempt.route,
      status: attempt.status ?? attempt.code ?? "error",
    });
    if (attempt.status === 429) this.rateLimited.inc();
  }

  retried(retry: { readonly route: string; readonly code: string }): void {
    this.apiRetries.inc({ endpoint: retry.route, code: retry.code });
  }

  chunkDone(durationS: number, result: ChunkResult): void {
    this.chunkDuration.observe(durationS);
    this.points.inc(result.points);
    this.deadLettered.inc(result.deadLetters);
    this.dropped.inc({ what: "members" }, result.dropped.extraMembers);
    this.dropped.inc({ what: "rows_outside_window" }, result.dropped.outOfWindow);
    this.dropped.inc({ what: "duplicate_rows" }, result.dropped.duplicates);
  }

  chunkFailed(error: unknown): void {
    if (error instanceof InfluxWriteError) {
      this.writeErrors.inc({ code: error.code });
      this.chunkErrors.inc({ stage: "write", code: error.code });
    } else {
      this.chunkErrors.inc({
        stage: "api",
        code: error instanceof ApiError ? error.code : "other",
      });
    }
  }

  /** The text exposition format for `GET /metrics`. */
  async render(): Promise<{ type: string; body: string }> {
    return { type: this.registry.contentType, body: await this.registry.metrics() };
  }
}
