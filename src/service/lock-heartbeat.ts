import type { Logger } from "pino";
import type { Owner } from "../state/owner.js";
import {
  acquireServiceLock,
  LOCK_TTL_MS,
  SERVICE_LOCK,
  StateInUseError,
} from "../state/service-lock.js";
import { StateError } from "../state/state-error.js";
import type { StateStore } from "../state/state-store.js";
import { messageOf } from "../util/errors.js";
import { isTransient } from "./failures.js";

/** The service lock ({@link SERVICE_LOCK}) is renewed this often. */
export const HEARTBEAT_MS = 10_000;

export interface LockHeartbeatParts {
  /** The state database's locks (and its path and whether it is open, for messages and release). */
  readonly store: Pick<StateStore, "locks" | "path" | "isOpen">;
  readonly owner: Owner;
  readonly log: Logger;
  /** Epoch ms the lock's lease is counted in (other processes read it: the real clock). */
  readonly nowMs: () => number;
  /** Whether this beat renews: false once the service stops or its state file is gone. */
  readonly mayRenew: () => boolean;
  /** The lock was lost, or cannot be renewed: the service cannot go on. */
  readonly fatal: (error: Error) => void;
}

/**
 * The service lock, held while the service lives: renewed every {@link HEARTBEAT_MS}, given back
 * at stop. Losing it stops the service; a busy database is tried again at the next beat.
 */
export class LockHeartbeat {
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly parts: LockHeartbeatParts) {}

  /** Takes the service lock (or throws StateInUseError) and starts renewing it. */
  hold(): void {
    const { store, owner, nowMs } = this.parts;
    acquireServiceLock(store, owner, nowMs());
    this.timer = setInterval(() => this.renew(), HEARTBEAT_MS);
    this.timer.unref();
  }

  /** Stops renewing; the lock stays held until released. */
  stop(): void {
    clearInterval(this.timer);
  }

  /** Stops renewing and gives the lock back; a failure to do so is thrown (a start that failed). */
  release(): void {
    this.stop();
    this.parts.store.locks.release(SERVICE_LOCK, this.parts.owner);
  }

  /** Gives the lock back if the database is still open; a failure to do so is only logged. */
  releaseAtStop(): void {
    const { store, owner, log } = this.parts;
    if (!store.isOpen) return;
    try {
      store.locks.release(SERVICE_LOCK, owner);
    } catch (error) {
      log.warn({ error: messageOf(error) }, "could not release the service lock");
    }
  }

  /** One beat: renews the lock unless told not to; losing it (or the database) is fatal. */
  renew(): void {
    const { store, owner, log, nowMs, mayRenew, fatal } = this.parts;
    if (!mayRenew()) return;
    try {
      if (!store.locks.renew(SERVICE_LOCK, owner, LOCK_TTL_MS, nowMs())) {
        fatal(
          new StateInUseError(
            `lost the service lock on STATE_DB ${store.path} to another process; stopping`,
          ),
        );
      }
    } catch (error) {
      if (error instanceof StateError && isTransient(error)) {
        log.warn({ error: messageOf(error) }, "state database busy: the lock is renewed later");
        return;
      }
      fatal(error instanceof Error ? error : new Error(messageOf(error)));
    }
  }
}
