/**
 * Waits on the in-process service (EtlService) by what it does, never by wall-clock guesses: on
 * the tick's own sync (its promise, its run by id), each wait bounded, failing with a message that
 * names what did not happen instead of running into jest's timeout.
 */
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import type { EtlService } from "../../src/service/etl-service.js";
import type { RunRecord } from "../../src/state/types.js";
import { waitUntil, withDeadline } from "./wait.js";

/** The bound on one sync of a test service (or its idling); reaching it fails the test. */
export const SERVICE_STEP_MS = 30_000;

type Store = Pipeline["store"];

/** The id of the latest sync run (0 when none): the runs after it are new. */
export function lastSyncId(store: Store): number {
  return store.runs.last("sync")?.id ?? 0;
}

/**
 * The first sync run after run `afterId` (the one a tick or start() began) once it has ended, if
 * it has (the service runs one sync at a time).
 */
function syncAfter(store: Store, afterId: number): RunRecord | undefined {
  return store.runs
    .recentFinished("sync", 100)
    .filter((r) => r.id > afterId)
    .at(-1);
}

/**
 * Waits (bounded) until the first sync run after run `afterId` has ended; resolves with it. A run
 * ends only once its sync is done, so the service takes the next tick from then on.
 */
export async function syncEnded(
  store: Store,
  afterId: number,
  what = "the sync",
  timeoutMs = SERVICE_STEP_MS,
): Promise<RunRecord> {
  await waitUntil(
    () => (syncAfter(store, afterId)?.endedAt ?? null) !== null,
    `${what} (the first sync run after run ${afterId}) to end`,
    { timeoutMs, intervalMs: 20 },
  );
  const run = syncAfter(store, afterId);
  if (run === undefined) throw new Error(`${what}: no sync run after run ${afterId}`);
  return run;
}

/** Starts the service and waits (bounded) for the sync its start() begins; resolves with its run. */
export async function startService(
  service: EtlService,
  store: Store,
  timeoutMs = SERVICE_STEP_MS,
): Promise<RunRecord> {
  const before = lastSyncId(store);
  await service.start();
  return syncEnded(store, before, "the first sync", timeoutMs);
}

/**
 * One tick of the service and its own sync to the end (bounded); resolves with that sync's run.
 * Fails at once when the tick started no sync (skipped: a sync still running, or stopping).
 */
export async function tickSync(
  service: EtlService,
  store: Store,
  timeoutMs = SERVICE_STEP_MS,
): Promise<RunRecord> {
  const before = lastSyncId(store);
  const sync = service.tick();
  if (sync === undefined) {
    throw new Error("the tick started no sync (skipped: a sync still running, or stopping)");
  }
  await withDeadline(sync, timeoutMs, `the tick's sync (after run ${before})`);
  const run = syncAfter(store, before);
  if (run === undefined || run.endedAt === null) {
    throw new Error(`the tick's sync is done, but its run (${run?.id ?? "none"}) has not ended`);
  }
  return run;
}

/** Waits (bounded) until no sync, catalog run or backfill run of the service is under way. */
export async function serviceIdle(service: EtlService, timeoutMs = SERVICE_STEP_MS): Promise<void> {
  await withDeadline(service.idle(), timeoutMs, "the service's sync, catalog and backfill runs");
}
