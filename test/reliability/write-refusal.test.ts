/**
 * A refusing InfluxDB is a failed run (issue 40, item 1 and 6b): the built CLI as a child process,
 * the simulator over HTTP, and the tests' influxd behind a front written here that refuses every
 * non-empty write (400, or 413 as a proxy's body limit does) while the start-up check of zero
 * lines passes, or drops one measurement's lines as a field type conflict (422 partial write).
 * A refused `sync` or `backfill` exits 1 and moves no cursor and no job, `status` says so, and
 * nothing becomes a dead letter; the next run, the front passing through, stores every point the
 * simulator holds. Request counts of a failed backfill are the API's own.
 */

import { rmSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname } from "node:path";
import type { Simulator } from "../../src/simulator/server.js";
import { StateStore } from "../../src/state/state-store.js";
import { readJobs } from "../support/backfill-jobs.js";
import { killCliChildren, spawnCli } from "../support/cli-child.js";
import {
  expectedPoints,
  rawPoints,
  type StoredPoint,
  simulatorRecords,
  sortPoints,
} from "../support/expected-points.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";

const HOUR_S = 3600;
const DAY_S = 86_400;
/** The simulator's clock at the first sync: on a record boundary, before the real now. */
const SIM_START_MS = (Math.floor(Date.now() / 3_600_000) - 4) * 3_600_000;
const SYNC_FROM_S = SIM_START_MS / 1000 - 6 * HOUR_S;
/** A backfill between records (one an hour), so that no record lies on an edge. */
const BACKFILL_FROM_S = SIM_START_MS / 1000 - 2 * DAY_S + HOUR_S / 2;
const BACKFILL_TO_S = SIM_START_MS / 1000 - DAY_S + HOUR_S / 2;
const STEP_DEADLINE_MS = 60_000;
/** Requests one refused chunk may cost: 2 log2(lines) + 1 for its batch, far below its lines. */
const MAX_WRITES_PER_CHUNK = 2 * Math.ceil(Math.log2(5000)) + 1;

const iso = (s: number) => new Date(s * 1000).toISOString();
const measured: string[] = [];

type FrontMode =
  | { readonly kind: "pass" }
  | { readonly kind: "refuse"; readonly status: 400 | 413 }
  | { readonly kind: "conflict"; readonly measurement: string };

/** A front before InfluxDB: passes, refuses every non-empty write, or drops one measurement. */
interface RefusingFront {
  readonly url: string;
  mode: FrontMode;
  /** Write requests with a body, and lines received in them. */
  readonly writes: { requests: number; lines: number };
  close(): Promise<void>;
}

