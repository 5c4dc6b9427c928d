/**
 * State integrity and honest health (issue 10, "State lost silently", "Misconfiguration looks
 * healthy"): the built CLI as real child processes on real SQLite files, the test InfluxDB behind
 * a counting proxy, and the in-process service for what needs a clock. The state file deleted
 * under `run` stops it with a clear error; a path that cannot be created fails at once; SQLite
 * errors name STATE_DB and say what to do; /readyz asks InfluxDB at most once per interval,
 * answers HEAD like GET, says "not ready" after failed syncs or a lagging cursor; the health
 * server binds 127.0.0.1 unless HTTP_HOST says otherwise. Every wait is bounded.
 */
import { execFileSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { networkInterfaces } from "node:os";
import { dirname } from "node:path";
import { performance } from "node:perf_hooks";
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import { EtlService } from "../../src/service/etl-service.js";
import type { Simulator } from "../../src/simulator/server.js";
import { StateError, stateError } from "../../src/state/state-error.js";
import { killCliChildren, signalAndMeasure, spawnCli } from "../support/cli-child.js";
import { type HangProxy, startHangProxy } from "../support/hang-proxy.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { freePort } from "../support/influxd.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { startService, tickSync } from "../support/service.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";
import { withDeadline } from "../support/wait.js";

/** The simulator's clock: fixed, on the hour, just before the real now. */
const SIM_NOW_MS = Math.floor(Date.now() / 3_600_000) * 3_600_000;
const NO_TICK_CRON = "0 0 1 1 *";
const SHUTDOWN_TIMEOUT_MS = 2000;
const EXIT_BOUND_MS = SHUTDOWN_TIMEOUT_MS + 1000 + 1500;
/** A start-up, a sync or a command that takes longer fails the test. */
const STEP_DEADLINE_MS = 30_000;
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** An answer read off the socket as it came: status line, headers and the raw body. */
async function rawRequest(
  port: number,
  method: string,
  path: string,
): Promise<{ status: number; head: string; body: string }> {
  const socket = connect(port, "127.0.0.1");
  const received = new Promise<string>((resolve, reject) => {
    let text = "";
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("latin1");
    });
    socket.on("end", () => resolve(text));
    socket.on("error", reject);
  });
  socket.write(`${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
  try {
    const text = await withDeadline(received, 10_000, `${method} ${path}`);
    const at = text.indexOf("\r\n\r\n");
    const head = at < 0 ? text : text.slice(0, at);
    return {
      status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0),
      head,
      body: at < 0 ? "" : text.slice(at + 4),
    };
  } finally {
    socket.destroy();
  }
}

/** An IPv4 address of this machine that is not loopback, if it has one. */
function externalIPv4(): string | undefined {
  return Object.values(networkInterfaces())
    .flatMap((list) => list ?? [])
    .find((a) => a.family === "IPv4" && !a.internal)?.address;
}

/** True when a TCP connection to host:port is accepted (false when refused, or after 3 s). */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, host);
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), 3_000);
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

describe("state integrity and honest health", () => {
  let sim: Simulator;
  let db: TestInfluxDb;
  const proxies: HangProxy[] = [];
  const dirs: string[] = [];
  const cleanups: (() => void)[] = [];
  const report: string[] = [];

  beforeAll(async () => {
    sim = await startTestSimulator({ now: () => SIM_NOW_MS, resolutionS: 3600 });
    db = await createTestInfluxDb("state_integrity");
  });
  afterEach(async () => {
    await killCliChildren();
    for (const cleanup of cleanups.splice(0)) cleanup();
    await Promise.all(proxies.splice(0).map((p) => p.close()));
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  afterAll(async () => {
    await sim.close();
    process.stdout.write(`state integrity:\n  ${report.join("\n  ")}\n`);
  });

  function newState(): string {
    const state = tempStateDb();
    dirs.push(dirname(state));
    return state;
  }

  const envFor = (state: string, extra: Record<string, string> = {}) =>
    pipelineEnv(sim, db, state, {
      LOG_LEVEL: "info",
      SYNC_CRON: NO_TICK_CRON,
      SYNC_START: "PT3H",
      SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
      ...extra,
    });

  it("the state file deleted while `run` works: it stops with a clear error instead of writing into nothing", async () => {
    const state = newState();
    const port = await freePort();
    const run = spawnCli(["run"], envFor(state, { HTTP_PORT: String(port) }));
    await run.waitForLog("sync finished", STEP_DEADLINE_MS);
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`, {
      signal: AbortSignal.timeout(10_000),
    });
    expect(ready.status).toBe(200);

    for (const file of [state, `${state}-wal`, `${state}-shm`]) rmSync(file, { force: true });
    const deletedAt = performance.now();
    // meanwhile /readyz is not ready (or the process is already gone)
    let readiness: string;
    try {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`, {
        signal: AbortSignal.timeout(10_000),
      });
      readiness = `${res.status} ${await res.text()}`;
    } catch {
      readiness = "gone";
    }
    expect(readiness).toMatch(/^(gone|503 .*)$/);
    if (readiness !== "gone") expect(readiness).toMatch(/deleted|stopping/);

    // the heartbeat (10 s) notices it at the latest
    const exit = await run.wait(25_000, "run after its state file was deleted");
    const ms = Math.round((run.exitedAt() ?? performance.now()) - deletedAt);
    report.push(
      `state file deleted: /readyz ${readiness.slice(0, 160)}; exit ${exit.code} ${ms} ms after the deletion`,
    );
    expect(exit.code).not.toBe(0);
    expect(exit.code).not.toBeNull();
    expect(run.stderr()).toMatch(
      new RegExp(`state database ${escapeRegExp(state)} \\(STATE_DB\\) was deleted while in use`),
    );
  }, 60_000);

  it.each([["status"], ["sync"], ["run"]])(
    "STATE_DB=/proc/nope/state.db fails at once with a clear message (%s)",
    async (command) => {
      const path = "/proc/nope/state.db";
      const cli = spawnCli([command], {
        ...envFor(newState(), { HTTP_PORT: String(await freePort()) }),
        STATE_DB: path,
      });
      const exit = await cli.wait(10_000, `${command} with STATE_DB under /proc`);
      report.push(`STATE_DB=${path} ${command}: exit ${exit.code}`);
      expect(exit.code).not.toBe(0);
      expect(exit.code).not.toBeNull();
      // status only reads: a missing file is named as such; the others cannot create it
      expect(cli.stderr()).toMatch(
        command === "status"
          ? new RegExp(`STATE_DB ${escapeRegExp(path)} does not exist`)
          : new RegExp(`cannot open state database ${escapeRegExp(path)} \\(STATE_DB\\)`),
      );
    },
  );

  it("SQLite errors name STATE_DB and say what to do: not a database", async () => {
    const state = newState();
    writeFileSync(state, "these are notes, not a database\n".repeat(100));
    for (const command of ["status", "sync"]) {
      const cli = spawnCli([command], envFor(state));
      const exit = await cli.wait(15_000, `${command} on a text file`);
      report.push(`STATE_DB a text file, ${command}: exit ${exit.code}`);
      expect(exit.code).toBe(1);
      expect(cli.stderr()).toMatch(
        new RegExp(
          `state database ${escapeRegExp(state)} \\(STATE_DB\\): file is not a database; it is not an SQLite database`,
        ),
      );
    }
  });

  it("SQLite errors name STATE_DB and say what to do: a read-only database", async () => {
    const state = newState();
    const created = spawnCli(["migrate"], envFor(state));
    expect((await created.wait(15_000, "migrate creating the state")).code).toBe(0);
    const root = process.getuid?.() === 0;
    let readOnly = false;
    if (!root) {
      rmSync(`${state}-wal`, { force: true });
      rmSync(`${state}-shm`, { force: true });
      execFileSync("chmod", ["0444", state]);
      readOnly = true;
    } else {
      // root writes through file modes; the immutable attribute stops it where the file system
      // and the capabilities allow it
      try {
        execFileSync("chattr", ["+i", state], { stdio: "ignore" });
        cleanups.push(() => execFileSync("chattr", ["-i", state], { stdio: "ignore" }));
        readOnly = true;
      } catch {
        readOnly = false;
      }
    }
    if (readOnly) {
      const cli = spawnCli(["sync", "--output", "/dev/null"], envFor(state));
      const exit = await cli.wait(15_000, "sync on a read-only state file");
      report.push(`read-only STATE_DB (${root ? "chattr +i" : "chmod 0444"}): exit ${exit.code}`);
      expect(exit.code).toBe(1);
      expect(cli.stderr()).toMatch(
        new RegExp(
          `state database ${escapeRegExp(state)} \\(STATE_DB\\): attempt to write a readonly database; it cannot be written: check the permissions`,
        ),
      );
    } else {
      // As root without the immutable attribute a read-only file cannot be provoked (root writes
      // through file modes): the mapping of SQLite's error to the message is asserted instead.
      report.push("read-only STATE_DB: not provokable here, asserted through stateError()");
      const error = stateError(state, {
        code: "SQLITE_READONLY",
        message: "attempt to write a readonly database",
      });
      expect(error).toBeInstanceOf(StateError);
      expect(error.message).toBe(
        `state database ${state} (STATE_DB): attempt to write a readonly database; it cannot be written: ` +
          "check the permissions of the file and of its directory (SQLite writes a -wal and a -shm file next to it)",
      );
    }
  });

  it("/readyz asks InfluxDB at most once per READY_CHECK_INTERVAL_MS; HEAD answers like GET; HTTP_HOST decides the address", async () => {
    const influx = await startHangProxy(db.url);
    proxies.push(influx);
    const state = newState();
    const port = await freePort();
    const env = {
      ...envFor(state, { HTTP_PORT: String(port), READY_CHECK_INTERVAL_MS: "60000" }),
      INFLUX_URL: influx.url,
    };
    const run = spawnCli(["run"], env);
    const started = await run.waitForLog("service started", STEP_DEADLINE_MS);
    expect(started.host).toBe("127.0.0.1");
    await run.waitForLog("sync finished", STEP_DEADLINE_MS);
    // the write checks: empty writes (the sync's own writes carry lines)
    const checks = () =>
      influx.requests.filter(
        (r) => r.method === "POST" && r.path === "/api/v2/write" && r.complete && r.bodyBytes === 0,
      ).length;
    const before = checks();
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`, {
        signal: AbortSignal.timeout(10_000),
      });
      statuses.push(res.status);
      await res.text();
    }
    const asked = checks() - before;
    const head = await rawRequest(port, "HEAD", "/readyz");
    const get = await rawRequest(port, "GET", "/readyz");
    report.push(
      `/readyz x10: statuses ${statuses.join(",")}; InfluxDB write checks ${asked} (start-up check: ${before}); HEAD ${head.status} with ${head.body.length} body bytes, GET ${get.status} with ${get.body.length}`,
    );
    expect(statuses).toEqual(Array(10).fill(200));
    expect(asked).toBeLessThanOrEqual(1);
    expect(checks() - before).toBe(asked);
    expect(head.status).toBe(get.status);
    expect(head.body).toBe("");
    expect(get.body).toMatch(/"status":"ready"/);

    // the default address is loopback only
    const external = externalIPv4();
    if (external !== undefined) expect(await accepts(external, port)).toBe(false);
    const stop = await signalAndMeasure(run, "SIGTERM", EXIT_BOUND_MS);
    expect({ code: stop.code, signal: stop.signal }).toEqual({ code: 0, signal: null });

    const all = spawnCli(["run"], { ...env, HTTP_HOST: "0.0.0.0" });
    const startedAll = await all.waitForLog("service started", STEP_DEADLINE_MS);
    expect(startedAll.host).toBe("0.0.0.0");
    const health = await fetch(`http://127.0.0.1:${port}/healthz`, {
      signal: AbortSignal.timeout(5_000),
    });
    expect(health.status).toBe(200);
    if (external !== undefined) expect(await accepts(external, port)).toBe(true);
    report.push(
      `HTTP_HOST default: ${String(started.host)}, HTTP_HOST=0.0.0.0: ${String(startedAll.host)}; external address ${external ?? "none"} checked`,
    );
    const stopAll = await signalAndMeasure(all, "SIGTERM", EXIT_BOUND_MS);
    expect({ code: stopAll.code, signal: stopAll.signal }).toEqual({ code: 0, signal: null });
  }, 90_000);

  describe("in-process service", () => {
    const clock = new ManualClock(SIM_NOW_MS);
    let ownSim: Simulator | undefined;
    let pipeline: Pipeline | undefined;
    let service: EtlService | undefined;

    afterEach(async () => {
      await service?.stop(2_000);
      await pipeline?.close();
      await ownSim?.close();
      service = undefined;
      pipeline = undefined;
      ownSim = undefined;
    });

    async function readyz(port: number): Promise<{ status: number; reason: string }> {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`, {
        signal: AbortSignal.timeout(10_000),
      });
      const body = (await res.json()) as { reason?: string };
      return { status: res.status, reason: body.reason ?? "" };
    }

    it("/readyz is not ready after READY_FAILED_SYNCS failed syncs, nor while a cursor lags more than READY_MAX_LAG", async () => {
      ownSim = await startTestSimulator({ now: clock.now, resolutionS: 3600 });
      const api = await startHangProxy(ownSim.url, "status", { only: /^\/devices/, status: 500 });
      proxies.push(api);
      const env = {
        ...pipelineEnv(ownSim, db, newState(), { SYNC_START: "PT3H", API_RETRIES: "1" }),
        ENERGY_API_URL: api.url,
      };
      const opened = await openTestPipeline(env, () => new Date(clock.now()));
      pipeline = opened.pipeline;
      service = new EtlService(pipeline, {
        state: opened.state,
        memoryBudgetMb: 512,
        cron: NO_TICK_CRON,
        httpPort: 0,
        httpHost: "127.0.0.1",
        readiness: { maxLagS: 3600, failedSyncs: 2, checkIntervalMs: 60_000 },
      });
      // start() ticks once: the first sync
      const open = pipeline;
      expect(await startService(service, open.store, STEP_DEADLINE_MS)).toMatchObject({
        status: "failed",
      });
      const { port } = service;
      const afterOne = await readyz(port);
      expect(afterOne).toEqual({ status: 200, reason: "" });

      expect(await tickSync(service, open.store, STEP_DEADLINE_MS)).toMatchObject({
        status: "failed",
      });
      const afterTwo = await readyz(port);
      report.push(`after 2 failed syncs: /readyz ${afterTwo.status} ${afterTwo.reason}`);
      expect(afterTwo.status).toBe(503);
      expect(afterTwo.reason).toMatch(/^syncs: the last 2 syncs failed/);

      // the API answers again: a good sync makes it ready
      api.setMode("pass");
      expect(await tickSync(service, open.store, STEP_DEADLINE_MS)).toMatchObject({
        status: "ok",
      });
      expect(await readyz(port)).toEqual({ status: 200, reason: "" });

      // two hours later, nothing synced since (no tick ran): the cursors lag
      clock.advance(2 * 3_600_000);
      // the API's clock as the client knows it (its Date header) moves with one answer
      await open.client.listDevices();
      const lagging = await readyz(port);
      report.push(`cursors 2 h behind: /readyz ${lagging.status} ${lagging.reason}`);
      expect(lagging.status).toBe(503);
      expect(lagging.reason).toMatch(/^lag: .* lags \d+ s \(READY_MAX_LAG 3600 s\)$/);
    }, 90_000);
  });
});
