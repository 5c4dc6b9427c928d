/**
 * Shutdown and exit of the built CLI as real child processes (issue 10, "SIGTERM never ends the
 * process when InfluxDB hangs", "Absurd Retry-After hangs the service", "Misconfiguration looks
 * healthy"): the simulator and the run's test InfluxDB behind hang-proxies that accept
 * connections and never answer, or answer 429 with an absurd Retry-After. SIGTERM must end `run`
 * with exit 0 within SHUTDOWN_TIMEOUT_MS + 1 s whatever the dependencies do (measured and
 * printed; a tolerance of 1.5 s for a loaded machine); every command exits when its work is done.
 * Every wait is bounded.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import type { Simulator } from "../../src/simulator/server.js";
import { killCliChildren, signalAndMeasure, spawnCli } from "../support/cli-child.js";
import {
  expectedPoints,
  rawPoints,
  simulatorRecords,
  sortPoints,
} from "../support/expected-points.js";
import { type HangProxy, startHangProxy } from "../support/hang-proxy.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { freePort } from "../support/influxd.js";
import { pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";
import { waitUntil } from "../support/wait.js";

const DAY_S = 86_400;
/** The simulator's clock: fixed, on a record boundary, just before the real now. */
const SIM_NOW_MS = Math.floor(Date.now() / 3_600_000) * 3_600_000;
const SIM_NOW_S = SIM_NOW_MS / 1000;
/** SYNC_START of the long first sync: 21 days, 33 data requests across the fleet. */
const LONG_START_S = SIM_NOW_S - 21 * DAY_S;
const SHUTDOWN_TIMEOUT_MS = 2000;
/** The bound (the timeout and a second) plus the tolerance for a loaded machine. */
const EXIT_BOUND_MS = SHUTDOWN_TIMEOUT_MS + 1000 + 1500;
/** Never fires: only the start-up sync runs. */
const NO_TICK_CRON = "0 0 1 1 *";
/** A start-up, a sync or a command that takes longer fails the test. */
const STEP_DEADLINE_MS = 30_000;

const iso = (s: number) => new Date(s * 1000).toISOString();
const measured: string[] = [];

