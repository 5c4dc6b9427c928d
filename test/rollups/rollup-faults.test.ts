/**
 * Rollups under faults and beside other processes, with real parts (the simulator over HTTP, the
 * tests' influxd, a SQLite state file, the CLI in-process): InfluxDB answering every query with
 * well-formed nothing keeps the marks and makes the run partial (exit 1) until it answers again;
 * the passes of a backfill run along its fetching; `rollups` works beside a running service and
 * waits for another process's pass.
 */
import { runCli } from "../../src/cli.js";
import { runBackfillJobs } from "../../src/pipeline/backfill.js";
import { planBackfill, queueBackfill } from "../../src/pipeline/backfill-plan.js";
import { runSync } from "../../src/pipeline/sync.js";
import { ROLLUP_LOCK, RollupLock } from "../../src/rollups/rollup-lock.js";
import { RollupsAlong } from "../../src/rollups/rollup-run.js";
import type { Simulator } from "../../src/simulator/server.js";
import { processOwner } from "../../src/state/owner.js";
import { SERVICE_LOCK } from "../../src/state/service-lock.js";
import { StateStore } from "../../src/state/state-store.js";
import { bufferIo } from "../support/cli-io.js";
import { type HangProxy, startHangProxy } from "../support/hang-proxy.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const NOW_MS = Date.UTC(2026, 5, 15, 12, 25);

let sim: Simulator;
beforeAll(async () => {
  sim = await startTestSimulator({ now: () => NOW_MS, resolutionS: 900 });
});
afterAll(() => sim.close());

/** The CLI in-process with `env`. */
async function cli(env: Record<string, string>, ...argv: string[]) {
  const io = bufferIo(env);
  const code = await runCli(argv, io);
  return { code, out: io.out(), err: io.err() };
}

/** Marks waiting in the state file. */
function pendingMarks(stateDb: string): number {
  const store = StateStore.open(stateDb);
  try {
    return store.rollups.count();
  } finally {
    store.close();
  }
}

async function rollupDays(db: TestInfluxDb): Promise<number> {
  const [series] = await db.series(`SELECT count("increase") FROM "rollup_day"`);
  return Number(series?.values[0]?.[1] ?? 0);
}

describe("InfluxDB answering every query with well-formed nothing", () => {
  let db: TestInfluxDb;
  let front: HangProxy;
  let stateDb: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    db = await createTestInfluxDb("rollup_empty");
    front = await startHangProxy(db.url, "empty", { only: /^\/query/ });
    stateDb = tempStateDb();
    env = pipelineEnv(sim, { ...db, url: front.url }, stateDb, {
      SYNC_START: new Date(NOW_MS - 6 * HOUR_MS).toISOString(),
      LOG_LEVEL: "error",
    });
  });
  afterAll(() => front.close());

  it("keeps the marks of data just written; the sync and the backfill say so and exit 1; once it answers, the next sync writes them", async () => {
    const sync = await cli(env, "sync");
    expect(sync.code).toBe(1);
    expect(sync.out).toMatch(/sync partial: .*rollups of \d+ device resources NOT written/);
    expect(sync.err).toMatch(/rollups not written/);
    const marks = pendingMarks(stateDb);
    expect(marks).toBeGreaterThan(0);
    expect(front.count({ mode: "empty" })).toBeGreaterThan(0);

    const from = new Date(NOW_MS - 2 * DAY_MS).toISOString();
    const backfill = await cli(
      env,
      "backfill",
      "--all",
      "--from",
      from,
      "--to",
      new Date(NOW_MS - 7 * HOUR_MS).toISOString(),
    );
    expect(backfill.code).toBe(1);
    expect(backfill.out).toMatch(/rollups of \d+ device resources NOT written/);
    expect(backfill.err).toMatch(/rollups of \d+ device resources not written/);
    expect(pendingMarks(stateDb)).toBeGreaterThan(marks);
    expect(await rollupDays(db)).toBe(0);

    front.setMode("pass");
    const again = await cli(env, "sync");
    expect([again.code, again.err]).toEqual([0, ""]);
    expect(again.out).toMatch(/^sync ok: /m);
    expect(pendingMarks(stateDb)).toBe(0);
    expect(await rollupDays(db)).toBeGreaterThan(0);
  });
});

describe("a backfill's rollups run along its fetching", () => {
  it("held by the API's rate limit, the first pass starts as the first window is written, before the last one is; every mark is done at the end", async () => {
    const db = await createTestInfluxDb("rollup_along");
    // 10 requests a second: the requests wait for their slots, the fetching is rate-bound
    const { pipeline } = await openTestPipeline(
      pipelineEnv(sim, db, tempStateDb(), {
        LOG_LEVEL: "warn",
        API_CONCURRENCY: "2",
        API_RATE_LIMIT: "10",
      }),
      () => new Date(NOW_MS),
    );
    try {
      const plan = await planBackfill(pipeline, {
        devices: ["hybrid-site-01", "site A+1"],
        fromS: (NOW_MS - 21 * DAY_MS) / 1000,
        toS: NOW_MS / 1000 - 3600,
      });
      const jobs = queueBackfill(pipeline, plan.jobs).jobs.map((q) => q.job);
      const total = jobs.reduce((n, j) => n + j.chunksTotal, 0);
      expect(total).toBeGreaterThanOrEqual(6);
      // where each pass stood: the chunks written when it read its marks
      let chunksDone = 0;
      const passesAt: number[] = [];
      const marks = pipeline.store.rollups;
      const pending = marks.pending.bind(marks);
      marks.pending = () => {
        passesAt.push(chunksDone);
        return pending();
      };
      const result = await runBackfillJobs(pipeline, jobs, {
        chunkDone: () => {
          chunksDone++;
        },
      });
      expect(result.status).toBe("ok");
      expect(chunksDone).toBe(total);
      expect(passesAt.length).toBeGreaterThanOrEqual(2);
      expect(passesAt[0]).toBeLessThan(total);
      expect(result.rollups).toMatchObject({ failed: 0 });
      expect(result.rollups?.points).toBeGreaterThan(0);
      expect(pipeline.store.rollups.count()).toBe(0);
    } finally {
      await pipeline.close();
    }
  });
});

