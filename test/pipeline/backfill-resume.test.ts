/**
 * Resuming a backfill with a relative `--from` (issue 18, item 2): `backfill --from -10d`
 * interrupted by SIGINT, then the same command again, must fetch only the chunks the first run did
 * not do (and, for a job the first run finished, the seconds since its end), never a done one
 * again, and leave no job pending. The built CLI as a child process, the simulator over HTTP
 * behind a proxy that answers the first data requests and holds the rest (so the interruption
 * comes after a known number of chunks), the tests' influxd, and the SQLite state file.
 */
import { rmSync } from "node:fs";
import { dirname } from "node:path";
import { formatQueryTime } from "../../src/api/time-format.js";
import { runBackfillJob } from "../../src/pipeline/backfill-job.js";
import type { Simulator } from "../../src/simulator/server.js";
import type { BackfillJob } from "../../src/state/types.js";
import { readJobs } from "../support/backfill-jobs.js";
import { killCliChildren, signalAndMeasure, spawnCli } from "../support/cli-child.js";
import {
  expectedPoints,
  rawPoints,
  simulatorRecords,
  sortPoints,
} from "../support/expected-points.js";
import { type HangProxy, startHangProxy } from "../support/hang-proxy.js";
import { createTestInfluxDb } from "../support/influx-db.js";
import { openTestPipeline, pipelineEnv, tempStateDb, testRun } from "../support/pipeline.js";
import { requestCount, requestsFor } from "../support/schema-oracle.js";
import { startTestSimulator } from "../support/simulator.js";
import { waitUntil } from "../support/wait.js";

const DEVICE = "hybrid-site-01";
const RESOURCES = ["all_data", "battery_bank"];
const COMMAND = ["backfill", "--device", DEVICE, "--from", "-10d"];
const SHUTDOWN_TIMEOUT_MS = 1000;
const STEP_DEADLINE_MS = 60_000;

/** Which values over which window of which resource: one chunk, as the API is asked for it. */
const chunkKey = (resourceId: string, values: readonly string[], fromS: number, toS: number) =>
  `${resourceId}|${values.join(",")}|${formatQueryTime(new Date(fromS * 1000))}|${formatQueryTime(new Date(toS * 1000))}`;

/** The chunk keys of jobs (as they are now) that are not in `done`. */
function chunksNotIn(jobs: readonly BackfillJob[], done: Map<number, Set<number>>): string[] {
  return jobs.flatMap((j) =>
    requestsFor(j.valueIds, j.fromS, j.toS)
      .filter((c) => !done.get(j.id)?.has(c.index))
      .map((c) => chunkKey(j.resourceId, c.values, c.fromS, c.toS)),
  );
}

