/**
 * CONFIG_FILE (#42): the environment or the env file names the JSON config file, so every command
 * (and the service) reads `sites` without `--config`; `--config` wins over it, the environment over
 * the env file. In-process CLI in a temp working directory; a sync into the run's influxd shows
 * that the sites reach the points.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { runCli } from "../../src/cli.js";
import type { Simulator } from "../../src/simulator/server.js";
import { dropTestDb } from "../support/bad-data.js";
import { bufferIo } from "../support/cli-io.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";
import { tempDir } from "../support/temp-dir.js";

const SITE = "hybrid-site-01";

/** A working directory holding `files` (name -> text). */
function folder(files: Record<string, string>): string {
  const dir = tempDir("energy-etl-config-file-");
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const sitesJson = (kwp: number) => JSON.stringify({ sites: { [SITE]: { kwp } } });

async function run(argv: string[], cwd: string, env: Record<string, string> = {}) {
  const io = bufferIo(env, cwd);
  const code = await runCli(argv, io);
  return { code, out: io.out(), err: io.err() };
}

const shownSchema = z.object({ sites: z.record(z.string(), z.object({ kwp: z.number() })) });
const sourcesSchema = z.array(
  z.object({ setting: z.string(), value: z.string(), from: z.string() }),
);

/** The kWp `config` shows for SITE, or undefined when no site is configured. */
async function shownKwp(cwd: string, env: Record<string, string> = {}, argv: string[] = []) {
  const { code, out, err } = await run([...argv, "config"], cwd, env);
  expect({ code, err }).toEqual({ code: 0, err: "" });
  return shownSchema.parse(JSON.parse(out)).sites[SITE]?.kwp;
}

describe("CONFIG_FILE names the config file", () => {
  it("in ./.env: every command reads its sites (a relative name is under the working directory)", async () => {
    const dir = folder({ ".env": "CONFIG_FILE=sites.json\n", "sites.json": sitesJson(9.8) });
    expect(await shownKwp(dir)).toBe(9.8);
  });

  it("--config wins over CONFIG_FILE, the environment's CONFIG_FILE over the env file's", async () => {
    const dir = folder({
      ".env": "CONFIG_FILE=from-env-file.json\n",
      "from-env-file.json": sitesJson(1),
      "from-env.json": sitesJson(2),
      "from-flag.json": sitesJson(3),
    });
    expect(await shownKwp(dir)).toBe(1);
    expect(await shownKwp(dir, { CONFIG_FILE: "from-env.json" })).toBe(2);
    // an empty variable is unset, as for every setting (compose passes every one)
    expect(await shownKwp(dir, { CONFIG_FILE: "" })).toBe(1);
    const flag = ["--config", join(dir, "from-flag.json")];
    expect(await shownKwp(dir, { CONFIG_FILE: "from-env.json" }, flag)).toBe(3);
  });

  it("config --sources says which variable named the file", async () => {
    const dir = folder({
      ".env": "CONFIG_FILE=c.json\n",
      "c.json": JSON.stringify({ api: { retries: 5 } }),
    });
    const { code, out } = await run(["config", "--sources", "--json"], dir);
    expect(code).toBe(0);
    const row = sourcesSchema.parse(JSON.parse(out)).find((r) => r.setting === "API_RETRIES");
    expect(row).toEqual({
      setting: "API_RETRIES",
      value: "5",
      from: `config file ${join(dir, "c.json")} (named by CONFIG_FILE of .env file ./.env)`,
    });
  });

  it("a file it names that does not exist stops the command, naming the variable", async () => {
    const dir = folder({});
    const { code, out, err } = await run(["config"], dir, { CONFIG_FILE: "nope.json" });
    expect({ code, out }).toEqual({ code: 2, out: "" });
    expect(err).toContain(
      `config file ${join(dir, "nope.json")} (named by environment CONFIG_FILE)`,
    );
  });
});

describe("a sync with CONFIG_FILE in ./.env and no --config", () => {
  let sim: Simulator;
  let db: TestInfluxDb;
  beforeAll(async () => {
    sim = await startTestSimulator({ resolutionS: 900 });
    db = await createTestInfluxDb("config_file_variable");
  });
  afterAll(async () => {
    await sim.close();
    await dropTestDb(db);
  });

  it("writes the site's kWp, not 0", async () => {
    const dir = folder({ ".env": "CONFIG_FILE=./sites.json\n", "sites.json": sitesJson(9.8) });
    const env = pipelineEnv(sim, db, tempStateDb(), { LOG_LEVEL: "warn", SYNC_START: "PT2H" });
    const { code, err } = await run(["sync", "--device", SITE], dir, env);
    expect({ code, err }).toEqual({ code: 0, err: "" });
    const series = await db.series(`SELECT last("kwp") FROM "site" WHERE "device_id" = '${SITE}'`);
    expect(series.map((s) => s.values.map((row) => row[1]))).toEqual([[9.8]]);
  });
});
