/**
 * Ownership of work on one state file by several processes (issue 10, "Two processes run the same
 * job"): the built CLI as real child processes on one STATE_DB. A backfill job is claimed with a
 * lease before any chunk runs, so `run` draining due jobs while `backfill` works never fetches a
 * chunk twice; each run records its own counters and its owner (pid, host); a second `run` (or a
 * `sync`) refuses while the first lives and starts at once after it died; the start-up cleanup of
 * runs spares those of live processes. Every wait is bounded.
 */
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { hostname } from "node:os";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { formatQueryTime, parseQueryTime } from "../../src/api/time-format.js";
import type { Simulator } from "../../src/simulator/server.js";
import { type Owner, processOwner } from "../../src/state/owner.js";
import { StateStore } from "../../src/state/state-store.js";
import { storedJobs } from "../support/backfill-jobs.js";
import { killCliChildren, signalAndMeasure, spawnCli } from "../support/cli-child.js";
import { type HangProxy, startHangProxy } from "../support/hang-proxy.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { freePort } from "../support/influxd.js";
import { pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { requestCount, requestsFor } from "../support/schema-oracle.js";
import { startTestSimulator } from "../support/simulator.js";
import { waitUntil } from "../support/wait.js";

/** This process's start, as every owner it makes carries it. */
const STARTED = processOwner("test").id.split(":").at(-2) ?? "";

const DAY_S = 86_400;
/** The simulator's clock: fixed, on the hour, just before the real now. */
const SIM_NOW_MS = Math.floor(Date.now() / 3_600_000) * 3_600_000;
const SIM_NOW_S = SIM_NOW_MS / 1000;
const DEVICE = "hybrid-site-01";
/** The backfill: 70 days, far from the last hours a sync reads; 10 windows x 5 value groups. */
const FROM_S = SIM_NOW_S - 84 * DAY_S;
const TO_S = SIM_NOW_S - 14 * DAY_S;
const iso = (s: number) => new Date(s * 1000).toISOString();
/** Never fires: only the start-up sync (and the due backfill jobs after it) runs. */
const NO_TICK_CRON = "0 0 1 1 *";
const SHUTDOWN_TIMEOUT_MS = 2000;
/** A process or a step that takes longer fails the test. */
const STEP_DEADLINE_MS = 60_000;

interface RunRow {
  id: number;
  kind: string;
  status: string;
  owner_pid: number | null;
  owner_host: string | null;
  requests: number | null;
  points: number | null;
}

/** The runs table, read with a connection of its own. */
function runRows(state: string): RunRow[] {
  const db = new Database(state, { readonly: true, fileMustExist: true });
  try {
    return db
      .prepare(
        "SELECT id, kind, status, owner_pid, owner_host, requests, points FROM runs ORDER BY id",
      )
      .all() as RunRow[];
  } finally {
    db.close();
  }
}

/** The pid of a process that existed and is gone. */
function deadPid(): number {
  const done = spawnSync(process.execPath, ["-e", ""]);
  if (done.pid === undefined) throw new Error("could not start a short-lived process");
  return done.pid;
}

describe("ownership: processes on one state file never do the same work", () => {
  let sim: Simulator;
  let db: TestInfluxDb;
  const proxies: HangProxy[] = [];
  const dirs: string[] = [];
  const report: string[] = [];

  beforeAll(async () => {
    sim = await startTestSimulator({ now: () => SIM_NOW_MS, resolutionS: 3600 });
    db = await createTestInfluxDb("ownership");
  });
  afterEach(async () => {
    await killCliChildren();
    await Promise.all(proxies.splice(0).map((p) => p.close()));
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
    sim.latencyMs = 0;
    sim.resetLog();
  });
  afterAll(async () => {
    await sim.close();
    process.stdout.write(`ownership:\n  ${report.join("\n  ")}\n`);
  });

  function newState(): string {
    const state = tempStateDb();
    dirs.push(dirname(state));
    return state;
  }

  it("`run` and `backfill` on one state file never fetch a chunk twice", async () => {
    const state = newState();
    // each process reaches the simulator through its own proxy: what each asked is known; the
    // backfill's is slow (300 ms an answer), so that it still works when `run` drains the jobs
    const backfillApi = await startHangProxy(sim.url, "pass", { delayMs: 300 });
    const runApi = await startHangProxy(sim.url);
    proxies.push(backfillApi, runApi);
    const base = pipelineEnv(sim, db, state, {
      LOG_LEVEL: "info",
      SYNC_CRON: NO_TICK_CRON,
      SYNC_START: "PT2H",
      SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
    });
    const resources = sim.fleet.resourceIds(DEVICE) ?? [];
    const valuesOf = (r: string) =>
      (sim.fleet.valueIds(DEVICE, r) ?? []).filter((v) => v !== "values_id");
    const planned = new Map<string, number>();
    for (const r of resources) {
      for (const c of requestsFor(valuesOf(r), FROM_S, TO_S)) {
        const key = `data/${DEVICE}/${r}|${c.values.join(",")}|${formatQueryTime(new Date(c.fromS * 1000))}|${formatQueryTime(new Date(c.toS * 1000))}`;
        planned.set(key, 0);
      }
    }
    const chunks = resources.reduce(
      (n, r) => n + requestCount(valuesOf(r).length, FROM_S, TO_S),
      0,
    );
    expect(planned.size).toBe(chunks);
    expect(chunks).toBeGreaterThanOrEqual(8);

    const inJobWindow = (from: string | undefined) => {
      const at = from === undefined ? undefined : parseQueryTime(from);
      return at !== undefined && at.getTime() / 1000 >= FROM_S && at.getTime() / 1000 <= TO_S;
    };
    const dataRequestsIn = (proxy: HangProxy, jobWindow: boolean) =>
      proxy.requests.filter(
        (r) =>
          r.path.startsWith("/data/") &&
          inJobWindow(new URL(r.url, proxy.url).searchParams.get("from") ?? undefined) ===
            jobWindow,
      ).length;
    const jobRequests = () =>
      sim.requests.filter((r) => r.endpoint === "data" && inJobWindow(r.query.from));

    const backfill = spawnCli(
      ["backfill", "--device", DEVICE, "--from", iso(FROM_S), "--to", iso(TO_S)],
      { ...base, ENERGY_API_URL: backfillApi.url, API_CONCURRENCY: "2" },
    );
    await waitUntil(() => jobRequests().length >= 2, "the backfill's first data answers", {
      timeoutMs: STEP_DEADLINE_MS,
      intervalMs: 10,
      stopIf: backfill.exited,
    });
    expect(backfill.exited()).toBe(false);
    const port = await freePort();
    const run = spawnCli(["run"], {
      ...base,
      ENERGY_API_URL: runApi.url,
      API_CONCURRENCY: "4",
      HTTP_PORT: String(port),
    });
    // the service drains the due jobs after its first sync, while the backfill still works
    await run.waitForLog("sync finished", STEP_DEADLINE_MS);
    const backfillExit = await backfill.wait(STEP_DEADLINE_MS, "the backfill");
    expect({
      code: backfillExit.code,
      stderr: backfillExit.code === 0 ? "" : backfill.stderr(),
    }).toEqual({ code: 0, stderr: "" });
    // both jobs done, and no backfill run of either process still going
    await waitUntil(
      () => {
        const store = StateStore.open(state, { migrate: false });
        try {
          const jobs = storedJobs(store);
          return jobs.length === resources.length && jobs.every((j) => j.status === "done");
        } finally {
          store.close();
        }
      },
      "both backfill jobs done",
      { timeoutMs: STEP_DEADLINE_MS, intervalMs: 100, stopIf: run.exited },
    );
    await waitUntil(
      () => runRows(state).every((r) => r.status !== "running" || r.kind === "sync"),
      "the backfill runs to end",
      { timeoutMs: STEP_DEADLINE_MS, intervalMs: 100, stopIf: run.exited },
    );
    const stop = await signalAndMeasure(run, "SIGTERM", SHUTDOWN_TIMEOUT_MS + 1000 + 1500);
    expect({ code: stop.code, signal: stop.signal }).toEqual({ code: 0, signal: null });

    // every chunk of the job's window was asked exactly once, by one process or the other
    const counts = new Map(planned);
    for (const r of jobRequests()) {
      const key = `${r.segments.join("/")}|${r.query.values}|${r.query.from}|${r.query.to}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    const repeated = [...counts].filter(([, n]) => n !== 1);
    const byRun = dataRequestsIn(runApi, true);
    const byBackfill = backfillApi.count({ path: /^\/data\// });
    report.push(
      `run + backfill: ${counts.size} chunk keys, ${jobRequests().length} data requests in the job window ` +
        `(${byBackfill} by backfill, ${byRun} by run); keys asked != 1 time: ${JSON.stringify(repeated)}`,
    );
    expect(repeated).toEqual([]);
    expect(counts.size).toBe(chunks);
    // both processes worked on the jobs of one file at once (else this test proves nothing): the
    // run process took the job the backfill did not hold, never the one it did
    expect(byRun).toBeGreaterThan(0);
    expect(byBackfill).toBeGreaterThan(0);

    // each run with its own owner and its own counters
    const rows = runRows(state);
    report.push(`runs: ${JSON.stringify(rows)}`);
    const host = hostname();
    for (const row of rows) {
      expect(row.owner_host).toBe(host);
      expect([backfill.pid, run.pid]).toContain(row.owner_pid);
    }
    const backfillRuns = rows.filter((r) => r.owner_pid === backfill.pid);
    expect(backfillRuns.map((r) => [r.kind, r.status])).toEqual([["backfill", "ok"]]);
    // the backfill process asked for data only within its run
    expect(backfillRuns[0]?.requests).toBe(byBackfill);
    const runRuns = rows.filter((r) => r.owner_pid === run.pid);
    const runSync = runRuns.filter((r) => r.kind === "sync");
    expect(runSync.map((r) => r.status)).toEqual(["ok"]);
    const runBackfills = runRuns.filter((r) => r.kind === "backfill");
    // the catalog and data requests of the run process, none of the token
    const runCatalogAndData = runApi.requests.filter((r) => r.path !== "/create_token").length;
    const counted = runRuns.reduce((n, r) => n + (r.requests ?? 0), 0);
    expect(counted).toBe(runCatalogAndData);
    expect(runBackfills.reduce((n, r) => n + (r.requests ?? 0), 0)).toBe(byRun);
    expect(runSync[0]?.requests).toBe(runCatalogAndData - byRun);
  }, 180_000);

  it("a second `run` on the same STATE_DB refuses, naming the first; after the first died a new one starts at once", async () => {
    const state = newState();
    const env = pipelineEnv(sim, db, state, {
      LOG_LEVEL: "info",
      SYNC_CRON: NO_TICK_CRON,
      SYNC_START: "PT2H",
      SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
    });
    const port = await freePort();
    const first = spawnCli(["run"], { ...env, HTTP_PORT: String(port) });
    await first.waitForLog("service started", STEP_DEADLINE_MS);
    const inUse = new RegExp(
      `STATE_DB ${state.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} is in use by energy-etl run \\(pid ${first.pid} on ${hostname()}, since `,
    );

    const second = spawnCli(["run"], { ...env, HTTP_PORT: String(await freePort()) });
    const secondExit = await second.wait(STEP_DEADLINE_MS, "the second run");
    expect(secondExit.code).toBe(1);
    expect(second.stderr()).toMatch(inUse);
    expect(second.logged("service started")).toEqual([]);

    const sync = spawnCli(["sync"], env);
    const syncExit = await sync.wait(STEP_DEADLINE_MS, "sync beside the run");
    expect(syncExit.code).toBe(1);
    expect(sync.stderr()).toMatch(inUse);
    expect(sync.stdout()).not.toMatch(/^sync /m);

    // the first one was not disturbed
    const health = await fetch(`http://127.0.0.1:${port}/healthz`, {
      signal: AbortSignal.timeout(5_000),
    });
    expect(health.status).toBe(200);

    // a holder that died without releasing holds nothing: the next run starts at once (it does
    // not wait for the lock's 30 s lease to expire, nor refuses)
    first.child.kill("SIGKILL");
    const killed = await first.wait(10_000, "the first run after SIGKILL");
    expect(killed.signal).toBe("SIGKILL");
    const third = spawnCli(["run"], { ...env, HTTP_PORT: String(await freePort()) });
    await third.waitForLog("service started", 20_000);
    expect(third.stderr()).not.toMatch(/is in use/);
    const stop = await signalAndMeasure(third, "SIGTERM", SHUTDOWN_TIMEOUT_MS + 1000 + 1500);
    expect({ code: stop.code, signal: stop.signal }).toEqual({ code: 0, signal: null });
    report.push(
      `second run: exit ${secondExit.code}; sync beside it: exit ${syncExit.code}; run after SIGKILL of the first: started, SIGTERM -> exit ${stop.code}`,
    );
  }, 120_000);

  it("markStaleInterrupted spares a live process's run", async () => {
    sim.latencyMs = 300;
    const state = newState();
    const env = pipelineEnv(sim, db, state, {
      LOG_LEVEL: "info",
      SYNC_CRON: NO_TICK_CRON,
      SYNC_START: "P21D",
      SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
      HTTP_PORT: String(await freePort()),
    });
    const run = spawnCli(["run"], env);
    await run.waitForLog("sync started", STEP_DEADLINE_MS);
    await waitUntil(
      () => runRows(state).some((r) => r.owner_pid === run.pid && r.status === "running"),
      "the run's sync recorded as running",
      { timeoutMs: 10_000, intervalMs: 20, stopIf: run.exited },
    );

    const store = StateStore.open(state, { migrate: false });
    let marked: number;
    let ids: {
      mine: number;
      previousLife: number;
      dead: number;
      elsewhere: number;
      ownerless: number;
    };
    try {
      const now = new Date();
      const owner = (pid: number, host: string): Owner => ({
        id: `${host}:${pid}:${STARTED}:test`,
        pid,
        host,
        command: "test",
      });
      const me = owner(process.pid, hostname());
      ids = {
        mine: store.runs.start("sync", now, me),
        // an earlier life of this very pid (a restarted container's pid 1): gone
        previousLife: store.runs.start("sync", now, {
          ...me,
          id: `${hostname()}:${process.pid}:1:earlier`,
        }),
        dead: store.runs.start("backfill", now, owner(deadPid(), hostname())),
        elsewhere: store.runs.start("sync", now, owner(1, "another-host.invalid")),
        ownerless: store.runs.start("sync", now),
      };
      marked = store.runs.markStaleInterrupted(new Date(), me);
    } finally {
      store.close();
    }
    expect(run.exited()).toBe(false);
    const statusOf = new Map(runRows(state).map((r) => [r.id, r]));
    const live = runRows(state).find((r) => r.owner_pid === run.pid && r.kind === "sync");
    report.push(
      `markStaleInterrupted: marked ${marked}; live run's sync ${live?.status}, test process ${statusOf.get(ids.mine)?.status}, dead pid ${statusOf.get(ids.dead)?.status}, other host ${statusOf.get(ids.elsewhere)?.status}, no owner ${statusOf.get(ids.ownerless)?.status}`,
    );
    // the live `run` child's sync is still working: untouched
    expect(live?.status).toBe("running");
    expect(run.logged("sync finished")).toEqual([]);
    expect(statusOf.get(ids.mine)?.status).toBe("running");
    expect(statusOf.get(ids.previousLife)?.status).toBe("interrupted");
    expect(statusOf.get(ids.elsewhere)?.status).toBe("running");
    expect(statusOf.get(ids.dead)?.status).toBe("interrupted");
    expect(statusOf.get(ids.ownerless)?.status).toBe("interrupted");
    expect(marked).toBe(3);

    const stop = await signalAndMeasure(run, "SIGTERM", SHUTDOWN_TIMEOUT_MS + 1000 + 1500);
    expect({ code: stop.code, signal: stop.signal }).toEqual({ code: 0, signal: null });
  }, 120_000);
});