describe("backfill --from -10d interrupted, then the same command again", () => {
  let sim: Simulator;
  let proxy: HangProxy | undefined;
  const dirs: string[] = [];
  const report: string[] = [];

  beforeAll(async () => {
    // the real clock: a relative --from is relative to the CLI's now
    sim = await startTestSimulator({ resolutionS: 3600 });
  });
  afterEach(async () => {
    await killCliChildren();
    await proxy?.close();
    proxy = undefined;
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  afterAll(async () => {
    await sim.close();
    process.stdout.write(`backfill resume:\n  ${report.join("\n  ")}\n`);
  });

  // the jobs run one after the other: all_data (4 value groups x 2 windows), then battery_bank
  // (1 x 2); the first run is stopped after `answered` data requests
  it.each<[string, number, string[]]>([
    ["in the first window of the first job", 4, []],
    ["after the first job finished, in the second", 9, ["all_data"]],
  ])(
    "stopped %s: fetches only the chunks not done, once each; no job stays pending",
    async (_when, answered, newJobsFor) => {
      const state = tempStateDb();
      dirs.push(dirname(state));
      const db = await createTestInfluxDb("resume");
      let dataRequests = 0;
      const api = await startHangProxy(sim.url, "hang", {
        only: (url) => url.startsWith("/data/") && ++dataRequests > answered,
      });
      proxy = api;
      sim.resetLog();
      const env = pipelineEnv(sim, db, state, {
        ENERGY_API_URL: api.url,
        API_CONCURRENCY: "2",
        LOG_LEVEL: "info",
        SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
      });

      // the first run: `answered` chunks done, the next ones held, then Ctrl-C
      const first = spawnCli(COMMAND, env);
      // the state file is migrated and the jobs stored once one is started
      await first.waitForLog("backfill job started", STEP_DEADLINE_MS);
      const chunksDone = () => readJobs(state).jobs.reduce((n, j) => n + j.chunksDone, 0);
      await waitUntil(() => chunksDone() === answered, `${answered} chunks done`, {
        timeoutMs: STEP_DEADLINE_MS,
        intervalMs: 50,
        stopIf: first.exited,
      });
      const stop = await signalAndMeasure(first, "SIGINT", SHUTDOWN_TIMEOUT_MS + 1000);
      expect({ code: stop.code, stderr: stop.code === 130 ? "" : first.stderr() }).toEqual({
        code: 130,
        stderr: "",
      });
      expect(first.stderr()).toContain("run the same command again to continue");
      const before = readJobs(state);
      const total = before.jobs.reduce((n, j) => n + j.chunksTotal, 0);
      expect(before.jobs.map((j) => j.resourceId)).toEqual(RESOURCES);
      expect(before.jobs.map((j) => j.status)).toEqual(
        RESOURCES.map((r) => (newJobsFor.includes(r) ? "done" : "pending")),
      );
      expect([chunksDone(), total]).toEqual([answered, 10]);
      expect(sim.count("data", 200)).toBe(answered);
      const firstStart = before.jobs[0]?.fromS ?? 0;
      const firstEnd = before.jobs[0]?.toS ?? 0;
      api.setMode("pass");

      // the dry run of the same command plans what remains
      const dry = spawnCli([...COMMAND, "--dry-run", "--json"], env);
      expect((await dry.wait(STEP_DEADLINE_MS, "the dry run")).code).toBe(0);
      const plan = JSON.parse(dry.stdout()) as {
        resourceId: string;
        fromS: number;
        requests: number;
        continues?: number;
        done?: number;
      }[];
      const ids = (resources: readonly string[]) =>
        before.jobs.filter((j) => resources.includes(j.resourceId)).map((j) => j.id);
      const unfinished = RESOURCES.filter((r) => !newJobsFor.includes(r));
      expect(plan.flatMap((p) => p.continues ?? [])).toEqual(ids(unfinished));
      expect(plan.flatMap((p) => p.done ?? [])).toEqual(ids(newJobsFor));
      const continuing = plan.filter((p) => p.continues !== undefined);
      expect(continuing.reduce((n, p) => n + p.requests, 0)).toBe(total - answered);
      const added = plan.filter((p) => p.continues === undefined && p.done === undefined);
      expect(added.map((p) => [p.resourceId, p.fromS])).toEqual(
        newJobsFor.map((r) => [r, firstEnd + 1]),
      );

      // the same command again
      sim.resetLog();
      const second = spawnCli(COMMAND, env);
      const exit = await second.wait(STEP_DEADLINE_MS, "the resumed backfill");
      expect({ code: exit.code, stderr: exit.code === 0 ? "" : second.stderr() }).toEqual({
        code: 0,
        stderr: "",
      });
      expect(second.logged("continuing backfill job").map((l) => l.job)).toEqual(ids(unfinished));
      expect(
        second
          .logged("backfill job of this backfill already done: not fetched again")
          .map((l) => l.job),
      ).toEqual(ids(newJobsFor));

      const after = readJobs(state);
      const old = after.jobs.filter((j) => before.done.has(j.id));
      const newJobs = after.jobs.filter((j) => !before.done.has(j.id));
      // a continued job took in the seconds since (its last window had not started); only a job
      // the first run finished got a new one for them
      expect(old.map((j) => [j.fromS, j.toS > firstEnd])).toEqual(
        RESOURCES.map((r) => [firstStart, !newJobsFor.includes(r)]),
      );
      expect(newJobs.map((j) => [j.resourceId, j.fromS])).toEqual(
        newJobsFor.map((r) => [r, firstEnd + 1]),
      );
      const notDone = chunksNotIn(old, before.done);
      const since = chunksNotIn(newJobs, new Map());
      expect(notDone).toHaveLength(total - answered);
      const asked = sim.requests
        .filter((r) => r.endpoint === "data")
        .map((r) => `${r.segments.at(-1)}|${r.query.values}|${r.query.from}|${r.query.to}`);
      expect(sim.count("data", 200)).toBe(asked.length);
      // exactly the chunks the first run had not done, and the seconds after a finished job
      expect(asked.sort()).toEqual([...notDone, ...since].sort());
      const lastEnd = after.jobs.reduce((n, j) => Math.max(n, j.toS), 0);
      report.push(
        `stopped after ${answered}/${total} chunks: the same command again asked ${asked.length} ` +
          `data requests = ${notDone.length} not done + ${since.length} for the new time after a ` +
          `finished job (${lastEnd - firstEnd} s since the first run)`,
      );

      // nothing pending, no two jobs over the same time of the same values
      expect(after.jobs.filter((j) => j.status !== "done")).toEqual([]);
      for (const resource of RESOURCES) {
        const ranges = after.jobs
          .filter((j) => j.resourceId === resource)
          .sort((a, b) => a.fromS - b.fromS);
        for (let i = 1; i < ranges.length; i++) {
          expect(ranges[i]?.fromS).toBe((ranges[i - 1]?.toS ?? 0) + 1);
        }
      }
      const status = spawnCli(["status", "--json"], env);
      expect((await status.wait(STEP_DEADLINE_MS, "status")).code).toBe(0);
      expect((JSON.parse(status.stdout()) as { backfillJobs: unknown[] }).backfillJobs).toEqual([]);

      // InfluxDB holds the simulator's data of the whole range: no hole, nothing else
      const expected = RESOURCES.flatMap((r) =>
        expectedPoints(DEVICE, r, simulatorRecords(sim.fleet, DEVICE, r, firstStart, lastEnd)),
      );
      const stored = await rawPoints(db);
      expect(stored.length).toBe(expected.length);
      expect(sortPoints(stored)).toEqual(sortPoints(expected));
    },
    180_000,
  );

  it("a job whose end a request moved while it waited is run as stored when claimed", async () => {
    const state = tempStateDb();
    dirs.push(dirname(state));
    const db = await createTestInfluxDb("moved");
    const { pipeline } = await openTestPipeline(
      pipelineEnv(sim, db, state, { LOG_LEVEL: "warn" }),
      () => new Date(),
    );
    try {
      const nowS = Math.floor(Date.now() / 1000);
      const valueIds = (sim.fleet.valueIds(DEVICE, "battery_bank") ?? []).filter(
        (v) => v !== "values_id",
      );
      const spec = {
        deviceId: DEVICE,
        resourceId: "battery_bank",
        valueIds,
        fromS: nowS - 10 * 86_400,
        toS: nowS - 60,
        reason: "manual" as const,
      };
      const { jobs } = pipeline.store;
      // a run read the job (as `run` reads the due jobs before working them off) …
      const [read] = jobs.queue([spec], requestCount, pipeline.now()).jobs;
      if (read === undefined) throw new Error("no job queued");
      // … and the same backfill asked again moved its end before the run claimed it
      const moved = jobs.queue([{ ...spec, toS: nowS }], requestCount, pipeline.now()).jobs;
      expect(moved.map((q) => [q.job.id, q.job.toS])).toEqual([[read.job.id, nowS]]);
      sim.resetLog();
      const done = await runBackfillJob(pipeline, testRun(pipeline), read.job);
      expect(done).toMatchObject({ status: "done", toS: nowS, chunksDone: 2 });
      const ends = sim.requests.filter((r) => r.endpoint === "data").map((r) => r.query.to);
      expect(ends).toHaveLength(2);
      expect(ends).toContain(formatQueryTime(new Date(nowS * 1000)));
    } finally {
      await pipeline.close();
    }
  });
});
