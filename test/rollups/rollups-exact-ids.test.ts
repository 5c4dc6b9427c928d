/**
 * Rollups exact on every counter (see falling-source.ts) for devices whose ids InfluxDB must
 * escape or InfluxQL must quote: a backslash, a tab, a quote, a line break, a slash, regex
 * characters and unicode.
 */
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import type { Simulator } from "../../src/simulator/server.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { safeName } from "../support/schema-oracle.js";
import { ManualClock } from "../support/simulator.js";
import {
  expectExact,
  fallingSource,
  HOSTILE,
  ingest,
  SYNCED_FROM_S,
  ZONES,
} from "./falling-source.js";

describe("rollups exact on every counter, device ids InfluxDB must escape", () => {
  const clock = new ManualClock(SYNCED_FROM_S * 1000);
  let sim: Simulator;
  let db: TestInfluxDb;
  let pipeline: Pipeline;

  beforeAll(async () => {
    sim = await fallingSource(clock, true);
    db = await createTestInfluxDb("rollups_ids");
    ({ pipeline } = await openTestPipeline(
      pipelineEnv(sim, db, tempStateDb(), {
        ROLLUP_TIME_ZONES: ZONES.join(","),
        SYNC_START: new Date(SYNCED_FROM_S * 1000).toISOString(),
        LOG_LEVEL: "warn",
      }),
      () => new Date(clock.now()),
    ));
  });
  afterAll(async () => {
    await pipeline?.close();
    await sim?.close();
  });

  it("a backslash, a tab, a quote, a line break, a slash, regex characters and unicode: every device gets its rollups", async () => {
    await ingest(sim, pipeline, clock);
    await expectExact(sim, db);
    const devices = new Set(
      (await db.series(`SHOW TAG VALUES FROM "rollup_day" WITH KEY = "device_id"`)).flatMap((s) =>
        s.values.map((row) => String(row[1])),
      ),
    );
    for (const { id } of HOSTILE) expect(devices).toContain(safeName(id));
  }, 300_000);
});
