import { spawnSync } from "node:child_process";
import { hostname } from "node:os";
import { type Owner, processOwner } from "../../src/state/owner.js";
import { queueJob } from "../support/backfill-jobs.js";
import { useTempDir } from "./support.js";

const tmp = useTempDir("energy-etl-locks-");
const NOW = 1_800_000_000_000;
const TTL = 30_000;

/** This process's start, as every owner it makes carries it. */
const STARTED = processOwner("test").id.split(":").at(-2) ?? "";

const owner = (name: string, pid = process.pid, host = hostname()): Owner => ({
  id: `${host}:${pid}:${STARTED}:${name}`,
  pid,
  host,
  command: name,
});

/** The pid of a process that has exited (so it is free for a while). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]);
  return Number(child.stdout.toString());
}

describe("LockStore", () => {
  it("gives a free lock, refuses it to another live holder, and names the holder", () => {
    const store = tmp.open(tmp.file("state.db"));
    expect(store.locks.acquire("service", owner("run"), TTL, NOW)).toEqual({ acquired: true });
    const other = store.locks.acquire("service", owner("sync"), TTL, NOW + 1000);
    expect(other).toEqual({
      acquired: false,
      holder: {
        pid: process.pid,
        host: hostname(),
        command: "run",
        since: new Date(NOW).toISOString(),
      },
    });
  });

  it("the holder may take it again; an expired lease is free; a renewal extends it", () => {
    const store = tmp.open(tmp.file("state.db"));
    const run = owner("run");
    store.locks.acquire("service", run, TTL, NOW);
    expect(store.locks.acquire("service", run, TTL, NOW + 5).acquired).toBe(true);
    expect(store.locks.renew("service", run, TTL, NOW + 20_000)).toBe(true);
    // renewed at +20 s: still held at +40 s, free at +51 s
    expect(store.locks.acquire("service", owner("sync"), TTL, NOW + 40_000).acquired).toBe(false);
    expect(store.locks.acquire("service", owner("sync"), TTL, NOW + 51_000).acquired).toBe(true);
    // the first holder lost it: its renewal says so
    expect(store.locks.renew("service", run, TTL, NOW + 52_000)).toBe(false);
  });

  it("a holder of this host whose process died holds nothing", () => {
    const store = tmp.open(tmp.file("state.db"));
    const dead = owner("run", deadPid());
    store.locks.acquire("service", dead, TTL, NOW);
    expect(store.locks.acquire("service", owner("run"), TTL, NOW + 1).acquired).toBe(true);
  });

  it("a holder of another host is waited for until its lease expires", () => {
    const store = tmp.open(tmp.file("state.db"));
    store.locks.acquire("service", owner("run", 1, "other-host"), TTL, NOW);
    expect(store.locks.acquire("service", owner("run"), TTL, NOW + TTL - 1).acquired).toBe(false);
    expect(store.locks.acquire("service", owner("run"), TTL, NOW + TTL + 1).acquired).toBe(true);
  });

  it("release frees it, but only for its holder", () => {
    const store = tmp.open(tmp.file("state.db"));
    const run = owner("run");
    store.locks.acquire("service", run, TTL, NOW);
    store.locks.release("service", owner("sync"));
    expect(store.locks.acquire("service", owner("sync"), TTL, NOW + 1).acquired).toBe(false);
    store.locks.release("service", run);
    expect(store.locks.acquire("service", owner("sync"), TTL, NOW + 2).acquired).toBe(true);
  });

  it("two stores on one file see the same lock (two processes)", () => {
    const path = tmp.file("state.db");
    const a = tmp.open(path);
    const b = tmp.open(path);
    expect(a.locks.acquire("service", owner("run-a"), TTL, NOW).acquired).toBe(true);
    expect(b.locks.acquire("service", owner("run-b"), TTL, NOW).acquired).toBe(false);
  });
});

describe("an earlier life of this process's pid (a restarted container's pid 1)", () => {
  it("holds nothing: a lock and a job lease of it are free at once", () => {
    const store = tmp.open(tmp.file("state.db"));
    const earlier: Owner = { ...owner("run"), id: `${hostname()}:${process.pid}:1:run` };
    store.locks.acquire("service", earlier, TTL, NOW);
    expect(store.locks.acquire("service", owner("run"), TTL, NOW + 1).acquired).toBe(true);
    const { job } = queueJob(
      store.jobs,
      {
        deviceId: "d",
        resourceId: "all_data",
        valueIds: ["e_a"],
        fromS: 1_700_000_000,
        toS: 1_700_086_400,
        reason: "manual",
      },
      1,
      new Date(NOW),
    );
    expect(store.jobs.claim(job.id, earlier, 60_000, NOW)).toBe(true);
    expect(store.jobs.claim(job.id, owner("run"), 60_000, NOW + 1)).toBe(true);
  });
});

describe("job leases", () => {
  const spec = {
    deviceId: "d",
    resourceId: "all_data",
    valueIds: ["e_a"],
    fromS: 1_700_000_000,
    toS: 1_700_086_400,
    reason: "manual" as const,
  };

  it("a claimed job is skipped by another process until the lease expires; heartbeats keep it", () => {
    const path = tmp.file("state.db");
    const a = tmp.open(path);
    const b = tmp.open(path);
    const { job } = queueJob(a.jobs, spec, 1, new Date(NOW));
    expect(a.jobs.claim(job.id, owner("run"), 60_000, NOW)).toBe(true);
    expect(a.jobs.get(job.id)).toMatchObject({
      leaseOwner: owner("run").id,
      leaseUntilMs: NOW + 60_000,
    });
    expect(b.jobs.claim(job.id, owner("backfill"), 60_000, NOW + 1000)).toBe(false);
    expect(a.jobs.renewLease(job.id, owner("run"), 60_000, NOW + 50_000)).toBe(true);
    expect(b.jobs.claim(job.id, owner("backfill"), 60_000, NOW + 100_000)).toBe(false);
    expect(b.jobs.claim(job.id, owner("backfill"), 60_000, NOW + 111_000)).toBe(true);
    // the first owner learns it lost the job at its next heartbeat
    expect(a.jobs.renewLease(job.id, owner("run"), 60_000, NOW + 112_000)).toBe(false);
  });

  it("a job whose lease holder died on this host is taken over at once; release frees it", () => {
    const store = tmp.open(tmp.file("state.db"));
    const { job } = queueJob(store.jobs, spec, 1, new Date(NOW));
    expect(store.jobs.claim(job.id, owner("dead", deadPid()), 60_000, NOW)).toBe(true);
    expect(store.jobs.claim(job.id, owner("run"), 60_000, NOW + 1)).toBe(true);
    store.jobs.releaseLease(job.id, owner("run"));
    expect(store.jobs.get(job.id)).not.toHaveProperty("leaseOwner");
    expect(store.jobs.claim(job.id, owner("backfill"), 60_000, NOW + 2)).toBe(true);
  });

  it("a done job cannot be claimed", () => {
    const store = tmp.open(tmp.file("state.db"));
    const { job } = queueJob(store.jobs, spec, 1, new Date(NOW));
    store.jobs.finish(job.id, new Date(NOW));
    expect(store.jobs.claim(job.id, owner("run"), 60_000, NOW)).toBe(false);
  });
});
