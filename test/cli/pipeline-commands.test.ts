import { z } from "zod";
import { runCli } from "../../src/cli.js";
import type { Simulator } from "../../src/simulator/server.js";
import { StateStore } from "../../src/state/state-store.js";
import { queueJob } from "../support/backfill-jobs.js";
import { killCliChildren, spawnCli } from "../support/cli-child.js";
import { bufferIo } from "../support/cli-io.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { freePort } from "../support/influxd.js";
import { pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";

/** One job of `backfill --dry-run --json`: its spec and how many requests it takes. */
const plannedSchema = z.object({
  deviceId: z.string(),
  resourceId: z.string(),
  valueIds: z.array(z.string()),
  fromS: z.number(),
  toS: z.number(),
  reason: z.enum(["manual", "new_value", "audit", "parked"]),
  requests: z.number(),
});

describe("sync, backfill, status and run from the command line", () => {
  let sim: Simulator;
  let db: TestInfluxDb;
  let env: Record<string, string>;

  beforeAll(async () => {
    // coarse records keep the simulator's history (since 2025-01-01, up to the real now) cheap
    sim = await startTestSimulator({ resolutionS: 900 });
    db = await createTestInfluxDb("cli");
    env = pipelineEnv(sim, db, tempStateDb(), { SYNC_START: "PT2H", LOG_LEVEL: "info" });
  });
  afterAll(() => sim.close());
  afterEach(killCliChildren);

  async function run(...argv: string[]) {
    const io = bufferIo(env);
    const code = await runCli(argv, io);
    return { code, out: io.out(), err: io.err() };
  }

  it("backfill --dry-run prints the plan and fetches no data", async () => {
    sim.resetLog();
    const { code, out } = await run(
      "backfill",
      "--all",
      "--from",
      "2026-01-01",
      "--to",
      "2026-03-01",
      "--dry-run",
    );
    expect(code).toBe(0);
    expect(out).toMatch(/^device\tresource\tvalues\trequests$/m);
    expect(out).toMatch(/hybrid-site-01\tall_data\t.*61\t.*36/);
    expect(out).toMatch(/total: \d+ requests; about \d+(\.\d)? s \(dry run: nothing fetched\)/);
    expect(out).toMatch(/^ {2}rate: +at most 1000 requests\/s \(API_RATE_LIMIT\)/m);
    expect(sim.count("data")).toBe(0);
    const json = await run(
      "backfill",
      "--all",
      "--from",
      "2026-01-01",
      "--to",
      "2026-03-01",
      "--dry-run",
      "--json",
    );
    expect(json.code).toBe(0);
    const plan = JSON.parse(json.out) as {
      deviceId: string;
      resourceId: string;
      requests: number;
    }[];
    expect(
      plan.find((p) => p.deviceId === "hybrid-site-01" && p.resourceId === "all_data"),
    ).toMatchObject({ requests: 36 });
    expect(sim.count("data")).toBe(0);
  });

  it.each([
    [["backfill", "--from", "2026-01-01"], /give --device ID \.\.\. or --all/],
    [
      ["backfill", "--all", "--from", "last tuesday"],
      /--from: expected an ISO date or date-time \(UTC\), "now", or a time before now/,
    ],
    [
      ["backfill", "--all", "--from", "2026-02-01", "--to", "2026-01-01"],
      /--from must not be after --to/,
    ],
    [["backfill", "--all"], /give --from/],
  ])("backfill %j is a usage error", async (argv, message) => {
    const { code, err } = await run(...argv);
    expect(code).toBe(2);
    expect(err).toMatch(message);
  });

  it("backfill writes and reports progress lines off a terminal; a finished one runs again when asked", async () => {
    const args = [
      "backfill",
      "--device",
      "site A+1",
      "--from",
      "2026-01-01T00:00",
      "--to",
      "2026-01-20T00:00",
    ];
    const first = await run(...args);
    expect(first.code).toBe(0);
    expect(first.out).toMatch(
      /backfill: 1\/1 jobs done, 6\/6 chunks, \d+ points, 6 requests -> InfluxDB/,
    );
    expect(first.err).toMatch(/"msg":"backfill progress"/);
    sim.resetLog();
    const again = await run(...args);
    expect(again.code).toBe(0);
    expect(sim.count("data")).toBe(6);
  });

  it("sync runs one cycle and status shows cursors, lag and the last run", async () => {
    const synced = await run("sync", "--device", "site A+1", "--device", "audit-box-03");
    expect(synced.code).toBe(0);
    expect(synced.out).toMatch(/site A\+1: \d+ points in \d+ requests/);
    expect(synced.out).toMatch(/sync ok: 2 devices/);

    const status = await run("status", "--json");
    const body = JSON.parse(status.out);
    expect(body.cursors.map((w: { deviceId: string }) => w.deviceId)).toEqual(
      expect.arrayContaining(["site A+1", "audit-box-03"]),
    );
    expect(body.lastRun).toMatchObject({ kind: "sync", status: "ok", devices: 2 });
    const table = await run("status");
    expect(table.out).toMatch(/^site A\+1\tall_data\t\d{4}-\d\d-\d\dT.*\t\d+ (s|min)\t.*ok/m);
    expect(table.out).toMatch(/last run: sync #\d+ ok/);
  });

  it("backfill --to in the future stops at now: the cursor never runs ahead of the data", async () => {
    // up to a day ahead is taken (a later --to is refused: test/cli/input-bounds.test.ts)
    const soon = new Date(Date.now() + 12 * 3_600_000).toISOString();
    const { code } = await run(
      "backfill",
      "--device",
      "audit-box-03",
      "--from",
      "2026-11-01",
      "--to",
      soon,
    );
    expect(code).toBe(0);
    const status = JSON.parse((await run("status", "--json")).out) as {
      cursors: { deviceId: string; newestRecordAt: string; fetchedUntil: string }[];
    };
    const audit = status.cursors.find((w) => w.deviceId === "audit-box-03");
    expect(Date.parse(audit?.newestRecordAt ?? "")).toBeLessThanOrEqual(Date.now());
    expect(Date.parse(audit?.fetchedUntil ?? "")).toBeLessThanOrEqual(Date.now());
  });

  it("backfill --retry-parked runs the parked jobs of --device again, with a fresh set of attempts", async () => {
    const own = { ...env, STATE_DB: tempStateDb() };
    const plan = async (device: string) => {
      const io = bufferIo(own);
      const argv = ["backfill", "--device", device, "--from", "2026-02-01", "--to", "2026-02-03"];
      expect(await runCli([...argv, "--dry-run", "--json"], io)).toBe(0);
      return z.array(plannedSchema).length(1).parse(JSON.parse(io.out()))[0];
    };
    const store = StateStore.open(own.STATE_DB);
    try {
      const parked = [await plan("audit-box-03"), await plan("site A+1")].map((p) => {
        if (p === undefined) throw new Error("no plan");
        const { requests, ...spec } = p;
        return queueJob(store.jobs, spec, requests, new Date(), "parked").job;
      });
      const io = bufferIo(own);
      expect(await runCli(["backfill", "--retry-parked", "--device", "audit-box-03"], io)).toBe(0);
      expect(io.out()).toMatch(/^retrying 1 parked jobs$/m);
      expect(io.out()).toMatch(/^backfill: 1\/1 jobs done, (\d+)\/\1 chunks, \d+ points/m);
      expect(parked.map((j) => store.jobs.get(j.id)?.status)).toEqual(["done", "parked"]);
    } finally {
      store.close();
    }
  });

  it("sync of an unknown device fails with exit 1", async () => {
    const { code, err } = await run("sync", "--device", "nope");
    expect(code).toBe(1);
    expect(err).toMatch(/unknown device: nope/);
  });

  it("run serves /healthz, syncs, and exits 0 on SIGTERM", async () => {
    const port = await freePort();
    const cli = spawnCli(["run"], {
      ...env,
      HTTP_PORT: String(port),
      SYNC_CRON: "*/1 * * * *",
    });
    await cli.waitForLog("sync finished", 30_000);
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    const metrics = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/^energy_etl_points_written_total [1-9]/m);
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    cli.child.kill("SIGTERM");
    const { code } = await cli.wait(15_000, "run after SIGTERM");
    expect(code).toBe(0);
    expect(cli.stderr()).toMatch(/"msg":"service stopped"/);
  });
});
