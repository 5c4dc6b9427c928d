import type { Logger } from "pino";
import { type BackfillRunParts, runBackfillJobs } from "../pipeline/backfill.js";
import { type CatalogRunParts, runCatalogRefresh } from "../pipeline/catalog-refresh.js";
import { syncRules } from "../pipeline/cursor.js";
import { watchMemory } from "../pipeline/memory-budget.js";
import type { Pipeline } from "../pipeline/pipeline.js";
import { runSync, type SyncRunParts } from "../pipeline/sync.js";
import type { StateStore } from "../state/state-store.js";
import { sleep } from "../util/timers.js";
import { BackfillDrain, CatalogRefresher, SyncTicks } from "./background-runs.js";
import { ServiceFailures } from "./failures.js";
import { type HealthHandler, HealthServer } from "./health-server.js";
import { LockHeartbeat } from "./lock-heartbeat.js";
import type { EtlMetrics } from "./metrics.js";
import { Readiness, type ReadinessRules } from "./readiness.js";
import { Scheduler } from "./scheduler.js";

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
  /** The state file: the service lock on it, and whether it is still the one in use. */
  readonly state: Pick<StateStore, "locks" | "path" | "isOpen" | "checkFile">;
  /** MEMORY_BUDGET_MB. */
  readonly memoryBudgetMb: number;
  /** The resident memory MEMORY_BUDGET_MB judges, in MB (default: this process's). */
  readonly residentMb?: () => number;
}

/** What the service runs and asks: its syncs, backfills and catalog runs, the sink and the API. */
export type ServicePipeline = SyncRunParts &
  BackfillRunParts &
  CatalogRunParts &
  Pick<Pipeline, "sink" | "stop">;

/** The health server's routes: /healthz, /readyz, and /metrics when there are metrics. */
function healthRoutes(readyz: HealthHandler, metrics: EtlMetrics | undefined) {
  return {
    "/healthz": async () => ({ status: 200, body: JSON.stringify({ status: "ok" }) }),
    "/readyz": readyz,
    ...(metrics ? { "/metrics": async () => ({ status: 200, ...(await metrics.render()) }) } : {}),
  };
}

/**
 * `energy-etl run`: the service lock, a sync at start and on every SYNC_CRON tick, backfill jobs
 * and catalogs in the background, /healthz, /readyz, /metrics, the state file watched.
 */
export class EtlService {
  private readonly log: Logger;
  private readonly lock: LockHeartbeat;
  private readonly backfills: BackfillDrain;
  private readonly catalogs: CatalogRefresher;
  private readonly ticks: SyncTicks;
  private readonly scheduler: Scheduler;
  private readonly checks: Readiness;
  private readonly health: HealthServer;
  private readonly failures: ServiceFailures;
  /** Stops the watch on MEMORY_BUDGET_MB that start() began. */
  private unwatchMemory = () => {};
  private stopped = false;
  /** Resolves with the error that stopped the service by itself (its state file went away). */
  readonly failure: Promise<Error>;
  /** Port the health server listens on, once started. */
  port = 0;

  constructor(
    private readonly pipeline: ServicePipeline,
    private readonly options: EtlServiceOptions,
  ) {
    const { store, owner, config } = pipeline;
    const { state } = options;
    const log = pipeline.logger.child({ component: "service" });
    const failures = new ServiceFailures(log, () => this.stopped);
    this.failures = failures;
    const fatal = (error: Error) => failures.fatal(error);
    const now = () => pipeline.now();
    const isStopping = () => pipeline.isStopping;
    this.log = log;
    this.failure = failures.failure;
    this.lock = new LockHeartbeat({
      store: state,
      owner,
      log,
      nowMs: Date.now,
      mayRenew: () => !this.stopped && failures.stateFileInUse(state),
      fatal,
    });
    this.backfills = new BackfillDrain({
      failures,
      isStopping,
      store,
      owner,
      now,
      nowMs: Date.now,
      run: (jobs) => runBackfillJobs(pipeline, jobs),
    });
    this.catalogs = new CatalogRefresher({
      failures,
      isStopping,
      refresh: () => runCatalogRefresh(pipeline),
      // history jobs of values that appeared run at once, not at the next tick
      afterRefresh: () => this.backfills.drain(),
    });
    this.ticks = new SyncTicks({
      log,
      failures,
      mayTick: () => !pipeline.isStopping && failures.stateFileInUse(state),
      // the tick takes the stored catalogs; the catalog run refreshes the due ones between ticks
      sync: () => runSync(pipeline, { catalog: "stored" }),
      afterSync: () => {
        this.backfills.drain();
        this.catalogs.refresh();
      },
    });
    this.scheduler = new Scheduler(options.cron, () => this.tick());
    this.checks = new Readiness({
      rules: options.readiness,
      stopping: () => this.stopped || pipeline.isStopping,
      sink: pipeline.sink,
      client: pipeline.client,
      scheduler: this.scheduler,
      store: { runs: store.runs, cursors: store.cursors, checkFile: () => state.checkFile() },
      apiNow: () => pipeline.apiNow(),
      silenceAt: (nowS) => syncRules(config, nowS),
      nowMs: Date.now,
    });
    this.health = new HealthServer(healthRoutes(this.checks.route, options.metrics));
  }

  /** Takes the service lock (or throws StateInUseError), starts the health server and ticks. */
  async start(): Promise<void> {
    const { httpPort, httpHost, cron } = this.options;
    this.lock.hold();
    try {
      this.port = await this.health.listen(httpPort, httpHost);
    } catch (error) {
      this.lock.release();
      throw error;
    }
    this.log.info({ host: httpHost, port: this.port, cron }, "service started");
    this.scheduler.start();
    this.unwatchMemory = watchMemory({
      budgetMb: this.options.memoryBudgetMb,
      logger: this.log,
      onOver: (error) => this.failures.fatal(error),
      ...(this.options.residentMb ? { rssMb: this.options.residentMb } : {}),
    });
    this.tick();
  }

  /**
   * A sync unless one is running, then due jobs and catalogs; the sync, or undefined if skipped.
   */
  tick(): Promise<void> | undefined {
    return this.ticks.tick();
  }

  /** Resolves once no sync, catalog run or backfill run is under way (what one started, too). */
  async idle(): Promise<void> {
    while (this.ticks.current || this.catalogs.current || this.backfills.current) {
      await Promise.allSettled(this.underWay());
    }
  }

  /** Stops ticking and the pipeline (in-flight work gets `graceMs`, then is aborted). */
  async stop(graceMs: number): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.lock.stop();
    this.unwatchMemory();
    await this.scheduler.stop();
    const finished = await this.pipeline.stop(graceMs);
    // what was aborted settles at once; never wait on it beyond a moment
    await Promise.race([Promise.allSettled(this.underWay()), sleep(1000, { unref: true })]);
    await this.health.close();
    this.lock.releaseAtStop();
    this.log.info({ finishedInTime: finished }, "service stopped");
  }

  /** The sync, catalog run and backfill run under way (undefined where none is). */
  private underWay(): (Promise<void> | undefined)[] {
    return [this.ticks.current, this.catalogs.current, this.backfills.current];
  }
}
