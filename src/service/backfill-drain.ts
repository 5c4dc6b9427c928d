import type { Owner } from "../state/owner.js";
import type { StateStore } from "../state/state-store.js";
import type { BackfillJob } from "../state/types.js";
import { epochSeconds } from "../util/utc-time.js";
import type { ServiceFailures } from "./failures.js";

/** What {@link BackfillDrain} works with. */
export interface BackfillDrainParts {
  readonly failures: Pick<ServiceFailures, "settled">;
  /** True once the pipeline stops: no new backfill run is started. */
  readonly isStopping: () => boolean;
  /** The backfill jobs, asked which are due. */
  readonly store: Pick<StateStore, "jobs">;
  /** This process (jobs leased by another process are not due here). */
  readonly owner: Owner;
  /** The pipeline's clock (when a job is due). */
  readonly now: () => Date;
  /** Epoch ms, for the jobs' leases (the real clock). */
  readonly nowMs: () => number;
  /** One backfill run over `jobs`. */
  readonly run: (jobs: readonly BackfillJob[]) => Promise<unknown>;
}

/**
 * Works off the backfill jobs that are due (not parked, not waiting after a failure, not leased by
 * another process) in the background, as one recorded backfill run at a time.
 */
export class BackfillDrain {
  private backfilling: Promise<void> | undefined;

  constructor(private readonly parts: BackfillDrainParts) {}

  /** The backfill run under way, if any; it settles, never rejects. */
  get current(): Promise<void> | undefined {
    return this.backfilling;
  }

  /** Starts a backfill run over the due jobs, unless one is under way, none is due, or stopping. */
  drain(): void {
    const { failures, isStopping, store, owner, now, nowMs, run } = this.parts;
    if (this.backfilling || isStopping()) return;
    const jobs = store.jobs.due(epochSeconds(now()), owner, nowMs());
    if (jobs.length === 0) return;
    this.backfilling = failures.settled(run(jobs), "backfill run failed", () => {
      this.backfilling = undefined;
    });
  }
}
