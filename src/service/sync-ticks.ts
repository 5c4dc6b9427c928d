import type { Logger } from "pino";
import type { ServiceFailures } from "./failures.js";

/** What {@link SyncTicks} works with. */
export interface SyncTicksParts {
  readonly log: Logger;
  readonly failures: Pick<ServiceFailures, "settled">;
  /** False while the service stops, or once its state file is gone: the tick is skipped. */
  readonly mayTick: () => boolean;
  /** The pipeline's clock (when the last tick was). */
  readonly now: () => Date;
  /** One sync, as one recorded run. */
  readonly sync: () => Promise<unknown>;
  /** What follows each sync once it settled (the backfill jobs and catalogs that are due). */
  readonly afterSync: () => void;
}

/**
 * The SYNC_CRON ticks' work: a sync on each tick, unless the previous one still works (then the
 * tick is skipped with a warning), followed by {@link SyncTicksParts.afterSync}.
 */
export class SyncTicks {
  private syncing: Promise<void> | undefined;
  private lastTick: Date | undefined;

  constructor(private readonly parts: SyncTicksParts) {}

  /** When the last tick that was not skipped for stopping came (a skipped busy tick counts). */
  get lastTickAt(): Date | undefined {
    return this.lastTick;
  }

  /** The sync under way, if any; it settles, never rejects. */
  get current(): Promise<void> | undefined {
    return this.syncing;
  }

  /**
   * One tick: a sync unless one is still running. Returns the tick's sync, which settles (never
   * rejects) once the sync is done; undefined when the tick was skipped.
   */
  tick(): Promise<void> | undefined {
    const { log, failures, mayTick, now, sync, afterSync } = this.parts;
    if (!mayTick()) return undefined;
    this.lastTick = now();
    if (this.syncing) {
      log.warn("previous sync still running: this tick is skipped");
      return undefined;
    }
    this.syncing = failures.settled(sync(), "sync failed", () => {
      this.syncing = undefined;
      afterSync();
    });
    return this.syncing;
  }
}
