/**
 * The service's background runs (src/service/background-runs.ts), driven by the test with promises
 * it settles itself: the tick's sync, the catalog refresh between ticks, the backfill drain, and
 * where their failures go (failures.ts).
 */
import { BackfillDrain, CatalogRefresher, SyncTicks } from "../../src/service/background-runs.js";
import { ServiceFailures } from "../../src/service/failures.js";
import { processOwner } from "../../src/state/owner.js";
import { StateError } from "../../src/state/state-error.js";
import { StateStore } from "../../src/state/state-store.js";
import type { BackfillJob } from "../../src/state/types.js";
import { queueJob } from "../support/backfill-jobs.js";
import { captureLogger } from "../support/log-capture.js";
import { tempStateDb } from "../support/pipeline.js";

const NOW = new Date(Date.UTC(2026, 5, 15, 12));

/** A promise the test settles. */
function deferred(): { promise: Promise<void>; resolve: () => void; reject: (e: Error) => void } {
  let resolve: () => void = () => undefined;
  let reject: (e: Error) => void = () => undefined;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function failuresLogged(stopped: () => boolean = () => false) {
  const { logger, lines } = captureLogger("warn");
  const failures = new ServiceFailures(logger, stopped);
  const fatal: Error[] = [];
  void failures.failure.then((error) => fatal.push(error));
  return { logger, lines, failures, fatal };
}

describe("SyncTicks", () => {
  it("skips a tick while the sync still works; what follows runs once it settled", async () => {
    const { logger, lines, failures } = failuresLogged();
    const syncs = [deferred(), deferred()];
    let started = 0;
    let after = 0;
    const ticks = new SyncTicks({
      log: logger,
      failures,
      mayTick: () => true,
      sync: () => (syncs[started++] ?? deferred()).promise,
      afterSync: () => {
        after++;
      },
    });
    const first = ticks.tick();
    expect(first).toBeDefined();
    expect(ticks.current).toBe(first);
    expect(ticks.tick()).toBeUndefined();
    expect(lines.some((l) => l.includes("previous sync still running: this tick is skipped"))).toBe(
      true,
    );
    syncs[0]?.resolve();
    await first;
    expect(after).toBe(1);
    expect(ticks.current).toBeUndefined();
    const second = ticks.tick();
    syncs[1]?.reject(new Error("API down"));
    await expect(second).resolves.toBeUndefined();
    expect(lines.some((l) => l.includes("sync failed") && l.includes("API down"))).toBe(true);
    expect(after).toBe(2);
    expect(started).toBe(2);
  });

  it("takes no tick while told not to (stopping, state file gone)", () => {
    const { logger, failures } = failuresLogged();
    let started = 0;
    const ticks = new SyncTicks({
      log: logger,
      failures,
      mayTick: () => false,
      sync: async () => {
        started++;
      },
      afterSync: () => undefined,
    });
    expect(ticks.tick()).toBeUndefined();
    expect(started).toBe(0);
  });
});

describe("ServiceFailures", () => {
  it("a failed run whose state database failed is fatal, once, and not after the service stopped", async () => {
    let stopped = false;
    const { lines, failures, fatal } = failuresLogged(() => stopped);
    await failures.settled(Promise.reject(new StateError("busy", "SQLITE_BUSY")), "x", () => {});
    await failures.settled(Promise.reject(new Error("API down")), "x", () => {});
    expect(fatal).toEqual([]);
    const gone = new StateError("state database was deleted while in use", "DELETED");
    await failures.settled(Promise.reject(gone), "sync failed", () => {});
    await failures.failure;
    expect(fatal).toEqual([gone]);
    expect(lines.filter((l) => l.includes("the service cannot go on"))).toHaveLength(1);
    stopped = true;
    failures.fatal(new Error("after stop"));
    expect(lines.filter((l) => l.includes("the service cannot go on"))).toHaveLength(1);
  });

  it("the state file in use: true; gone: false, and fatal", async () => {
    const { failures, fatal } = failuresLogged();
    expect(failures.stateFileInUse({ checkFile: () => undefined })).toBe(true);
    const gone = new StateError("state database was deleted while in use", "DELETED");
    const checkFile = () => {
      throw gone;
    };
    expect(failures.stateFileInUse({ checkFile })).toBe(false);
    expect(await failures.failure).toBe(gone);
    expect(fatal).toEqual([gone]);
  });
});

describe("CatalogRefresher", () => {
  it("one catalog run at a time, none while stopping; what follows runs once it settled", async () => {
    const { failures } = failuresLogged();
    const run = deferred();
    let runs = 0;
    let after = 0;
    let stopping = false;
    const catalogs = new CatalogRefresher({
      failures,
      isStopping: () => stopping,
      refresh: () => {
        runs++;
        return run.promise;
      },
      afterRefresh: () => {
        after++;
      },
    });
    catalogs.refresh();
    catalogs.refresh();
    expect(runs).toBe(1);
    const current = catalogs.current;
    run.resolve();
    await current;
    expect(after).toBe(1);
    expect(catalogs.current).toBeUndefined();
    stopping = true;
    catalogs.refresh();
    expect(runs).toBe(1);
  });
});

describe("BackfillDrain", () => {
  let store: StateStore;
  beforeEach(() => {
    store = StateStore.open(tempStateDb());
  });
  afterEach(() => store.close());

  it("runs the due jobs as one run at a time; none when none is due or while stopping", async () => {
    const { failures } = failuresLogged();
    const runs: (readonly BackfillJob[])[] = [];
    const run = deferred();
    let stopping = false;
    const drain = new BackfillDrain({
      failures,
      isStopping: () => stopping,
      store,
      owner: processOwner("run"),
      now: () => NOW,
      nowMs: () => NOW.getTime(),
      run: (jobs) => {
        runs.push(jobs);
        return run.promise;
      },
    });
    drain.drain();
    expect(runs).toEqual([]);
    expect(drain.current).toBeUndefined();
    const toS = NOW.getTime() / 1000 - 86_400;
    const spec = { deviceId: "d1", resourceId: "r1", valueIds: ["v1"], fromS: toS - 3600, toS };
    const queued = queueJob(store.jobs, { ...spec, reason: "manual" }, 1, NOW);
    drain.drain();
    drain.drain();
    expect(runs.map((jobs) => jobs.map((j) => j.id))).toEqual([[queued.job.id]]);
    const current = drain.current;
    run.resolve();
    await current;
    expect(drain.current).toBeUndefined();
    stopping = true;
    drain.drain();
    expect(runs).toHaveLength(1);
  });
});