async function bodyOf(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Sends `body` on to `target` as `req` came; answers with what the target answered. */
async function forward(target: string, req: IncomingMessage, body: Buffer, res: ServerResponse) {
  const headers = new Headers();
  for (const name of ["authorization", "content-type", "accept"]) {
    const value = req.headers[name];
    if (typeof value === "string") headers.set(name, value);
  }
  const bodyless = req.method === "GET" || req.method === "HEAD";
  const answer = await fetch(new URL(req.url ?? "/", target), {
    method: req.method ?? "GET",
    headers,
    ...(bodyless ? {} : { body }),
  });
  const type = answer.headers.get("content-type");
  res.writeHead(answer.status, type === null ? {} : { "content-type": type });
  res.end(Buffer.from(await answer.arrayBuffer()));
}

/** The measurement of a line (our measurements have no escapes in the test fleet). */
const measurementOf = (line: string) => /^[^, ]+/.exec(line)?.[0] ?? "";

async function startFront(target: string): Promise<RefusingFront> {
  const front: { mode: FrontMode } = { mode: { kind: "pass" } };
  const writes = { requests: 0, lines: 0 };
  const answer = async (req: IncomingMessage, res: ServerResponse) => {
    const body = await bodyOf(req);
    const { mode } = front;
    const isWrite = req.url?.startsWith("/api/v2/write") === true;
    if (!isWrite || body.length === 0 || mode.kind === "pass") {
      if (isWrite && body.length > 0) writes.requests++;
      await forward(target, req, body, res);
      return;
    }
    writes.requests++;
    const lines = body.toString("utf8").split("\n").filter(Boolean);
    writes.lines += lines.length;
    if (mode.kind === "refuse") {
      // as a proxy's body limit or a wrong schema answers: the whole request, naming no line
      res.writeHead(mode.status, { "content-type": "text/html" });
      res.end(mode.status === 413 ? "<h1>413 Request Entity Too Large</h1>" : "Bad Request");
      return;
    }
    const kept = lines.filter((line) => measurementOf(line) !== mode.measurement);
    const dropped = lines.length - kept.length;
    if (dropped === 0) {
      await forward(target, req, body, res);
      return;
    }
    if (kept.length > 0) {
      const stored = await fetch(new URL(req.url ?? "/", target), {
        method: "POST",
        headers: { authorization: req.headers.authorization ?? "" },
        body: kept.join("\n"),
      });
      if (!stored.ok) throw new Error(`influxd refused the kept lines: ${stored.status}`);
    }
    // InfluxDB 2.x's answer to a field type conflict: the other lines are stored
    const message =
      `partial write: field type conflict: input field "value" on measurement ` +
      `"${mode.measurement}" is type string, already exists as type float dropped=${dropped}`;
    const json = JSON.stringify({ code: "unprocessable entity", message });
    res.writeHead(422, { "content-type": "application/json" }).end(json);
  };
  const server = createServer((req, res) => {
    answer(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(502);
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get mode() {
      return front.mode;
    },
    set mode(mode) {
      front.mode = mode;
    },
    writes,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** What the state file holds: cursors (as fetched so far), dead letters, the last run. */
function stateOf(state: string) {
  const store = StateStore.open(state, { migrate: false });
  try {
    const cursors = store.cursors
      .list()
      .map((c) => `${c.deviceId}/${c.resourceId}: ${c.fetchedUntilS} ${c.newestRecordS ?? "-"}`)
      .sort();
    return { cursors, deadLetters: store.deadLetters.count(), lastRun: store.runs.last() };
  } finally {
    store.close();
  }
}

describe("a refusing InfluxDB is a failed run", () => {
  let sim: Simulator;
  let simNowMs = SIM_START_MS;
  const cleanups: (() => Promise<void> | void)[] = [];

  beforeAll(async () => {
    sim = await startTestSimulator({ now: () => simNowMs, resolutionS: HOUR_S });
  });
  afterEach(async () => {
    await killCliChildren();
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    simNowMs = SIM_START_MS;
    sim.faults = {};
    sim.resetLog();
  });
  afterAll(async () => {
    await sim.close();
    process.stdout.write(`write refusal:\n  ${measured.join("\n  ")}\n`);
  });

  async function setUp(prefix: string) {
    const db = await createTestInfluxDb(prefix);
    const front = await startFront(db.url);
    const state = tempStateDb();
    cleanups.push(
      () => front.close(),
      () => rmSync(dirname(state), { recursive: true, force: true }),
    );
    const env = pipelineEnv(sim, { ...db, url: front.url }, state, {
      LOG_LEVEL: "info",
      // the next run after a failure is not held back by the failure's backoff
      FAILURE_BACKOFF: "PT0S",
    });
    return { db, front, state, env };
  }

  /** Runs the CLI to its end; its exit code, stdout and stderr. */
  async function cli(args: string[], env: Record<string, string>) {
    const child = spawnCli(args, env);
    const exit = await child.wait(STEP_DEADLINE_MS, args.join(" "));
    return { code: exit.code, stdout: child.stdout(), stderr: child.stderr(), child };
  }

  /** The status as `status --json` prints it. */
  async function status(env: Record<string, string>) {
    const run = await cli(["status", "--json"], env);
    expect(run.code).toBe(0);
    return JSON.parse(run.stdout) as {
      cursors: { deviceId: string; state: string; failures: number }[];
      lastRun: { status: string; requests: number } | null;
      backfillJobs: { status: string; chunksDone: number; lastError: string | null }[];
      deadLetters: number;
    };
  }

  /** The simulator's points of every device and resource over [fromS, toS]. */
  function truth(fromS: number, toS: number): StoredPoint[] {
    return sim.fleet
      .deviceIds()
      .flatMap((d) =>
        (sim.fleet.resourceIds(d) ?? []).flatMap((r) =>
          expectedPoints(d, r, simulatorRecords(sim.fleet, d, r, fromS, toS)),
        ),
      );
  }

  /** Device resources of the fleet: a sync writes the rollups of each (then its report). */
  const resources = () =>
    sim.fleet.deviceIds().reduce((n, d) => n + (sim.fleet.resourceIds(d) ?? []).length, 0);

  async function expectComplete(db: TestInfluxDb, expected: StoredPoint[]) {
    expect(expected.length).toBeGreaterThan(100);
    const stored = await rawPoints(db);
    expect(stored.length).toBe(expected.length);
    expect(sortPoints(stored)).toEqual(sortPoints(expected));
  }

  it.each([400, 413] as const)(
    "sync with every write refused (%i): exit 1, cursors unmoved, status not ok, no dead letter; the next sync is complete",
    async (refusal) => {
      const { db, front, state, env } = await setUp(`refusal_sync_${refusal}`);
      const syncEnv = { ...env, SYNC_START: iso(SYNC_FROM_S) };
      const first = await cli(["sync"], syncEnv);
      expect({ code: first.code, stderr: first.code === 0 ? "" : first.stderr }).toEqual({
        code: 0,
        stderr: "",
      });
      const before = stateOf(state);

      // two hours later, InfluxDB refuses every write
      simNowMs = SIM_START_MS + 2 * HOUR_S * 1000;
      sim.resetLog();
      front.mode = { kind: "refuse", status: refusal };
      const refused = await cli(["sync"], syncEnv);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/devices failed/);
      expect(refused.child.logged("chunk failed")[0]?.error).toMatch(
        new RegExp(`InfluxDB refused a write of \\d+ lines as a whole \\(HTTP ${refusal}`),
      );
      const after = stateOf(state);
      expect(after.cursors).toEqual(before.cursors);
      expect(after.deadLetters).toBe(0);
      expect(after.lastRun?.status).toBe("failed");
      const shown = await status(syncEnv);
      expect(shown.lastRun?.status).toBe("failed");
      // every resource had new records to write: each cursor says why it failed
      expect(shown.cursors.length).toBe(before.cursors.length);
      for (const c of shown.cursors) {
        expect(c.state).toMatch(
          new RegExp(
            `^failing \\(1x.*\\): InfluxDB refused a write of \\d+ lines as a whole \\(HTTP ${refusal}`,
          ),
        );
      }
      expect(shown.deadLetters).toBe(0);
      // each chunk fetched, and the rollups and the run's report (written whatever the chunks did),
      // cost at most MAX_WRITES_PER_CHUNK write requests, never one or two per line
      const writesAtMost = (sim.count("data", 200) + resources() + 1) * MAX_WRITES_PER_CHUNK;
      measured.push(
        `sync, every write refused (${refusal}): exit ${refused.code}, ${front.writes.requests} ` +
          `write requests (bound ${writesAtMost}) for ${front.writes.lines} lines sent, ` +
          `${sim.count("data", 200)} data answers, 0 dead letters`,
      );
      expect(front.writes.requests).toBeGreaterThan(0);
      expect(front.writes.requests).toBeLessThanOrEqual(writesAtMost);

      // InfluxDB takes writes again: the next sync stores all of it
      front.mode = { kind: "pass" };
      const next = await cli(["sync"], syncEnv);
      expect({ code: next.code, stderr: next.code === 0 ? "" : next.stderr }).toEqual({
        code: 0,
        stderr: "",
      });
      await expectComplete(db, truth(SYNC_FROM_S, simNowMs / 1000));
      expect(stateOf(state).deadLetters).toBe(0);
    },
    180_000,
  );

  it.each([400, 413] as const)(
    "backfill with every write refused (%i): exit 1, jobs unmoved, exact request count; the same command again is complete",
    async (refusal) => {
      const { db, front, state, env } = await setUp(`refusal_backfill_${refusal}`);
      const command = [
        "backfill",
        "--all",
        "--from",
        iso(BACKFILL_FROM_S),
        "--to",
        iso(BACKFILL_TO_S),
      ];
      front.mode = { kind: "refuse", status: refusal };
      // some data requests take more than one attempt: the run counts every attempt
      sim.faults = { errorRate: 0.5, endpoints: ["data"] };
      const refused = await cli(command, env);
      sim.faults = {};
      expect(sim.count("data", 500)).toBeGreaterThan(0);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/backfill jobs unfinished/);
      const { jobs } = readJobs(state);
      expect(jobs.length).toBeGreaterThan(0);
      expect(jobs.map((j) => [j.status, j.chunksDone])).toEqual(jobs.map(() => ["failed", 0]));
      const chunksTotal = jobs.reduce((n, j) => n + j.chunksTotal, 0);
      const fetched = sim.count("data", 200);
      expect(stateOf(state).deadLetters).toBe(0);
      const shown = await status(env);
      expect(shown.lastRun?.status).toBe("failed");
      expect(shown.backfillJobs.map((j) => j.status)).toEqual(jobs.map(() => "failed"));

      // the run's requests are the API's own count of the data requests, every attempt
      const apiRequests = sim.count("data");
      expect(apiRequests).toBeGreaterThan(0);
      const summary = /, (\d+) requests ->/.exec(refused.stdout)?.[1];
      const logged = refused.child.logged("backfill finished")[0]?.requests;
      expect({
        summary: Number(summary),
        row: stateOf(state).lastRun?.requests,
        logged,
      }).toEqual({ summary: apiRequests, row: apiRequests, logged: apiRequests });
      measured.push(
        `backfill, every write refused (${refusal}): exit ${refused.code}, ${apiRequests} API ` +
          `requests (summary and runs row say ${summary}) for ${fetched} of ${chunksTotal} chunks, ` +
          `${front.writes.requests} write ` +
          `requests for ${front.writes.lines} lines sent, 0 dead letters`,
      );
      expect(front.writes.requests).toBeLessThanOrEqual(apiRequests * MAX_WRITES_PER_CHUNK);

      front.mode = { kind: "pass" };
      const again = await cli(command, env);
      expect({ code: again.code, stderr: again.code === 0 ? "" : again.stderr }).toEqual({
        code: 0,
        stderr: "",
      });
      expect(readJobs(state).jobs.map((j) => j.status)).toEqual(jobs.map(() => "done"));
      await expectComplete(db, truth(BACKFILL_FROM_S, BACKFILL_TO_S));
      expect(stateOf(state).deadLetters).toBe(0);
    },
    180_000,
  );

  it("a field type conflict on one measurement (422 partial write): just its lines are dead letters, the rest stored", async () => {
    const { db, front, state, env } = await setUp("refusal_conflict");
    const expected = truth(SYNC_FROM_S, SIM_START_MS / 1000);
    const counts = new Map<string, number>();
    for (const p of expected) counts.set(p.measurement, (counts.get(p.measurement) ?? 0) + 1);
    // a measurement of every device that is not most of the data
    const [measurement] = [...counts].sort((a, b) => a[1] - b[1]).at(-2) ?? ["none"];
    front.mode = { kind: "conflict", measurement };
    const sync = await cli(["sync"], { ...env, SYNC_START: iso(SYNC_FROM_S) });
    expect({ code: sync.code, stderr: sync.code === 0 ? "" : sync.stderr }).toEqual({
      code: 0,
      stderr: "",
    });
    const conflicting = expected.filter((p) => p.measurement === measurement);
    expect(conflicting.length).toBeGreaterThan(0);
    expect(stateOf(state).deadLetters).toBe(conflicting.length);
    const stored = await rawPoints(db);
    expect(sortPoints(stored)).toEqual(
      sortPoints(expected.filter((p) => p.measurement !== measurement)),
    );
  }, 180_000);
});
