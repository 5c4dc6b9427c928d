import { join } from "node:path";
import { type OpenPipelineOptions, openPipeline } from "../../src/cli/open-pipeline.js";
import { loadConfig } from "../../src/config.js";
import type { ChunkOutcome, RunChunksOptions } from "../../src/pipeline/chunk-runner.js";
import type { ChunkTarget } from "../../src/pipeline/chunk-writer.js";
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import type { Chunk } from "../../src/pipeline/plan-chunks.js";
import { RunContext } from "../../src/pipeline/run-context.js";
import type { Simulator } from "../../src/simulator/server.js";
import type { StateStore } from "../../src/state/state-store.js";
import { captureLogger } from "./log-capture.js";
import { tempDir } from "./temp-dir.js";

/** Where a test pipeline writes. */
export interface InfluxTargetEnv {
  readonly url: string;
  readonly token: string;
  readonly org: string;
  readonly bucket: string;
}

/** A new SQLite state file path in a temp dir of its own (see {@link tempDir}: removed after the file). */
export function tempStateDb(): string {
  return join(tempDir("energy-etl-state-"), "state.db");
}

/** Environment for energy-etl pointing at a simulator, an InfluxDB database and a state file. */
export function pipelineEnv(
  sim: Simulator,
  influx: InfluxTargetEnv,
  stateDb: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    ENERGY_API_URL: sim.url,
    ENERGY_API_KEY: sim.apiKey,
    ENERGY_API_USER: "demo",
    ENERGY_API_PASSWORD: "demo-password",
    INFLUX_URL: influx.url,
    INFLUX_TOKEN: influx.token,
    INFLUX_ORG: influx.org,
    INFLUX_BUCKET: influx.bucket,
    STATE_DB: stateDb,
    API_RATE_LIMIT: "1000",
    API_CONCURRENCY: "4",
    API_RETRY_BASE_DELAY_MS: "10",
    API_RETRY_MAX_DELAY_MS: "50",
    LOG_LEVEL: "debug",
    ...extra,
  };
}

/**
 * A pipeline wired as the CLI wires it, with a test clock, and its state file (closed with the
 * pipeline); its log lines are kept. `file`: a config file under the environment (`sites` can
 * only be given there).
 */
export async function openTestPipeline(
  env: Record<string, string>,
  now: () => Date,
  options: Pick<OpenPipelineOptions, "timers" | "metrics"> = {},
  file?: string,
): Promise<{ pipeline: Pipeline; state: StateStore; logLines: string[] }> {
  const { logger, lines } = captureLogger("debug");
  const config = loadConfig(file === undefined ? { env } : { env, file });
  const { pipeline, state } = await openPipeline(config, logger, { now, ...options });
  return { pipeline, state, logLines: lines };
}

/**
 * A virtual clock for the rate gate and the client's retries: `sleep` advances it at once, so
 * pauses (429s, backoffs) take no real time and tests do not depend on the machine's speed.
 */
export class VirtualTimers {
  constructor(public nowMs = 0) {}
  readonly now = (): number => this.nowMs;
  readonly sleep = async (ms: number): Promise<void> => {
    this.nowMs += Math.max(0, ms);
  };
}

/** A recorded backfill run of a test pipeline, for calling runBackfillJob directly. */
export function testRun(pipeline: Pipeline): RunContext {
  const id = pipeline.store.runs.start("backfill", pipeline.now());
  return RunContext.create(id, "backfill", pipeline.logger);
}

/**
 * Runs `chunks` in the pipeline's chunk runner to the end: their outcomes. Its commit counts the
 * chunks committed: each stored chunk is committed once, before its outcome comes back.
 */
export async function runChunks(
  pipeline: Pipeline,
  run: RunContext,
  target: ChunkTarget,
  chunks: readonly Chunk[],
  options: Omit<RunChunksOptions, "commit"> = {},
): Promise<ChunkOutcome[]> {
  const committed = new Set<Chunk>();
  const commit = (chunk: Chunk) => {
    if (committed.has(chunk)) throw new Error(`chunk ${chunk.index} committed twice`);
    committed.add(chunk);
  };
  const outcomes: ChunkOutcome[] = [];
  for await (const outcome of pipeline.chunks.run(run, target, chunks, { ...options, commit })) {
    if ("result" in outcome && !committed.has(outcome.chunk)) {
      throw new Error(`chunk ${outcome.chunk.index} came back before it was committed`);
    }
    outcomes.push(outcome);
  }
  return outcomes;
}
