/**
 * The state file deleted or replaced under a command other than `run` (issue 40, item 4): the
 * built CLI as a child process on a real SQLite file, the simulator and the test InfluxDB behind
 * hang proxies that hold the command mid-work while the file goes. Each command then fails (exit
 * 1) with the message `run` gives, instead of finishing "ok" into a file nobody will ever read.
 * No timing: the deletion happens while a request is held, whatever the command does after it.
 */
import { copyFileSync, renameSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import type { Simulator } from "../../src/simulator/server.js";
import { StateStore } from "../../src/state/state-store.js";
import { type CliChild, killCliChildren, spawnCli } from "../support/cli-child.js";
import { type HangProxy, startHangProxy } from "../support/hang-proxy.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";
import { waitUntil } from "../support/wait.js";

const SIM_NOW_MS = Date.UTC(2026, 5, 15, 12);
const DEVICE = "site A+1";
const STEP_MS = 30_000;
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

describe("STATE_DB deleted or replaced under a command", () => {
  let sim: Simulator;
  let db: TestInfluxDb;
  const proxies: HangProxy[] = [];
  const dirs: string[] = [];

  beforeAll(async () => {
    sim = await startTestSimulator({ now: () => SIM_NOW_MS, resolutionS: 3600 });
    db = await createTestInfluxDb("state_file_gone");
  });
  afterEach(async () => {
    await killCliChildren();
    await Promise.all(proxies.splice(0).map((p) => p.close()));
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  afterAll(async () => {
    await sim.close();
  });

  function newState(): string {
    const state = tempStateDb();
    dirs.push(dirname(state));
    return state;
  }

  /** A proxy in front of `target` that holds the requests `only` matches. */
  async function holding(target: string, only: RegExp): Promise<HangProxy> {
    const proxy = await startHangProxy(target, "hang", { only });
    proxies.push(proxy);
    return proxy;
  }

  /** Once `cli` holds a request at `proxy`: `change` the state file, let requests pass, await the exit. */
  async function changeWhileHeld(
    cli: CliChild,
    proxy: HangProxy,
    change: () => void,
  ): Promise<number | null> {
    await waitUntil(() => proxy.hanging() > 0, "a held request", {
      timeoutMs: STEP_MS,
      stopIf: cli.exited,
    });
    expect(cli.exited()).toBe(false);
    change();
    proxy.setMode("pass");
    proxy.release();
    return (await cli.wait(STEP_MS, "the command after its state file went")).code;
  }

  const deleted = (state: string) => () => {
    for (const file of [state, `${state}-wal`, `${state}-shm`]) rmSync(file, { force: true });
  };
  const deletedMessage = (state: string) =>
    new RegExp(`state database ${escapeRegExp(state)} \\(STATE_DB\\) was deleted while in use`);

  it.each([
    ["backfill", ["backfill", "--device", DEVICE, "--from", "2026-06-01", "--to", "2026-06-10"]],
    ["sync", ["sync", "--device", DEVICE]],
  ])(
    "%s: the state file deleted mid-work is exit 1 with run's message",
    async (_name, argv) => {
      const state = newState();
      const api = await holding(sim.url, /^\/data\//);
      const env = {
        ...pipelineEnv(sim, db, state, { SYNC_START: "PT6H", LOG_LEVEL: "info" }),
        ENERGY_API_URL: api.url,
      };
      const cli = spawnCli(argv, env);
      const code = await changeWhileHeld(cli, api, deleted(state));
      expect(cli.stderr()).toMatch(deletedMessage(state));
      expect(code).toBe(1);
    },
    60_000,
  );

  it("sync: the state file replaced by another mid-work is exit 1, naming the replacement", async () => {
    const state = newState();
    const api = await holding(sim.url, /^\/data\//);
    const env = { ...pipelineEnv(sim, db, state), ENERGY_API_URL: api.url };
    const cli = spawnCli(["sync", "--device", DEVICE], env);
    const code = await changeWhileHeld(cli, api, () => {
      copyFileSync(state, `${state}.copy`);
      renameSync(`${state}.copy`, state);
    });
    expect(cli.stderr()).toMatch(
      new RegExp(
        `state database ${escapeRegExp(state)} \\(STATE_DB\\) was replaced by another file`,
      ),
    );
    expect(code).toBe(1);
  }, 60_000);

  it("dead-letters --retry: the state file deleted mid-retry is exit 1 with run's message", async () => {
    const state = newState();
    const store = StateStore.open(state);
    store.deadLetters.add(
      {
        kind: "line",
        deviceId: DEVICE,
        resourceId: "all_data",
        windowFromS: 1_780_000_000,
        windowToS: 1_780_003_600,
        valueIds: [],
        payload: "state_file_gone,device=x value=1 1780000000",
        error: "HTTP 400: test",
      },
      new Date(SIM_NOW_MS),
    );
    store.close();
    const influx = await holding(db.url, /^\/api\/v2\/write/);
    const env = { ...pipelineEnv(sim, db, state), INFLUX_URL: influx.url };
    const cli = spawnCli(["dead-letters", "--retry"], env);
    const code = await changeWhileHeld(cli, influx, deleted(state));
    expect(cli.stderr()).toMatch(deletedMessage(state));
    expect(code).toBe(1);
  }, 60_000);
});
