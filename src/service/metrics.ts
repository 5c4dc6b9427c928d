import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { ApiTelemetry, AttemptInfo } from "../api/api-request.js";
import { ApiError } from "../api/errors.js";
import type { Config } from "../config.js";
import { InfluxWriteError, WRITE_ERROR_CODES } from "../influx/write-errors.js";
import type { ChunkMetrics } from "../pipeline/chunk-runner.js";
import type { ChunkResult } from "../pipeline/chunk-writer.js";
import { silentSince, syncRules } from "../pipeline/cursor.js";
import type { Pipeline } from "../pipeline/pipeline.js";
import type { StateStore } from "../state/state-store.js";
import { epochSeconds } from "../util/utc-time.js";

const PREFIX = "energy_etl_";

/** One sample of a gauge: its label values (none for a gauge without labels) and its value. */
type Sample = readonly [labels: Readonly<Record<string, string>>, value: number];

/** What the gauges read when scraped: the queue, the rate gate, the API's clock, the state. */
export type WatchedParts = Pick<Pipeline, "chunks" | "gate" | "apiNow"> & {
  readonly store: Pick<StateStore, "runs" | "cursors" | "deadLetters" | "jobs">;
  readonly config: Pick<Config, "sync">;
};

/** A gauge read from the pipeline when scraped. */
interface WatchedGauge {
  readonly name: string;
  readonly help: string;
  readonly labelNames?: readonly string[];
  /** Each scrape replaces the label sets: one not read again is gone (else it keeps its value). */
  readonly replace?: true;
  read(parts: WatchedParts): Iterable<Sample>;
}

const byResource = ["device_id", "resource_id"] as const;
const resourceLabels = (of: { deviceId: string; resourceId: string }) => ({
  device_id: of.deviceId,
  resource_id: of.resourceId,
});
const KINDS = ["sync", "backfill"] as const;
const lastRuns = (parts: WatchedParts) =>
  KINDS.flatMap((kind) => {
    const run = parts.store.runs.last(kind);
    return run?.endedAt ? [{ kind, endedAt: run.endedAt, ok: run.status === "ok" }] : [];
  });

/** The series of `dropped_total` (label `what`), by the field of a chunk's dropped counts. */
const DROPPED = {
  members: "extraMembers",
  rows_outside_window: "outOfWindow",
  duplicate_rows: "duplicates",
} as const;

/** The gauges {@link EtlMetrics.watch} registers, in the order they are exposed. */
const WATCHED: readonly WatchedGauge[] = [
  {
    name: "queue_size",
    help: "Fetch jobs waiting or running in the queue",
    read: ({ chunks }) => [[{}, chunks.queue.size + chunks.queue.pending]],
  },
  {
    name: "answer_budget_held_bytes",
    help: "Bytes the data answers in flight hold of API_ANSWER_BUDGET_MB",
    read: ({ chunks }) => [[{}, chunks.budget.held]],
  },
  {
    name: "answer_budget_waiting",
    help: "Data requests waiting for room in API_ANSWER_BUDGET_MB",
    read: ({ chunks }) => [[{}, chunks.budget.waiting]],
  },
  {
    name: "api_rate_limit_per_second",
    help: "Current request rate of the rate gate (lower after 429s)",
    read: ({ gate }) => (gate ? [[{}, gate.currentRatePerSecond]] : []),
  },
  {
    name: "cursor_lag_seconds",
    help: "Seconds between now and the newest record written, per device and resource",
    labelNames: byResource,
    replace: true,
    read: (parts) => {
      const nowS = epochSeconds(parts.apiNow());
      return parts.store.cursors
        .list()
        .map((c) => [resourceLabels(c), Math.max(0, nowS - (c.newestRecordS ?? c.startedS))]);
    },
  },
  {
    name: "silent_since_seconds",
    help: "Epoch seconds since when a silent device resource has sent nothing (only silent ones)",
    labelNames: byResource,
    replace: true,
    read: (parts) => {
      const nowS = epochSeconds(parts.apiNow());
      const rules = syncRules(parts.config, nowS);
      return parts.store.cursors.list().flatMap((c): Sample[] => {
        const since = silentSince(c, nowS, rules);
        return since === undefined ? [] : [[resourceLabels(c), since]];
      });
    },
  },
  {
    name: "dead_letters",
    help: "Dead letters kept in the state database, per device and resource",
    labelNames: byResource,
    replace: true,
    read: ({ store }) =>
      store.deadLetters.countByResource().map((c) => [resourceLabels(c), c.count]),
  },
  {
    name: "parked_jobs",
    help: "Backfill jobs parked after failing PARK_AFTER times",
    read: ({ store }) => [[{}, store.jobs.parked().length]],
  },
  {
    name: "last_run_timestamp_seconds",
    help: "End of the last finished run, by kind",
    labelNames: ["kind"],
    read: (parts) => lastRuns(parts).map((r) => [{ kind: r.kind }, Date.parse(r.endedAt) / 1000]),
  },
  {
    name: "last_run_success",
    help: "1 when the last finished run of the kind was ok, else 0",
    labelNames: ["kind"],
    read: (parts) => lastRuns(parts).map((r) => [{ kind: r.kind }, r.ok ? 1 : 0]),
  },
  {
    name: "backfill_chunks",
    help: "Chunks of unfinished backfill jobs, by state (done, total)",
    labelNames: ["state"],
    read: ({ store }) => {
      const jobs = store.jobs.unfinished();
      return [
        [{ state: "done" }, jobs.reduce((n, j) => n + j.chunksDone, 0)],
        [{ state: "total" }, jobs.reduce((n, j) => n + j.chunksTotal, 0)],
      ];
    },
  },
];

