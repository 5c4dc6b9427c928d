import type { Logger } from "pino";
import { scrubSecrets } from "../logger.js";
import { runBackfillJobs } from "../pipeline/backfill.js";
import { runCatalogRefresh } from "../pipeline/catalog-refresh.js";
import { silentSince, syncRules } from "../pipeline/cursor.js";
import { watchMemory } from "../pipeline/memory-budget.js";
import type { Pipeline } from "../pipeline/pipeline.js";
import { runSync } from "../pipeline/sync.js";
import {
  acquireServiceLock,
  LOCK_TTL_MS,
  SERVICE_LOCK,
  StateInUseError,
} from "../state/service-lock.js";
import { StateError } from "../state/state-error.js";
import { messageOf } from "../util/errors.js";
import { sleep } from "../util/timers.js";
import { epochSeconds } from "../util/utc-time.js";
import { HealthServer } from "./health-server.js";
import type { EtlMetrics } from "./metrics.js";
import { type CheckOutcome, Scheduler } from "./scheduler.js";

export type { CheckOutcome } from "./scheduler.js";

/** What /readyz holds against. */
export interface ReadinessRules {
  /** Not ready when a resource that is not silent lags more than this (READY_MAX_LAG). */
  readonly maxLagS: number;
  /** Not ready after this many failed syncs in a row (READY_FAILED_SYNCS). */
  readonly failedSyncs: number;
  /** InfluxDB and the API are asked at most this often; answers are cached between. */
  readonly checkIntervalMs: number;
}

/** Options of the long-running service. */
export interface EtlServiceOptions {
  /** SYNC_CRON. */
  readonly cron: string;
  /** HTTP_PORT of the health server (0: any free port). */
  readonly httpPort: number;
  /** HTTP_HOST of the health server. */
  readonly httpHost: string;
  readonly readiness: ReadinessRules;
  /** Served on /metrics when given. */
  readonly metrics?: EtlMetrics;
}

/** How long /readyz waits for each check. */
const CHECK_TIMEOUT_MS = 5000;
/** The service lock ({@link SERVICE_LOCK}) is renewed this often. */
const HEARTBEAT_MS = 10_000;

/** A busy or locked database (another process's long transaction): tried again, not fatal. */
function isTransient(error: StateError): boolean {
  return (
    error.code?.startsWith("SQLITE_BUSY") === true ||
    error.code?.startsWith("SQLITE_LOCKED") === true
  );
}

interface CachedCheck {
  at: number;
  outcome: CheckOutcome;
  pending?: Promise<CheckOutcome>;
}

/**
 * `energy-etl run`: holds the service lock on its state, syncs at start and on every SYNC_CRON
 * tick (a tick while the previous sync still works is skipped), works off due backfill jobs in the
 * background, serves /healthz, /readyz and /metrics, and watches its state file. {@link stop}
 * takes no new work, lets in-flight work finish within a bound, then aborts what is open.
 */
export class EtlService {
  private syncing: Promise<void> | undefined;
  private backfilling: Promise<void> | undefined;
  private cataloging: Promise<void> | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private readonly scheduler: Scheduler;
  private readonly health: HealthServer;
  private readonly log: Logger;
  private readonly checks = new Map<string, CachedCheck>();
  private stopped = false;
  private failWith: (error: Error) => void = () => undefined;
  private unwatchMemory: () => void = () => undefined;
  /** Resolves with the error that stopped the service by itself (its state file went away). */
  readonly failure: Promise<Error>;
  /** Port the health server listens on, once started. */
  port = 0;
  lastTickAt: Date | undefined;

