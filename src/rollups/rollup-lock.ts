/**
 * One rollup pass at a time per state database (two could write a base the other made stale):
 * this process's passes queue; another process's is waited for or left to run (marks stay due).
 */
import type { LockHolder, LockStore } from "../state/lock-store.js";
import type { Owner } from "../state/owner.js";
import { sleep } from "../util/timers.js";

export const ROLLUP_LOCK = "rollups";
/** The lease runs out this long after its last renewal (renewed every third of it). */
const TTL_MS = 30_000;
const POLL_MS = 500;

/** What holding the lock gave: the work's value, or who holds it (the work was not run). */
type Held<T> =
  | { readonly held: true; readonly value: T }
  | { readonly held: false; readonly holder: LockHolder };

export class RollupLock {
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly locks: Pick<LockStore, "acquire" | "renew" | "release">,
    private readonly owner: Owner,
  ) {}

  /** Runs `work` holding the lock; while another process holds it, waits while `wait()` says so. */
  async hold<T>(work: () => Promise<T>, wait: () => boolean = () => false): Promise<Held<T>> {
    let release = () => {};
    const turn = this.queue;
    this.queue = new Promise<void>((resolve) => {
      release = resolve;
    });
    try {
      await turn;
      for (;;) {
        const taken = this.locks.acquire(ROLLUP_LOCK, this.owner, TTL_MS, Date.now());
        if (taken.acquired) break;
        if (!wait()) return { held: false, holder: taken.holder };
        await sleep(POLL_MS);
      }
      // leases are a contract between processes: always the real clock
      const heartbeat = setInterval(() => {
        try {
          this.locks.renew(ROLLUP_LOCK, this.owner, TTL_MS, Date.now());
        } catch {
          // the state database is closing or busy: the next renewal tries again
        }
      }, TTL_MS / 3);
      heartbeat.unref();
      try {
        return { held: true, value: await work() };
      } finally {
        clearInterval(heartbeat);
        this.locks.release(ROLLUP_LOCK, this.owner);
      }
    } finally {
      release();
    }
  }
}