/**
 * The service's Prometheus metrics (`GET /metrics`). Counters are fed where results arrive (the
 * API client's requester, the chunk runner); gauges are read from the pipeline when scraped.
 */
export class EtlMetrics implements ApiTelemetry, ChunkMetrics {
  readonly registry = new Registry();
  private readonly apiRequests = this.counter(
    "api_requests_total",
    "HTTP attempts to the Energy Monitoring Data API by endpoint and status (or error code)",
    ["endpoint", "status"],
  );
  private readonly apiRetries = this.counter(
    "api_retries_total",
    "Retries of API requests by endpoint and error code",
    ["endpoint", "code"],
  );
  private readonly apiInFlight = new Gauge(
    this.named("api_requests_in_flight", "HTTP attempts to the API sent and not yet ended"),
  );
  private readonly rateLimited = this.counter(
    "api_rate_limited_total",
    "API answers 429 (rate limited)",
  );
  private readonly points = this.counter("points_written_total", "Points accepted by the sink");
  private readonly writeErrors = this.counter(
    "write_errors_total",
    "Chunks whose write failed, by code (auth_failed, bucket_not_found, bad_data, refused: InfluxDB refused the write as a whole, unavailable); lines refused among lines taken are dead letters",
    ["code"],
  );
  private readonly chunkErrors = this.counter(
    "chunk_errors_total",
    "Chunks that failed, by stage (api, write) and code",
    ["stage", "code"],
  );
  private readonly dropped = this.counter(
    "dropped_total",
    "What answers held beyond what was asked for, dropped: members not requested, rows outside the window, duplicate rows",
    ["what"],
  );
  private readonly deadLettered = this.counter(
    "dead_lettered_total",
    "Rows, members and lines kept as dead letters (including ones read again)",
  );
  private readonly chunkDuration = new Histogram({
    ...this.named("chunk_duration_seconds", "Time to fetch, transform and write one chunk"),
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120],
  });

  constructor() {
    // every series of `dropped` shown from the start, at 0
    for (const what of Object.keys(DROPPED)) this.dropped.inc({ what }, 0);
    // and every write error code, so that a rate over `refused` has a series before the first
    for (const code of WRITE_ERROR_CODES) this.writeErrors.inc({ code }, 0);
  }

  /** Registers the gauges that read the pipeline's state when scraped. */
  watch(parts: WatchedParts): void {
    for (const gauge of WATCHED) {
      new Gauge({
        ...this.named(gauge.name, gauge.help),
        labelNames: gauge.labelNames ?? [],
        collect() {
          if (gauge.replace) this.reset();
          for (const [labels, value] of gauge.read(parts)) this.set(labels, value);
        },
      });
    }
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
    // most chunks drop nothing: a labelled increment by 0 costs as much as one by 1
    for (const [what, field] of Object.entries(DROPPED)) {
      const count = result.dropped[field];
      if (count > 0) this.dropped.inc({ what }, count);
    }
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

  /** A counter of this registry, named with the prefix. */
  private counter<L extends string>(name: string, help: string, labelNames: readonly L[] = []) {
    return new Counter<L>({ ...this.named(name, help), labelNames });
  }

  /** A metric's name (with the prefix), help, and this registry. */
  private named(name: string, help: string) {
    return { name: `${PREFIX}${name}`, help, registers: [this.registry] };
  }

  /** The text exposition format for `GET /metrics`. */
  async render(): Promise<{ type: string; body: string }> {
    return { type: this.registry.contentType, body: await this.registry.metrics() };
  }
}
