/**
 * The container image (issue 22), by `npm run test:image` (not part of `npm test`): the Dockerfile
 * built as it is with podman (its `FROM` image stood in for, see stand-in-base.ts), checked as
 * built, then its file system run as the image runs it (image-root.ts): `run` against the
 * simulator and the tests' influxd (through the tests' v2 write front), readiness, the
 * HEALTHCHECK's own command, SIGTERM, a backfill SIGKILLed and resumed, and the demo. Figures are
 * printed at the end (the note takes them from there).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Simulator } from "../../src/simulator/server.js";
import { readJobs } from "../support/backfill-jobs.js";
import {
  type CliChild,
  killCliChildren,
  signalAndMeasure,
  trackCli,
} from "../support/cli-child.js";
import {
  expectedPoints,
  rawPoints,
  simulatorRecords,
  sortPoints,
} from "../support/expected-points.js";
import { type HangProxy, startHangProxy } from "../support/hang-proxy.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { freePort } from "../support/influxd.js";
import { pipelineEnv } from "../support/pipeline.js";
import { requestsFor } from "../support/schema-oracle.js";
import { startTestSimulator } from "../support/simulator.js";
import { waitUntil } from "../support/wait.js";
import { ensureHostTools, podman, runCommand } from "./host-tools.js";
import { ImageRoot } from "./image-root.js";
import { baseImages, ensureBase } from "./stand-in-base.js";

/** This run's image (its own tag: runs on one machine do not remove each other's). */
const IMAGE = `localhost/energy-etl-image-test:${process.pid}`;
const DAY_S = 86_400;
const HOUR_MS = 3_600_000;
/** The simulator's clock: fixed on an hour, so that every window is known. */
const SIM_NOW_MS = Math.floor(Date.now() / HOUR_MS) * HOUR_MS;
const SIM_NOW_S = SIM_NOW_MS / 1000;
const SHUTDOWN_TIMEOUT_MS = 2_000;
/** The bound (SHUTDOWN_TIMEOUT_MS + 1 s) and the tolerance the shutdown tests allow a loaded machine. */
const EXIT_BOUND_MS = SHUTDOWN_TIMEOUT_MS + 1_000 + 1_500;
/** A step (a sync, a backfill, the demo) that takes longer fails the test. */
const STEP_MS = 120_000;
/** What the image adds to its base (code and production dependencies) may weigh at most. */
const MAX_ADDED_MB = 100;
const BACKFILL_DEVICE = "hybrid-site-01";
/** Data answers the first backfill gets before the API holds every further request. */
const ANSWERED_BEFORE_KILL = 3;

const figures: string[] = [];
const note = (line: string) => figures.push(line);
const iso = (s: number) => new Date(s * 1000).toISOString();
const mb = (bytes: number) => Math.round(bytes / 1e6);

/** The flags between `node` and the script: of a `#!` line or of an exec-form command. */
function nodeFlags(argv: readonly string[]): string[] {
  const at = argv.findIndex((a) => a === "node" || a.endsWith("/node"));
  const script = argv.findIndex((a) => a.endsWith("cli.js"));
  return at < 0 ? [] : argv.slice(at + 1, script < 0 ? undefined : script);
}

/** The Dockerfile's base images. */
const BASES = baseImages(readFileSync("Dockerfile", "utf8"));

/** The image's entrypoint with `args`, in `root`, as its user, with `env`. */
function startIn(root: ImageRoot, args: readonly string[], env: Record<string, string>): CliChild {
  return trackCli(root.spawn(root.command(args), env), args);
}

/** What a run added or changed outside /data (nothing, as the image is meant to run). */
function outsideData(diff: { added: readonly string[]; changed: readonly string[] }): string[] {
  return [...diff.added, ...diff.changed].filter((p) => p !== "/data" && !p.startsWith("/data/"));
}

let buildSeconds = 0;
let danglingBefore = new Set<string>();

beforeAll(() => {
  ensureHostTools();
  for (const base of BASES) {
    const had = ensureBase(base);
    note(`base ${had.image}: ${had.how} (${had.seconds.toFixed(0)} s)`);
  }
  danglingBefore = new Set(podman("images", "--quiet", "--filter", "dangling=true").split("\n"));
  const started = Date.now();
  podman(
    "build",
    "--format=docker",
    "--isolation=chroot",
    "--network=host",
    "--pull=never",
    "--tag",
    IMAGE,
    ".",
  );
  buildSeconds = (Date.now() - started) / 1000;
  note(`build: ${buildSeconds.toFixed(0)} s`);
}, 900_000);

afterAll(() => {
  runCommand("podman", ["rmi", "--force", IMAGE]);
  // the build stage's images: what this build left, not what was there before
  for (const id of podman("images", "--quiet", "--filter", "dangling=true").split("\n")) {
    if (id !== "" && !danglingBefore.has(id)) runCommand("podman", ["rmi", "--force", id]);
  }
  process.stdout.write(`image test figures:\n  ${figures.join("\n  ")}\n`);
});

