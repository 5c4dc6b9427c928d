/**
 * A backfill whose chunks wait for API_ANSWER_BUDGET_MB: every chunk waits before its request, all
 * on the pipeline's one stop signal. Node warns of a listener leak past 10 listeners on a signal;
 * many waiters are what the budget is for, so a run says nothing of it. The built CLI as a child
 * process against the simulator over loopback, writing line protocol to a file.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Simulator } from "../../src/simulator/server.js";
import { killCliChildren, spawnCli } from "../support/cli-child.js";
import { startTestSimulator } from "../support/simulator.js";

describe("a backfill with many chunks waiting for the answer budget", () => {
  let sim: Simulator;
  let dir: string;

  beforeAll(async () => {
    sim = await startTestSimulator({ resolutionS: 900 });
  });
  afterAll(() => sim.close());
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "energy-etl-waiters-"));
  });
  afterEach(async () => {
    await killCliChildren();
    rmSync(dir, { recursive: true, force: true });
  });

  it("writes every chunk and warns of no listener leak", async () => {
    const out = join(dir, "points.lp");
    const child = spawnCli(["backfill", "--all", "--from", "-70d", "--output", out], {
      ENERGY_API_URL: sim.url,
      ENERGY_API_KEY: sim.apiKey,
      ENERGY_API_USER: "demo",
      ENERGY_API_PASSWORD: "demo-password",
      INFLUX_URL: "",
      STATE_DB: join(dir, "state.db"),
      API_RATE_LIMIT: "1000",
      API_CONCURRENCY: "16",
      // a week of 20 values is estimated at 7.9 MB: each chunk runs alone, the others wait
      API_ANSWER_BUDGET_MB: "1",
      LOG_LEVEL: "info",
    });
    const exit = await child.wait(120_000, "the backfill");
    expect({ code: exit.code, stderr: child.stderr() }).toEqual({
      code: 0,
      stderr: expect.not.stringMatching(/MaxListenersExceededWarning|memory leak/),
    });
    // the premise: more than 10 chunks (10 weeks of every device's value groups) waited at once
    const data = sim.count("data");
    expect(data).toBeGreaterThan(11);
    expect(readFileSync(out, "utf8").split("\n").filter(Boolean).length).toBeGreaterThan(data);
  });
});
