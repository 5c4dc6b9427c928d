import { openPipeline } from "../../src/cli/open-pipeline.js";
import { loadConfig } from "../../src/config.js";
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import { EtlService } from "../../src/service/etl-service.js";
import { EtlMetrics } from "../../src/service/metrics.js";
import type { Simulator } from "../../src/simulator/server.js";
import { type HangProxy, startHangProxy } from "../support/hang-proxy.js";
import { influxql, TestInfluxd } from "../support/influxd.js";
import { captureLogger } from "../support/log-capture.js";
import { pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { lastSyncId, startService, syncEnded, tickSync } from "../support/service.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

const NOW_MS = Date.UTC(2026, 5, 15, 12);

/** Samples of the Prometheus text format: `name{labels}` -> value. */
function parseMetrics(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

describe("the service's /healthz, /readyz and /metrics", () => {
  const influxd = new TestInfluxd();
  const clock = new ManualClock(NOW_MS);
  const stateDb = tempStateDb();
  const { logger, lines: logLines } = captureLogger();
  let sim: Simulator;
  /** Between the service and InfluxDB: a test slows InfluxDB down with it. */
  let influx: HangProxy;
  let pipeline: Pipeline;
  let service: EtlService;
  let base = "";

  beforeAll(async () => {
    await influxd.start();
    await influxql(influxd.rawUrl, "", 'CREATE DATABASE "health"');
    sim = await startTestSimulator({ now: clock.now });
    influx = await startHangProxy(influxd.url);
    const target = { url: influx.url, token: "test-influx-token", org: "o", bucket: "health" };
    const env = pipelineEnv(sim, target, stateDb, {
      SYNC_START: "PT3H",
      INFLUX_RETRIES: "0",
    });
    const metrics = new EtlMetrics();
    const opened = await openPipeline(loadConfig({ env }), logger, {
      metrics,
      now: () => new Date(clock.now()),
    });
    pipeline = opened.pipeline;
    service = new EtlService(pipeline, {
      state: opened.state,
      // MEMORY_BUDGET_MB's default
      memoryBudgetMb: 512,
      // the test ticks; a cron tick of its own would only race with it
      cron: "0 0 1 1 *",
      httpPort: 0,
      httpHost: "127.0.0.1",
      metrics,
      // no caching here: the test turns InfluxDB off and on between two calls
      readiness: { maxLagS: 3600, failedSyncs: 3, checkIntervalMs: 0 },
    });
    await startService(service, pipeline.store);
    base = `http://127.0.0.1:${service.port}`;
  });
  afterAll(async () => {
    await service.stop(5000);
    await pipeline.close();
    await sim.close();
    await influx.close();
    await influxd.stop();
  });

  it("/healthz answers 200 while the process lives", async () => {
    const res = await fetch(`${base}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });

  it("/metrics counts requests, points and lag, and the counters move after a sync", async () => {
    const text = await (await fetch(`${base}/metrics`)).text();
    const first = parseMetrics(text);
    const dataOk =
      'energy_etl_api_requests_total{endpoint="GET /data/{device}/{resource}",status="200"}';
    expect(first.get(dataOk)).toBeGreaterThan(0);
    expect(first.get("energy_etl_points_written_total")).toBeGreaterThan(0);
    expect(
      first.get('energy_etl_cursor_lag_seconds{device_id="site A+1",resource_id="all_data"}'),
    ).toBe(0);
    expect(first.get('energy_etl_last_run_success{kind="sync"}')).toBe(1);
    expect(first.get("energy_etl_chunk_duration_seconds_count")).toBeGreaterThan(0);
    expect(first.has("energy_etl_queue_size")).toBe(true);
    // between syncs no answer is held and none waits for room
    expect(first.get("energy_etl_answer_budget_held_bytes")).toBe(0);
    expect(first.get("energy_etl_answer_budget_waiting")).toBe(0);
    expect(text).toContain("# TYPE energy_etl_api_retries_total counter");
    // a clean sync dropped nothing: each series of the counter is there, at 0
    for (const what of ["members", "rows_outside_window", "duplicate_rows"]) {
      expect(first.get(`energy_etl_dropped_total{what="${what}"}`)).toBe(0);
    }

    clock.advance(10 * 60_000);
    expect(await tickSync(service, pipeline.store)).toMatchObject({ status: "ok" });
    const second = parseMetrics(await (await fetch(`${base}/metrics`)).text());
    expect(second.get(dataOk)).toBeGreaterThan(first.get(dataOk) ?? 0);
    expect(second.get("energy_etl_points_written_total")).toBeGreaterThan(
      first.get("energy_etl_points_written_total") ?? 0,
    );
  });

  it("a sync's run ends once its report is written: a tick right after it is not skipped", async () => {
    const etlRuns = async (): Promise<unknown> => {
      const q = `SELECT count(ok) FROM etl_run WHERE "kind" = 'sync'`;
      const { results } = await influxql(influxd.rawUrl, "health", q);
      return results?.[0]?.series?.[0]?.values[0]?.[1];
    };
    const reportsBefore = await etlRuns();
    // a slow InfluxDB: the run's report (its last write) takes a while
    influx.setMode("pass", { delayMs: 300 });
    clock.advance(5 * 60_000);
    const before = lastSyncId(pipeline.store);
    expect(service.tick()).toBeDefined();
    const ended = await syncEnded(pipeline.store, before, "the tick's sync");
    // the moment the run shows ended, its report is written and the service takes the next tick
    const skipped = () => logLines.filter((l) => l.includes("this tick is skipped")).length;
    const skipsBefore = skipped();
    const next = service.tick();
    expect(skipped()).toBe(skipsBefore);
    expect(next).toBeDefined();
    influx.setMode("pass");
    expect(await etlRuns()).toBe(Number(reportsBefore) + 1);
    await syncEnded(pipeline.store, ended.id, "the next tick's sync");
  });

  it("/readyz is 200 when everything answers, 503 with the reason while InfluxDB is down", async () => {
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({
      status: "ready",
      checks: {
        influxdb: "ok",
        api: "ok",
        scheduler: "ok",
        syncs: "ok",
        lag: "ok",
        state: "ok",
      },
    });

    await influxd.stopInfluxd();
    const down = await fetch(`${base}/readyz`);
    expect(down.status).toBe(503);
    const body = (await down.json()) as { status: string; reason: string };
    expect(body.status).toBe("not ready");
    expect(body.reason).toMatch(/^influxdb: .*/);
    expect(body.reason).not.toContain("test-influx-token");

    await influxd.start();
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
  });
});