  constructor(
    private readonly pipeline: Pipeline,
    private readonly options: EtlServiceOptions,
  ) {
    this.log = pipeline.logger.child({ component: "service" });
    this.failure = new Promise((resolve) => {
      this.failWith = resolve;
    });
    this.scheduler = new Scheduler(options.cron, () => this.tick());
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

  /** Takes the service lock (or throws StateInUseError), starts the health server and ticks. */
  async start(): Promise<void> {
    const { store, owner } = this.pipeline;
    acquireServiceLock(store, owner);
    this.heartbeat = setInterval(() => this.beat(), HEARTBEAT_MS);
    this.heartbeat.unref();
    try {
      this.port = await this.health.listen(this.options.httpPort, this.options.httpHost);
    } catch (error) {
      clearInterval(this.heartbeat);
      store.locks.release(SERVICE_LOCK, owner);
      throw error;
    }
    this.log.info(
      { host: this.options.httpHost, port: this.port, cron: this.options.cron },
      "service started",
    );
    this.scheduler.start();
    this.unwatchMemory = watchMemory({
      budgetMb: this.pipeline.config.service.memoryBudgetMb,
      logger: this.log,
      onOver: (error) => this.fatal(error),
    });
    this.tick();
  }

  /**
   * One scheduler tick: a sync unless one is still running, then the due backfill jobs and
   * catalogs. Returns the tick's sync, which settles (never rejects) once the sync is done: its run
   * has ended in the runs table and the service takes the next tick. Undefined when the tick was
   * skipped (stopping, state file gone, or a sync still running: one whose run has not ended).
   */
  tick(): Promise<void> | undefined {
    if (this.pipeline.isStopping || !this.watchState()) return undefined;
    this.lastTickAt = this.pipeline.now();
    if (this.syncing) {
      this.log.warn("previous sync still running: this tick is skipped");
      return undefined;
    }
    // the tick takes the stored catalogs; the catalog run refreshes the due ones between ticks
    this.syncing = this.settled(
      runSync(this.pipeline, { catalog: "stored" }),
      "sync failed",
      () => {
        this.syncing = undefined;
        this.drainBackfills();
        this.refreshCatalogs();
      },
    );
    return this.syncing;
  }

  /** Resolves once no sync, catalog run or backfill run is under way (what one started, too). */
  async idle(): Promise<void> {
    while (this.syncing || this.cataloging || this.backfilling) {
      await Promise.allSettled([this.syncing, this.cataloging, this.backfilling]);
    }
  }

  /**
   * Reads again the catalogs last read CATALOG_REFRESH ago or more, as one recorded catalog run
   * whose requests queue behind data requests, unless already doing so.
   */
  refreshCatalogs(): void {
    if (this.cataloging || this.pipeline.isStopping) return;
    this.cataloging = this.settled(
      runCatalogRefresh(this.pipeline),
      "catalog refresh failed",
      () => {
        this.cataloging = undefined;
        // history jobs of values that appeared run at once, not at the next tick
        this.drainBackfills();
      },
    );
  }

  /**
   * Works off the backfill jobs that are due (not parked, not waiting after a failure, not leased
   * by another process) as one recorded backfill run, unless already doing so.
   */
  drainBackfills(): void {
    if (this.backfilling || this.pipeline.isStopping) return;
    const nowS = epochSeconds(this.pipeline.now());
    const jobs = this.pipeline.store.jobs.due(nowS, this.pipeline.owner, Date.now());
    if (jobs.length === 0) return;
    this.backfilling = this.settled(
      runBackfillJobs(this.pipeline, jobs),
      "backfill run failed",
      () => {
        this.backfilling = undefined;
      },
    );
  }

  /**
   * The checks behind /readyz: InfluxDB takes writes and an API token is obtainable (each asked
   * at most once per interval, cached between), the scheduler ticks, the last syncs did not all
   * fail, no resource that is not silent lags too much, and the state file is the one in use.
   */
  async readiness(): Promise<Record<string, CheckOutcome>> {
    if (this.stopped || this.pipeline.isStopping) return { service: "stopping" };
    const { sink, client } = this.pipeline;
    const check = sink.check?.bind(sink);
    const [influxdb, api] = await Promise.all([
      // a file sink has nothing to ask: no InfluxDB check is claimed for it
      check ? this.cached("influxdb", () => check()) : undefined,
      this.cached("api", () => client.accessToken()),
    ]);
    return {
      ...(influxdb === undefined ? {} : { influxdb }),
      api,
      scheduler: this.scheduler.state(Date.now()),
      syncs: this.recentSyncs(),
      lag: this.lagCheck(),
      state: this.stateCheck(),
    };
  }

  /** Stops ticking and the pipeline (in-flight work gets `graceMs`, then is aborted). */
  async stop(graceMs: number): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.heartbeat);
    this.unwatchMemory();
    await this.scheduler.stop();
    const finished = await this.pipeline.stop(graceMs);
    // what was aborted settles at once; never wait on it beyond a moment
    await Promise.race([
      Promise.allSettled([this.syncing, this.backfilling, this.cataloging]),
      sleep(1000, { unref: true }),
    ]);
    await this.health.close();
    const { store, owner } = this.pipeline;
    if (store.isOpen) {
      try {
        store.locks.release(SERVICE_LOCK, owner);
      } catch (error) {
        this.log.warn({ error: messageOf(error) }, "could not release the service lock");
      }
    }
    this.log.info({ finishedInTime: finished }, "service stopped");
  }

  private async cached(name: string, check: () => Promise<unknown>): Promise<CheckOutcome> {
    const now = Date.now();
    const entry = this.checks.get(name);
    if (entry && now - entry.at < this.options.readiness.checkIntervalMs) return entry.outcome;
    if (entry?.pending) return entry.pending;
    const pending = Promise.race([
      check().then(
        () => "ok",
        (error: unknown) => messageOf(error),
      ),
      sleep(CHECK_TIMEOUT_MS, { unref: true }).then(
        () => `no answer within ${CHECK_TIMEOUT_MS / 1000} s`,
      ),
    ]).then((outcome) => {
      this.checks.set(name, { at: Date.now(), outcome });
      return outcome;
    });
    this.checks.set(name, { at: entry?.at ?? 0, outcome: entry?.outcome ?? "ok", pending });
    return pending;
  }

  private recentSyncs(): CheckOutcome {
    const { failedSyncs } = this.options.readiness;
    const runs = this.pipeline.store.runs.recentFinished("sync", failedSyncs);
    if (runs.length < failedSyncs || runs.some((r) => r.status !== "failed")) return "ok";
    return `the last ${failedSyncs} syncs failed${runs[0]?.detail ? `: ${runs[0].detail}` : ""}`;
  }

  /**
   * How far behind the ETL's reading is: now minus the end of the last fully fetched window of
   * each resource that is not silent (a device without new data does not make the ETL unready;
   * that is the silent-device alert's business).
   */
  private lagCheck(): CheckOutcome {
    const nowS = epochSeconds(this.pipeline.apiNow());
    const rules = syncRules(this.pipeline.config, nowS);
    let worst: { name: string; lagS: number } | undefined;
    for (const c of this.pipeline.store.cursors.list()) {
      if (silentSince(c, nowS, rules) !== undefined) continue;
      const lagS = nowS - c.fetchedUntilS;
      if (!worst || lagS > worst.lagS) worst = { name: `${c.deviceId}/${c.resourceId}`, lagS };
    }
    if (!worst || worst.lagS <= this.options.readiness.maxLagS) return "ok";
    return `${worst.name} lags ${worst.lagS} s (READY_MAX_LAG ${this.options.readiness.maxLagS} s)`;
  }

  private stateCheck(): CheckOutcome {
    try {
      this.pipeline.store.checkFile();
      return "ok";
    } catch (error) {
      return messageOf(error);
    }
  }

  /** Renews the service lock and checks the state file; stops the service when either is lost. */
  private beat(): void {
    if (this.stopped || !this.watchState()) return;
    const { store, owner } = this.pipeline;
    try {
      if (!store.locks.renew(SERVICE_LOCK, owner, LOCK_TTL_MS, Date.now())) {
        this.fatal(
          new StateInUseError(
            `lost the service lock on STATE_DB ${store.path} to another process; stopping`,
          ),
        );
      }
    } catch (error) {
      if (error instanceof StateError && isTransient(error)) {
        this.log.warn(
          { error: messageOf(error) },
          "state database busy: the lock is renewed later",
        );
        return;
      }
      this.fatal(error instanceof Error ? error : new Error(messageOf(error)));
    }
  }

  /** True while the state file is the one in use; else stops the service. */
  private watchState(): boolean {
    try {
      this.pipeline.store.checkFile();
      return true;
    } catch (error) {
      this.fatal(error instanceof Error ? error : new Error(messageOf(error)));
      return false;
    }
  }

  /**
   * Background work that settles, never rejects: a failure goes to {@link failed} as `what`; then
   * `after` runs.
   */
  private settled(work: Promise<unknown>, what: string, after: () => void): Promise<void> {
    return work
      .then(
        () => undefined,
        (error: unknown) => this.failed(error, what),
      )
      .finally(after);
  }

  private failed(error: unknown, what: string): void {
    this.log.error({ error: messageOf(error) }, what);
    if (error instanceof StateError && !isTransient(error)) this.fatal(error);
  }

  /** A failure the service cannot go on with: logged once, then the run command stops it. */
  private fatal(error: Error): void {
    if (this.stopped) return;
    this.log.fatal({ error: messageOf(error) }, "the service cannot go on");
    this.failWith(error);
  }
}