describe("rollups along a run that the rate limit does not hold", () => {
  it("kicked devices wait for the last pass: the fetching has the cores", async () => {
    const db = await createTestInfluxDb("rollup_unbound");
    const { pipeline } = await openTestPipeline(
      pipelineEnv(sim, db, tempStateDb(), { LOG_LEVEL: "warn" }),
      () => new Date(NOW_MS),
    );
    try {
      const sync = await runSync(pipeline);
      expect(sync.rollups).toMatchObject({ failed: 0 });
      const parts = pipeline.rollups;
      if (parts === undefined) throw new Error("no rollups");
      pipeline.store.rollups.mark(
        "hybrid-site-01",
        "all_data",
        NOW_MS / 1000 - 7200,
        NOW_MS / 1000,
      );
      let passes = 0;
      const store = pipeline.store.rollups;
      const counted = {
        ...parts,
        marks: {
          pending: () => {
            passes++;
            return store.pending();
          },
          done: store.done.bind(store),
          mark: store.mark.bind(store),
          forget: store.forget.bind(store),
        },
      };
      const run = { logger: pipeline.logger };
      const along = new RollupsAlong(
        counted,
        run,
        () => false,
        () => false,
      );
      along.kick("hybrid-site-01");
      await along.settled();
      expect(passes).toBe(0);
      const held = new RollupsAlong(
        counted,
        run,
        () => false,
        () => true,
      );
      held.kick("hybrid-site-01");
      await held.settled();
      expect(passes).toBe(1);
      expect(pipeline.store.rollups.count()).toBe(0);
      expect(await along.finish(["hybrid-site-01"])).toMatchObject({ failed: 0 });
      expect(passes).toBe(2);
    } finally {
      await pipeline.close();
    }
  });
});

describe("rollups beside other processes", () => {
  let db: TestInfluxDb;
  let stateDb: string;
  let env: Record<string, string>;
  const FROM = new Date(NOW_MS - 2 * DAY_MS).toISOString();
  const TO = new Date(NOW_MS - HOUR_MS).toISOString();

  beforeAll(async () => {
    db = await createTestInfluxDb("rollup_beside");
    stateDb = tempStateDb();
    env = pipelineEnv(sim, db, stateDb, { LOG_LEVEL: "error", ROLLUPS: "false" });
    const backfill = await cli(env, "backfill", "--all", "--from", FROM, "--to", TO);
    expect(backfill.code).toBe(0);
    expect(await rollupDays(db)).toBe(0);
  });

  it("beside a running `run` (the service lock held): --dry-run and the command itself work, with --json", async () => {
    const store = StateStore.open(stateDb);
    const service = processOwner("run");
    try {
      expect(store.locks.acquire(SERVICE_LOCK, service, 60_000, Date.now()).acquired).toBe(true);
      const on = { ...env, ROLLUPS: "true" };
      const dry = await cli(on, "rollups", "--from", FROM, "--to", TO, "--dry-run", "--json");
      expect([dry.code, dry.err]).toEqual([0, ""]);
      expect(JSON.parse(dry.out)).toMatchObject({ dryRun: true, days: 2 });
      expect(pendingMarks(stateDb)).toBe(0);

      const done = await cli(on, "rollups", "--from", FROM, "--to", TO, "--json");
      expect([done.code, done.err]).toEqual([0, ""]);
      const result = JSON.parse(done.out) as { devices: number; points: number; failed: number };
      expect(result).toMatchObject({ devices: 4, failed: 0 });
      expect(result.points).toBeGreaterThan(0);
      expect(await rollupDays(db)).toBeGreaterThan(0);
      expect(pendingMarks(stateDb)).toBe(0);
    } finally {
      store.locks.release(SERVICE_LOCK, service);
      store.close();
    }
  });

  it("a pass finds the rollups lock held by another process: a run's pass leaves the marks, `rollups` waits its turn", async () => {
    const store = StateStore.open(stateDb);
    const other = processOwner("run");
    const me = processOwner("rollups");
    try {
      expect(store.locks.acquire(ROLLUP_LOCK, other, 60_000, Date.now()).acquired).toBe(true);
      const lock = new RollupLock(store.locks, me);
      let ran = 0;
      const skipped = await lock.hold(async () => ++ran);
      expect(skipped).toMatchObject({ held: false, holder: { command: "run", pid: process.pid } });
      expect(ran).toBe(0);
      // waits, asking again; the other process lets go while it waits
      let asked = 0;
      const waited = await lock.hold(
        async () => ++ran,
        () => {
          asked++;
          if (asked === 2) store.locks.release(ROLLUP_LOCK, other);
          return true;
        },
      );
      expect(waited).toEqual({ held: true, value: 1 });
      expect(asked).toBe(2);
      // and lets go when done
      expect(store.locks.acquire(ROLLUP_LOCK, other, 60_000, Date.now()).acquired).toBe(true);
    } finally {
      store.locks.release(ROLLUP_LOCK, other);
      store.close();
    }
  });
});
