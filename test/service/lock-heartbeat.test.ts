/**
 * The service lock's unit (src/service/lock-heartbeat.ts) on a real state file, its clock
 * injected: taken at start or refused naming the holder, renewed on each beat, lost to another
 * process (fatal), a busy database tried again, given back at stop. SQLite's failures are stood in
 * for on LockStore's prototype (the state store hands out its stores behind a proxy).
 */
import { jest } from "@jest/globals";
import { LockHeartbeat } from "../../src/service/lock-heartbeat.js";
import { LockStore } from "../../src/state/lock-store.js";
import { processOwner } from "../../src/state/owner.js";
import { LOCK_TTL_MS, SERVICE_LOCK, StateInUseError } from "../../src/state/service-lock.js";
import { StateError } from "../../src/state/state-error.js";
import { StateStore } from "../../src/state/state-store.js";
import { captureLogger } from "../support/log-capture.js";
import { tempStateDb } from "../support/pipeline.js";

const T0 = Date.UTC(2026, 5, 15, 12);

function heartbeatOn(store: StateStore, options: { mayRenew?: () => boolean } = {}) {
  const { logger, lines } = captureLogger("warn");
  const fatal: Error[] = [];
  let nowMs = T0;
  const owner = processOwner("run");
  const heartbeat = new LockHeartbeat({
    store,
    owner,
    log: logger,
    nowMs: () => nowMs,
    mayRenew: options.mayRenew ?? (() => true),
    fatal: (error) => fatal.push(error),
  });
  const at = (ms: number) => {
    nowMs = ms;
  };
  return { heartbeat, owner, fatal, lines, at };
}

describe("LockHeartbeat", () => {
  let store: StateStore;
  beforeEach(() => {
    store = StateStore.open(tempStateDb());
  });
  afterEach(() => store.close());

  it("takes the lock at its clock's time; a second holder is refused, naming the first", () => {
    const first = heartbeatOn(store);
    first.heartbeat.hold();
    const second = heartbeatOn(store);
    expect(() => second.heartbeat.hold()).toThrow(StateInUseError);
    expect(() => second.heartbeat.hold()).toThrow(/is in use by energy-etl run \(pid \d+/);
    // the lease runs from the injected time: past it, another process takes the lock
    second.at(T0 + LOCK_TTL_MS + 1);
    expect(() => second.heartbeat.hold()).not.toThrow();
    first.heartbeat.stop();
    second.heartbeat.stop();
  });

  it("renews the lease on each beat, so it does not run out", () => {
    const first = heartbeatOn(store);
    first.heartbeat.hold();
    first.at(T0 + LOCK_TTL_MS - 1);
    first.heartbeat.renew();
    const other = processOwner("run");
    const taken = store.locks.acquire(SERVICE_LOCK, other, LOCK_TTL_MS, T0 + LOCK_TTL_MS + 1);
    expect(taken.acquired).toBe(false);
    expect(first.fatal).toEqual([]);
    first.heartbeat.stop();
  });

  it("losing the lock to another process is fatal, naming STATE_DB", () => {
    const first = heartbeatOn(store);
    first.heartbeat.hold();
    const other = processOwner("run");
    const later = T0 + LOCK_TTL_MS + 1;
    expect(store.locks.acquire(SERVICE_LOCK, other, LOCK_TTL_MS, later).acquired).toBe(true);
    first.at(later);
    first.heartbeat.renew();
    expect(first.fatal).toHaveLength(1);
    expect(first.fatal[0]).toBeInstanceOf(StateInUseError);
    expect(first.fatal[0]?.message).toBe(
      `lost the service lock on STATE_DB ${store.path} to another process; stopping`,
    );
    first.heartbeat.stop();
  });

  it("does not renew while told not to (the service stops, or its state file is gone)", () => {
    let may = true;
    const first = heartbeatOn(store, { mayRenew: () => may });
    first.heartbeat.hold();
    const renew = jest.spyOn(LockStore.prototype, "renew");
    may = false;
    first.heartbeat.renew();
    expect(renew).not.toHaveBeenCalled();
    may = true;
    first.heartbeat.renew();
    expect(renew).toHaveBeenCalledTimes(1);
    renew.mockRestore();
    first.heartbeat.stop();
  });

  it("a busy database is tried again at the next beat; any other failure is fatal", () => {
    const first = heartbeatOn(store);
    first.heartbeat.hold();
    const renew = jest.spyOn(LockStore.prototype, "renew").mockImplementation(() => {
      throw new StateError("database is locked", "SQLITE_BUSY");
    });
    first.heartbeat.renew();
    expect(first.fatal).toEqual([]);
    expect(
      first.lines.some((l) => l.includes("state database busy: the lock is renewed later")),
    ).toBe(true);
    renew.mockImplementation(() => {
      throw new StateError("disk I/O error", "SQLITE_IOERR");
    });
    first.heartbeat.renew();
    expect(first.fatal.map((e) => e.message)).toEqual(["disk I/O error"]);
    renew.mockRestore();
    first.heartbeat.stop();
  });

  it("gives the lock back at stop; on a closed database it does nothing", () => {
    const first = heartbeatOn(store);
    first.heartbeat.hold();
    first.heartbeat.stop();
    first.heartbeat.releaseAtStop();
    const other = processOwner("run");
    expect(store.locks.acquire(SERVICE_LOCK, other, LOCK_TTL_MS, T0).acquired).toBe(true);
    store.locks.release(SERVICE_LOCK, other);
    store.close();
    expect(() => first.heartbeat.releaseAtStop()).not.toThrow();
    expect(first.lines).toEqual([]);
  });

  it("a failing release at stop is logged, not thrown; at a failed start it is thrown", () => {
    const first = heartbeatOn(store);
    first.heartbeat.hold();
    const release = jest.spyOn(LockStore.prototype, "release").mockImplementation(() => {
      throw new StateError("disk I/O error", "SQLITE_IOERR");
    });
    expect(() => first.heartbeat.releaseAtStop()).not.toThrow();
    expect(first.lines.some((l) => l.includes("could not release the service lock"))).toBe(true);
    expect(() => first.heartbeat.release()).toThrow("disk I/O error");
    release.mockRestore();
    first.heartbeat.release();
  });
});