describe("shutdown: `run` and the CLI commands end whatever their dependencies do", () => {
  let sim: Simulator;
  let db: TestInfluxDb;
  const proxies: HangProxy[] = [];
  const dirs: string[] = [];

  beforeAll(async () => {
    sim = await startTestSimulator({ now: () => SIM_NOW_MS, resolutionS: 3600 });
    db = await createTestInfluxDb("shutdown");
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
    process.stdout.write(`shutdown measurements:\n  ${measured.join("\n  ")}\n`);
  });

  /** Proxies in front of the simulator and the test InfluxDB, and an environment using them. */
  async function setUp(extra: Record<string, string> = {}) {
    const api = await startHangProxy(sim.url);
    const influx = await startHangProxy(db.url);
    proxies.push(api, influx);
    const state = tempStateDb();
    dirs.push(dirname(state));
    const port = await freePort();
    const env = {
      ...pipelineEnv(sim, db, state, {
        LOG_LEVEL: "info",
        SYNC_CRON: NO_TICK_CRON,
        SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
        HTTP_PORT: String(port),
        ...extra,
      }),
      ENERGY_API_URL: api.url,
      INFLUX_URL: influx.url,
    };
    return { api, influx, env, port, state };
  }

  it("SIGTERM ends `run` within SHUTDOWN_TIMEOUT_MS + 1 s with exit 0 while InfluxDB and the API hang; a rerun finishes exactly", async () => {
    sim.latencyMs = 150;
    const { api, influx, env } = await setUp({ SYNC_START: iso(LONG_START_S) });
    const run = spawnCli(["run"], env);
    const dataAnswers = () =>
      api.requests.filter((r) => r.path.startsWith("/data/") && r.status === 200).length;
    await waitUntil(() => dataAnswers() >= 6, "6 data answers of the first sync", {
      timeoutMs: STEP_DEADLINE_MS,
      intervalMs: 5,
      stopIf: run.exited,
    });
    // mid-sync, one step after the other so that both hold requests whatever the timing: InfluxDB
    // holds one write (its chunk keeps its slot), then the API stops answering, then InfluxDB too
    let writes = 0;
    influx.setMode("hang", { only: () => writes++ === 0 });
    await waitUntil(() => influx.hanging() > 0, "a write held by InfluxDB", {
      timeoutMs: 10_000,
      intervalMs: 5,
      stopIf: run.exited,
    });
    api.setMode("hang");
    await waitUntil(() => api.hanging() > 0, "an API request held", {
      timeoutMs: 10_000,
      intervalMs: 5,
      stopIf: run.exited,
    });
    influx.setMode("hang");
    expect(run.exited()).toBe(false);
    expect(run.logged("sync finished")).toEqual([]);
    const held = { api: api.hanging(), influx: influx.hanging() };

    const exit = await signalAndMeasure(run, "SIGTERM", EXIT_BOUND_MS);
    measured.push(
      `hung API and InfluxDB (${held.api} API requests, ${held.influx} writes held): SIGTERM -> exit ${exit.code} in ${exit.elapsedMs} ms (bound ${EXIT_BOUND_MS} ms)`,
    );
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
    expect(exit.elapsedMs).toBeLessThanOrEqual(EXIT_BOUND_MS);

    // a rerun on the same state, the dependencies answering again, finishes exactly
    api.setMode("pass");
    influx.setMode("pass");
    const rerun = spawnCli(["sync"], env);
    const ended = await rerun.wait(STEP_DEADLINE_MS * 2, "the rerun");
    expect({ code: ended.code, stderr: ended.code === 0 ? "" : rerun.stderr() }).toEqual({
      code: 0,
      stderr: "",
    });
    expect(rerun.stdout()).toMatch(/^sync ok: 4 devices/m);
    const expected = sim.fleet
      .deviceIds()
      .flatMap((d) =>
        (sim.fleet.resourceIds(d) ?? []).flatMap((r) =>
          expectedPoints(d, r, simulatorRecords(sim.fleet, d, r, LONG_START_S, SIM_NOW_S)),
        ),
      );
    expect(expected.length).toBeGreaterThan(10_000);
    const stored = await rawPoints(db);
    expect(stored.length).toBe(expected.length);
    expect(sortPoints(stored)).toEqual(sortPoints(expected));
  }, 120_000);

  it("SIGTERM during start-up (InfluxDB hangs on the start-up check) exits at once", async () => {
    const { influx, env } = await setUp({ SYNC_START: "PT2H" });
    influx.setMode("hang");
    const run = spawnCli(["run"], env);
    await waitUntil(() => influx.hanging() > 0, "the start-up check held by InfluxDB", {
      timeoutMs: 15_000,
      intervalMs: 10,
      stopIf: run.exited,
    });
    // held there: the service has not started and cannot until the check ends
    expect(run.exited()).toBe(false);
    expect(run.logged("service started")).toEqual([]);
    const exit = await signalAndMeasure(run, "SIGTERM", EXIT_BOUND_MS);
    measured.push(
      `start-up check held by InfluxDB: SIGTERM -> exit ${exit.code} in ${exit.elapsedMs} ms (bound ${EXIT_BOUND_MS} ms)`,
    );
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
    expect(exit.elapsedMs).toBeLessThanOrEqual(EXIT_BOUND_MS);
  });

  it("`sync` exits when its work is done", async () => {
    const { env } = await setUp({ SYNC_START: "PT6H" });
    const sync = spawnCli(["sync"], env);
    const summaryAt = await sync.waitForStdout(/^sync ok: 4 devices.*\n/m, STEP_DEADLINE_MS * 2);
    // the proxies keep idle connections open for a minute: they must not hold the process
    const exit = await sync.wait(10_000, "sync to exit after printing its summary");
    const afterSummaryMs = Math.round((sync.exitedAt() ?? performance.now()) - summaryAt);
    measured.push(`sync: exit ${exit.code} ${afterSummaryMs} ms after its summary line`);
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
  });

  it("`sync` exits when its work is done, also when InfluxDB stopped answering midway", async () => {
    const { influx, env } = await setUp({
      SYNC_START: "PT6H",
      INFLUX_TIMEOUT_MS: "1000",
      INFLUX_DEADLINE_MS: "1000",
      INFLUX_RETRIES: "0",
    });
    // /ping and the start-up check (the first write) are answered; every write after it is
    // held, its socket left open
    let writes = 0;
    influx.setMode("hang", { only: (url) => url.includes("/write") && writes++ > 0 });
    const sync = spawnCli(["sync"], env);
    const summaryAt = await sync.waitForStdout(/^sync \w+: 4 devices.*\n/m, STEP_DEADLINE_MS * 2);
    const exit = await sync.wait(10_000, "sync to exit after printing its summary");
    const afterSummaryMs = Math.round((sync.exitedAt() ?? performance.now()) - summaryAt);
    measured.push(
      `sync with writes held (${influx.count({ mode: "hang" })} writes, ${influx.hanging()} still open at the exit): exit ${exit.code} ${afterSummaryMs} ms after its summary line`,
    );
    expect(influx.count({ mode: "hang" })).toBeGreaterThan(0);
    expect(sync.stdout()).toMatch(/^sync failed: 4 devices/m);
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 1, signal: null });
  }, 90_000);

  it("a 429 with Retry-After: 1000000000 fails its chunk at once; `run` stays responsive and stops on SIGTERM", async () => {
    const { api, env, port } = await setUp({ SYNC_START: "PT6H" });
    api.setMode("retry-after", { retryAfter: "1000000000", only: /^\/data\// });
    const run = spawnCli(["run"], env);
    const finished = await run.waitForLog("sync finished", STEP_DEADLINE_MS);
    expect(finished.status).not.toBe("ok");
    expect(run.stderr()).not.toMatch(/TimeoutOverflowWarning/);
    // one cause: its first chunk is one line, the others are counted in one more line
    const failures = run.logged("chunk failed");
    expect(failures).toHaveLength(1);
    expect(String(failures[0]?.error)).toMatch(/API_RETRY_AFTER_MAX/);
    const counted = run.logged("chunks failed for one cause");
    const failedChunks = Number(counted[0]?.chunks ?? 1);
    // each refused chunk was asked once: no wait, no retry
    const refused = api.requests.filter((r) => r.mode === "retry-after");
    expect(refused.length).toBe(failedChunks);
    expect(new Set(refused.map((r) => r.url)).size).toBe(refused.length);
    const health = await fetch(`http://127.0.0.1:${port}/healthz`, {
      signal: AbortSignal.timeout(5_000),
    });
    expect(health.status).toBe(200);

    const exit = await signalAndMeasure(run, "SIGTERM", EXIT_BOUND_MS);
    measured.push(
      `Retry-After 1000000000 (${refused.length} chunks refused): SIGTERM -> exit ${exit.code} in ${exit.elapsedMs} ms (bound ${EXIT_BOUND_MS} ms)`,
    );
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
    expect(exit.elapsedMs).toBeLessThanOrEqual(EXIT_BOUND_MS);
    expect(run.stderr()).not.toMatch(/TimeoutOverflowWarning/);
  });

  it("`run` refuses to start without INFLUX_URL unless OUTPUT_FILE is set", async () => {
    const { env, port } = await setUp({ SYNC_START: "PT6H" });
    const refused = spawnCli(["run"], { ...env, INFLUX_URL: "", OUTPUT_FILE: "" });
    const exit = await refused.wait(15_000, "run without INFLUX_URL");
    expect(exit.code).toBe(2);
    expect(refused.stderr()).toMatch(/INFLUX_URL/);
    expect(refused.stderr()).toMatch(/OUTPUT_FILE/);
    expect(refused.logged("service started")).toEqual([]);

    const out = mkdtempSync(join(tmpdir(), "energy-etl-output-"));
    dirs.push(out);
    const file = join(out, "points.lp");
    const run = spawnCli(["run"], { ...env, INFLUX_URL: "", OUTPUT_FILE: file });
    await run.waitForLog("service started", STEP_DEADLINE_MS);
    const health = await fetch(`http://127.0.0.1:${port}/healthz`, {
      signal: AbortSignal.timeout(5_000),
    });
    expect(health.status).toBe(200);
    const finished = await run.waitForLog("sync finished", STEP_DEADLINE_MS);
    expect(finished.status).toBe("ok");
    const lines = readFileSync(file, "utf8")
      .split("\n")
      .filter((l) => l !== "");
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.some((l) => /^\w+,.*device_id=hybrid-site-01.* \d+$/.test(l))).toBe(true);
    const stop = await signalAndMeasure(run, "SIGTERM", EXIT_BOUND_MS);
    measured.push(`run with OUTPUT_FILE: SIGTERM -> exit ${stop.code} in ${stop.elapsedMs} ms`);
    expect({ code: stop.code, signal: stop.signal }).toEqual({ code: 0, signal: null });
  });
});
