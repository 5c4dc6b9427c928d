import type { Owner } from "./owner.js";
import type { StateStore } from "./state-store.js";

/** The service lock: held while `run` lives (and by `sync`/`backfill` while they work). */
export const SERVICE_LOCK = "service";
export const LOCK_TTL_MS = 30_000;

/** The state database is used by another live process. */
export class StateInUseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StateInUseError";
  }
}

/** Takes the service lock for `owner` at `nowMs`, or throws StateInUseError naming its holder. */
export function acquireServiceLock(
  store: Pick<StateStore, "locks" | "path">,
  owner: Owner,
  nowMs = Date.now(),
): void {
  const lock = store.locks.acquire(SERVICE_LOCK, owner, LOCK_TTL_MS, nowMs);
  if (lock.acquired) return;
  const { command, pid, host, since } = lock.holder;
  throw new StateInUseError(
    `STATE_DB ${store.path} is in use by energy-etl ${command} (pid ${pid} on ${host}, since ` +
      `${since}); stop it, or give this one its own STATE_DB`,
  );
}
