/**
 * The lease rule of backfill jobs and the service lock (src/state/lease.ts): how an owner finds a
 * lease, and whether it may take it. Pure: whether a process of this host is gone is a stand-in.
 */
import { type Lease, type LeaseState, leaseState, mayTake } from "../../src/state/lease.js";
import type { Owner } from "../../src/state/owner.js";

const HOST = "host-a";
const NOW = 1_800_000_000_000;
const STARTED = "1700000000000";

/** An owner of pid `pid` on `host`, its process started at `started`. */
const owner = (name: string, pid: number, host = HOST, started = STARTED): Owner => ({
  id: `${host}:${pid}:${started}:${name}`,
  pid,
  host,
  command: name,
});

const ME = owner("me", 100);

/** A lease held by `holder` until `untilMs`, its process known (or not). */
const leaseOf = (holder: Owner, untilMs: number, known = true): Lease => ({
  ownerId: holder.id,
  holder: known ? { id: holder.id, pid: holder.pid, host: holder.host } : undefined,
  untilMs,
});

/** Processes of this host that are gone (the stand-in for asking the OS). */
const DEAD_PIDS = new Set([200]);
const isDead = (pid: number, host: string) => host === HOST && DEAD_PIDS.has(pid);

describe("leaseState", () => {
  it.each<[string, Lease | undefined, LeaseState]>([
    ["no lease", undefined, "free"],
    ["my own lease", leaseOf(ME, NOW + 1000), "mine"],
    ["my own lease, expired", leaseOf(ME, NOW - 1000), "mine"],
    ["a live process of this host, running", leaseOf(owner("run", 300), NOW + 1000), "held"],
    ["a live process of this host, ending now", leaseOf(owner("run", 300), NOW), "held"],
    ["a live process of this host, expired", leaseOf(owner("run", 300), NOW - 1), "expired"],
    ["a dead process of this host, running", leaseOf(owner("run", 200), NOW + 60_000), "gone"],
    ["a dead process of this host, expired", leaseOf(owner("run", 200), NOW - 1), "gone"],
    [
      "an earlier life of my pid (a restarted container's pid 1), running",
      leaseOf(owner("run", ME.pid, HOST, "1"), NOW + 60_000),
      "gone",
    ],
    [
      "another owner in my own process, running",
      leaseOf(owner("backfill", ME.pid), NOW + 60_000),
      "held",
    ],
    [
      "a process of another host (the same pid as a dead one here), running",
      leaseOf(owner("run", 200, "host-b"), NOW + 60_000),
      "held",
    ],
    [
      "a process of another host, expired",
      leaseOf(owner("run", 200, "host-b"), NOW - 1),
      "expired",
    ],
    [
      "a holder of unknown process (a dead pid's id), running",
      leaseOf(owner("run", 200), NOW + 60_000, false),
      "held",
    ],
    ["a holder of unknown process, expired", leaseOf(owner("run", 200), NOW - 1, false), "expired"],
  ])("%s", (_what, lease, state) => {
    expect(leaseState(lease, ME, NOW, isDead)).toBe(state);
  });

  it("asks only about processes of this host that are not mine", () => {
    const asked: [number, string][] = [];
    const probe = (pid: number, host: string) => {
      asked.push([pid, host]);
      return false;
    };
    for (const holder of [ME, owner("other-host", 300, "host-b"), owner("run", 300)]) {
      leaseState(leaseOf(holder, NOW + 1000), ME, NOW, probe);
    }
    expect(asked).toEqual([[300, HOST]]);
  });
});

describe("mayTake", () => {
  it.each<[LeaseState, boolean]>([
    ["free", true],
    ["mine", true],
    ["gone", true],
    ["expired", true],
    ["held", false],
  ])("a lease found %s: %s", (state, may) => {
    expect(mayTake(state)).toBe(may);
  });
});
