/** The service's background runs, each one at a time: tick syncs, catalog refresh, backfills. */
import type { Logger } from "pino";
import type { Owner } from "../state/owner.js";
import type { StateStore } from "../state/state-store.js";
import type { BackfillJob } from "../state/types.js";
import { epochSeconds } from "../util/utc-time.js";
import type { ServiceFailures } from "./failures.js";

/** Runs of one kind, never two at once; each settles (a failure goes to `failures` as `what`). */
class OneAtATime {
  private running: Promise<void> | undefined;

  constructor(
    private readonly failures: Pick<ServiceFailures, "settled">,
    private readonly what: string,
  ) {}

  /** The run under way, if any; it settles, never rejects. */
  get current(): Promise<void> | undefined {
    return this.running;
  }

  /** Starts `run` unless one is under way (then undefined); `after` follows once it settled. */
  protected start(run: () => Promise<unknown>, after = () => {}): Promise<void> | undefined {
    if (this.running) return undefined;
    this.running = this.failures.settled(run(), this.what, () => {
      this.running = undefined;
      after();
    });
    return this.running;
  }
}

export interface SyncTicksParts {
  readonly log: Logger;
  readonly failures: Pick<ServiceFailures, "settled">;
  /** False while the service stops, or once its state file is gone: the tick is skipped. */
  readonly mayTick: () => boolean;
  readonly sync: () => Promise<unknown>;
  /** What follows each sync once it settled (the backfill jobs and catalogs that are due). */
  readonly afterSync: () => void;
}

/** A sync on each SYNC_CRON tick, unless the previous one still works (then a warning). */
export class SyncTicks extends OneAtATime {
  constructor(private readonly parts: SyncTicksParts) {
    super(parts.failures, "sync failed");
  }

  /** One tick: returns its sync (it settles, never rejects), or undefined when it was skipped. */
  tick(): Promise<void> | undefined {
    const { log, mayTick, sync, afterSync } = this.parts;
    if (!mayTick()) return undefined;
    if (this.current) {
      log.warn("previous sync still running: this tick is skipped");
      return undefined;
    }
    return this.start(sync, afterSync);
  }
}

export interface CatalogRefresherParts {
  readonly failures: Pick<ServiceFailures, "settled">;
  readonly isStopping: () => boolean;
  /** One catalog run: reads again the catalogs that are due (CATALOG_REFRESH). */
  readonly refresh: () => Promise<unknown>;
  /** What follows each catalog run once it settled (history jobs of values that appeared). */
  readonly afterRefresh: () => void;
}

/** The catalog refresh between ticks (a tick's sync takes the stored catalogs). */
export class CatalogRefresher extends OneAtATime {
  constructor(private readonly parts: CatalogRefresherParts) {
    super(parts.failures, "catalog refresh failed");
  }

  /** Starts a catalog run unless one is under way or the pipeline stops. */
  refresh(): void {
    const { isStopping, refresh, afterRefresh } = this.parts;
    if (!isStopping()) this.start(refresh, afterRefresh);
  }
}

export interface BackfillDrainParts {
  readonly failures: Pick<ServiceFailures, "settled">;
  readonly isStopping: () => boolean;
  readonly store: Pick<StateStore, "jobs">;
  /** This process (jobs leased by another process are not due here). */
  readonly owner: Owner;
  /** The pipeline's clock (when a job is due). */
  readonly now: () => Date;
  /** Epoch ms, for the jobs' leases (the real clock). */
  readonly nowMs: () => number;
  readonly run: (jobs: readonly BackfillJob[]) => Promise<unknown>;
}

/** Works off the backfill jobs that are due as one recorded backfill run. */
export class BackfillDrain extends OneAtATime {
  constructor(private readonly parts: BackfillDrainParts) {
    super(parts.failures, "backfill run failed");
  }

  /** Starts a backfill run over the due jobs, unless one is under way, none is due, or stopping. */
  drain(): void {
    const { isStopping, store, owner, now, nowMs, run } = this.parts;
    if (this.current || isStopping()) return;
    const jobs = store.jobs.due(epochSeconds(now()), owner, nowMs());
    if (jobs.length > 0) this.start(() => run(jobs));
  }
}