describe("the image as built", () => {
  let root: ImageRoot;
  beforeAll(() => {
    root = ImageRoot.open(IMAGE);
  });
  afterAll(() => root?.close());

  it("runs as uid 10001, for whom /app is read-only and /data writable", () => {
    expect(root.uidOf(root.config.User)).toEqual({ uid: 10001, gid: 10001 });
    const check = root.run([
      "sh",
      "-c",
      'id -u; find /app -writable | head -5; test -w /data && echo "/data writable"',
    ]);
    expect(check).toMatchObject({ status: 0, stdout: "10001\n/data writable\n" });
  });

  it("starts node with the flags of dist/cli.js's first line", () => {
    const shebang = root.read("/app/dist/cli.js").split("\n")[0] ?? "";
    expect(shebang).toMatch(/^#!\/usr\/bin\/env (-S )?node\b/);
    const fromShebang = nodeFlags(shebang.replace(/^#!\/usr\/bin\/env (-S )?/, "").split(/\s+/));
    expect(root.config.Entrypoint.slice(0, 1)).toEqual(["node"]);
    expect(root.config.Entrypoint.at(-1)).toBe("dist/cli.js");
    expect(nodeFlags(root.config.Entrypoint)).toEqual(fromShebang);
    expect(root.config.Cmd).toEqual(["run"]);
  });

  it("holds no dev dependency and no compiler", () => {
    const pkg = JSON.parse(root.read("/app/package.json")) as {
      devDependencies?: Record<string, string>;
    };
    const devDependencies = Object.keys(pkg.devDependencies ?? {});
    expect(devDependencies.length).toBeGreaterThan(0);
    const lock = JSON.parse(root.read("/app/node_modules/.package-lock.json")) as {
      packages: Record<string, { dev?: boolean }>;
    };
    const installed = Object.keys(lock.packages).map((p) => p.replace(/^.*node_modules\//, ""));
    expect(devDependencies.filter((d) => installed.includes(d))).toEqual([]);
    expect(Object.entries(lock.packages).filter(([, p]) => p.dev === true)).toEqual([]);
    const compilers = root.run([
      "sh",
      "-c",
      "for c in gcc g++ cc c++ make python3 node-gyp; do command -v $c; done; true",
    ]);
    expect(compilers).toMatchObject({ status: 0, stdout: "" });
  });

  it(`adds at most ${MAX_ADDED_MB} MB to its base`, () => {
    const size = Number(podman("image", "inspect", "--format", "{{.Size}}", IMAGE));
    const [base] = BASES;
    const baseSize = Number(podman("image", "inspect", "--format", "{{.Size}}", base ?? ""));
    note(
      `image size: ${mb(size)} MB, of which the base ${mb(baseSize)} MB, energy-etl ${mb(size - baseSize)} MB`,
    );
    expect(size - baseSize).toBeGreaterThan(1e6);
    expect(size - baseSize).toBeLessThan(MAX_ADDED_MB * 1e6);
  });
});

describe("the image's file system run as the image runs it", () => {
  let sim: Simulator;
  let db: TestInfluxDb;
  let api: HangProxy;
  let root: ImageRoot;

  /** The image's entrypoint with `args`, in the image, as its user, with the test's settings. */
  const start = (args: readonly string[], env: Record<string, string>) => startIn(root, args, env);

  /** Settings for the simulator (behind `api`) and the test database; the state stays the image's. */
  function imageEnv(extra: Record<string, string>): Record<string, string> {
    const { STATE_DB: _ownState, ...env } = pipelineEnv(sim, db, "", {
      LOG_LEVEL: "info",
      SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
      ...extra,
      ENERGY_API_URL: api.url,
    });
    return env;
  }

  beforeAll(async () => {
    sim = await startTestSimulator({ now: () => SIM_NOW_MS, resolutionS: 900 });
    db = await createTestInfluxDb("image");
    api = await startHangProxy(sim.url);
    root = ImageRoot.open(IMAGE);
  });
  afterEach(async () => {
    await killCliChildren();
    api.setMode("pass");
  });
  afterAll(async () => {
    root?.close();
    await api?.close();
    await sim?.close();
  });

  it("`run` syncs into InfluxDB, is ready, passes its HEALTHCHECK and ends on SIGTERM with exit 0 in time", async () => {
    const port = await freePort();
    const run = start(
      ["run"],
      imageEnv({
        HTTP_PORT: String(port),
        SYNC_START: iso(SIM_NOW_S - 2 * DAY_S),
        SYNC_CRON: "0 0 1 1 *",
      }),
    );
    const synced = await run.waitForLog("sync finished", STEP_MS);
    expect(synced).toMatchObject({ status: "ok", devices: 4, errors: 0 });
    const points = Number(synced.points);
    expect(points).toBeGreaterThan(10_000);
    expect((await rawPoints(db)).length).toBe(points);
    note(`run: first sync of 4 devices over 2 days: ${points} points`);

    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(200);
    note(`run: /readyz ${ready.status}`);
    const test = root.config.Healthcheck?.Test ?? [];
    expect(test[0]).toBe("CMD");
    const health = root.run(test.slice(1), { HTTP_PORT: String(port) });
    expect(health.status).toBe(0);
    note(`run: HEALTHCHECK command exit ${health.status}`);

    const exit = await signalAndMeasure(run, "SIGTERM", EXIT_BOUND_MS);
    expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
    expect(exit.elapsedMs).toBeLessThanOrEqual(EXIT_BOUND_MS);
    note(
      `run: SIGTERM to exit ${exit.elapsedMs} ms (exit ${exit.code}; SHUTDOWN_TIMEOUT_MS ${SHUTDOWN_TIMEOUT_MS})`,
    );
  });

  it("a backfill SIGKILLed mid-way resumes: the same command fetches only the chunks not done", async () => {
    const fromS = SIM_NOW_S - 30 * DAY_S;
    const toS = SIM_NOW_S - DAY_S;
    const args = ["backfill", "--device", BACKFILL_DEVICE, "--from", iso(fromS), "--to", iso(toS)];
    const env = imageEnv({ API_CONCURRENCY: "2" });
    let answered = 0;
    api.setMode("hang", {
      only: (url) => url.startsWith("/data/") && ++answered > ANSWERED_BEFORE_KILL,
    });
    const first = start(args, env);
    const state = join(root.path, "data/state.db");
    await first.waitForLog("backfill job started", STEP_MS);
    const chunksDone = () => [...readJobs(state).done.values()].reduce((n, d) => n + d.size, 0);
    await waitUntil(
      () => chunksDone() >= ANSWERED_BEFORE_KILL && api.hanging() > 0,
      "3 chunks done, the API holding",
      {
        timeoutMs: STEP_MS,
        intervalMs: 50,
        stopIf: first.exited,
      },
    );
    first.child.kill("SIGKILL");
    expect(await first.wait(10_000, "backfill after SIGKILL")).toMatchObject({ signal: "SIGKILL" });

    const afterKill = readJobs(state);
    const jobs = afterKill.jobs.filter((j) => j.deviceId === BACKFILL_DEVICE);
    const done = jobs.reduce((n, j) => n + (afterKill.done.get(j.id)?.size ?? 0), 0);
    const planned = jobs.reduce((n, j) => n + requestsFor(j.valueIds, j.fromS, j.toS).length, 0);
    expect(done).toBe(ANSWERED_BEFORE_KILL);
    expect(planned).toBeGreaterThan(done);

    api.setMode("pass");
    const dataBefore = api.count({ mode: "pass", path: /^\/data\// });
    const second = start(args, env);
    expect(await second.wait(STEP_MS, "the same backfill again")).toMatchObject({ code: 0 });
    const fetched = api.count({ mode: "pass", path: /^\/data\// }) - dataBefore;
    expect(fetched).toBe(planned - done);
    note(
      `backfill: ${planned} chunks planned, ${done} done before SIGKILL, ${fetched} fetched by the rerun`,
    );

    // InfluxDB holds the simulator's data over every job's window (the first test's sync wrote
    // the same points over the last of those days)
    const expected = jobs.flatMap((j) =>
      expectedPoints(
        BACKFILL_DEVICE,
        j.resourceId,
        simulatorRecords(sim.fleet, BACKFILL_DEVICE, j.resourceId, j.fromS, j.toS),
      ),
    );
    const windowS = [Math.min(...jobs.map((j) => j.fromS)), Math.max(...jobs.map((j) => j.toS))];
    const stored = await rawPoints(
      db,
      `"device_id" = '${BACKFILL_DEVICE}' AND time >= ${windowS[0]}s AND time <= ${windowS[1]}s`,
    );
    expect(stored.length).toBe(expected.length);
    expect(sortPoints(stored)).toEqual(sortPoints(expected));
  });

  it("wrote only under /data, every file owned by 10001", () => {
    const diff = root.diff();
    note(`files written: ${diff.added.join(", ")}`);
    expect(diff.deleted).toEqual([]);
    expect(outsideData(diff)).toEqual([]);
    expect(diff.added).toEqual(expect.arrayContaining(["/data/state.db"]));
    const owners = root.run(["find", "/data", "!", "-user", "10001"], {}, "0");
    expect(owners).toMatchObject({ status: 0, stdout: "" });
  });
});

describe("the demo in the image (docker run --rm energy-etl demo)", () => {
  it("runs, writes under /data/demo and says so", async () => {
    const root = ImageRoot.open(IMAGE);
    try {
      const demo = startIn(root, ["demo"], { LOG_LEVEL: "warn" });
      const exit = await demo.wait(STEP_MS, "the demo");
      expect({ ...exit, stderr: exit.code === 0 ? "" : demo.stderr() }).toEqual({
        code: 0,
        signal: null,
        stderr: "",
      });
      expect(demo.stdout()).toContain("data      line-protocol file /data/demo/energy.lp");
      note(`demo, last lines:\n    ${demo.stdout().trim().split("\n").slice(-9).join("\n    ")}`);
      const diff = root.diff();
      expect(outsideData(diff)).toEqual([]);
      expect(diff.added).toEqual(
        expect.arrayContaining(["/data/demo/energy.lp", "/data/demo/state.db"]),
      );
    } finally {
      await killCliChildren();
      root.close();
    }
  });
});
