import cron, { type ScheduledTask } from "node-cron";
import type { Logger } from "pino";
import { scrubSecrets } from "../logger.js";
import { runBackfillJobs } from "../pipeline/backfill.js";
import type { Pipeline } from "../pipeline/pipeline.js";
import { runSync } from "../pipeline/sync.js";
import { messageOf } from "../util/errors.js";
import { HealthServer } from "./health-server.js";
import type { EtlMetrics } from "./metrics.js";

/** Options of the long-running service. */
export interface EtlServiceOptions {
  /** SYNC_CRON. */
  readonly cron: string;
  /** HTTP_PORT of the health server (0: any free port). */
  readonly httpPort: number;
  readonly httpHost?: string;
  /** Served on /metrics when given. */
  readonly metrics?: EtlMetrics;
}

/** How long /readyz waits for each check. */
const READINESS_TIMEOUT_MS = 5000;

const delay = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms).unref());

/** Outcome of one readiness check: "ok" or the reason it failed. */
export type CheckOutcome = "ok" | string;

/**
 * `energy-etl run`: a sync at start and on every SYNC_CRON tick (a tick that comes while the
 * previous sync still works is skipped with a log line), unfinished backfill jobs worked off in the
 * background, and the health server. {@link stop} takes no new work, lets in-flight requests
 * finish within a bound, flushes and records.
 */
export class EtlService {
  private task: ScheduledTask | undefined;
  private syncing: Promise<void> | undefined;
  private backfilling: Promise<void> | undefined;
  private readonly health: HealthServer;
  private readonly log: Logger;
  /** Port the health server listens on, once started. */
  port = 0;
  lastTickAt: Date | undefined;

  constructor(
    private readonly pipeline: Pipeline,
    private readonly options: EtlServiceOptions,
  ) {
    this.log = pipeline.logger.child({ component: "service" });
    const { metrics } = options;
    this.health = new HealthServer({
      "/healthz": async () => ({ status: 200, body: JSON.stringify({ status: "ok" }) }),
      "/readyz": async () => {
        const checks = await this.readiness();
        const failed = Object.entries(checks).filter(([, outcome]) => outcome !== "ok");
        const body = failed.length
          ? {
              status: "not ready",
              reason: failed.map(([name, why]) => `${name}: ${why}`).join("; "),
              checks,
            }
          : { status: "ready", checks };
        return { status: failed.length ? 503 : 200, body: scrubSecrets(JSON.stringify(body)) };
      },
      ...(metrics
        ? { "/metrics": async () => ({ status: 200, ...(await metrics.render()) }) }
        : {}),
    });
  }

  async start(): Promise<void> {
    this.port = await this.health.listen(this.options.httpPort, this.options.httpHost);
    this.log.info({ port: this.port, cron: this.options.cron }, "service started");
    this.task = cron.schedule(this.options.cron, () => this.tick(), { name: "sync" });
    this.tick();
  }

  /** One scheduler tick: a sync unless one is still running, then the backfill jobs. */
  tick(): void {
    if (this.pipeline.isStopping) return;
    this.lastTickAt = this.pipeline.now();
    if (this.syncing) {
      this.log.warn("previous sync still running: this tick is skipped");
      return;
    }
    this.syncing = runSync(this.pipeline)
      .then(
        () => undefined,
        (error: unknown) => {
          this.log.error({ error: messageOf(error) }, "sync failed");
        },
      )
      .finally(() => {
        this.syncing = undefined;
        this.drainBackfills();
      });
  }

  /**
   * Works off the backfill jobs that are due (not parked, not waiting after a failure) as one
   * recorded backfill run, unless already doing so.
   */
  drainBackfills(): void {
    if (this.backfilling || this.pipeline.isStopping) return;
    const nowS = Math.floor(this.pipeline.now().getTime() / 1000);
    const jobs = this.pipeline.store.jobs.due(nowS);
    if (jobs.length === 0) return;
    this.backfilling = runBackfillJobs(this.pipeline, jobs)
      .then(
        () => undefined,
        (error: unknown) => {
          this.log.error({ error: messageOf(error) }, "backfill run failed");
        },
      )
      .finally(() => {
        this.backfilling = undefined;
      });
  }

  /** InfluxDB reachable (token and bucket accepted), API token obtainable, scheduler alive. */
  async readiness(): Promise<Record<"influxdb" | "api" | "scheduler", CheckOutcome>> {
    const outcome = (promise: Promise<unknown>): Promise<CheckOutcome> =>
      Promise.race([
        promise.then(
          () => "ok",
          (error: unknown) => messageOf(error),
        ),
        delay(READINESS_TIMEOUT_MS).then(() => `no answer within ${READINESS_TIMEOUT_MS / 1000} s`),
      ]);
    const [influxdb, api] = await Promise.all([
      outcome(this.pipeline.sink.check?.() ?? Promise.resolve()),
      outcome(this.pipeline.client.accessToken()),
    ]);
    return { influxdb, api, scheduler: this.schedulerState() };
  }

  private schedulerState(): CheckOutcome {
    const task = this.task;
    if (!task || this.pipeline.isStopping) return "not running";
    const status = task.getStatus();
    if (status === "stopped" || status === "destroyed") return `scheduler ${status}`;
    const next = task.getNextRun();
    if (next && next.getTime() < Date.now() - 60_000) return "scheduler missed its ticks";
    return "ok";
  }

  /** Stops the scheduler and the pipeline (in-flight requests get `graceMs`), then the server. */
  async stop(graceMs: number): Promise<void> {
    await this.task?.stop();
    const started = Date.now();
    const finished = await this.pipeline.stop(graceMs);
    // a request still retrying (a long Retry-After) does not hold the shutdown past the grace
    const rest = Math.max(1000, graceMs - (Date.now() - started));
    await Promise.race([Promise.allSettled([this.syncing, this.backfilling]), delay(rest)]);
    await this.health.close();
    this.log.info({ finishedInTime: finished }, "service stopped");
  }
}
