import { runCli } from "../../src/cli.js";
import { runSync } from "../../src/pipeline/sync.js";
import { POISON_TEXT, type Simulator } from "../../src/simulator/server.js";
import { StateStore } from "../../src/state/state-store.js";
import type { DeadLetter } from "../../src/state/types.js";
import {
  createHourShardDb,
  dropShardAt,
  dropTestDb,
  findClock,
  hasPoisonTarget,
  recordsByResource,
  removeStateDir,
  rowKey,
  truthAnswers,
  writeRawLines,
} from "../support/bad-data.js";
import { bufferIo } from "../support/cli-io.js";
import { expectedPoints } from "../support/expected-points.js";
import type { TestInfluxDb } from "../support/influx-db.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

const BASE_MS = Date.UTC(2026, 5, 15, 12);
const HOUR_S = 3600;
const SITE = "site A+1";
const HYBRID = "hybrid-site-01";

describe("energy-etl dead-letters", () => {
  const clock = new ManualClock(BASE_MS);
  let sim: Simulator;
  let db: TestInfluxDb;
  let stateDb: string;
  let env: Record<string, string>;
  /** Rows of SITE dead-lettered (one per answer that carried the poisoned row). */
  let rowLetters = 0;
  /** The hour whose shard refused HYBRID's total_solar_power line. */
  let conflictS = 0;

  async function cli(...argv: string[]) {
    const io = bufferIo(env);
    const code = await runCli(argv, io);
    return { code, out: io.out(), err: io.err() };
  }

  /** The dead letters as the state database holds them now. */
  function stored(): DeadLetter[] {
    const store = StateStore.open(stateDb);
    try {
      return store.deadLetters.list();
    } finally {
      store.close();
    }
  }

  beforeAll(async () => {
    sim = await startTestSimulator({
      now: clock.now,
      resolutionS: 3600,
      dataFaults: { poisonRate: 0.07 },
    });
    // six hours of SITE with exactly one poisoned row
    const { nowMs, found } = findClock(BASE_MS, HOUR_S * 1000, 500, (candidateMs) => {
      const toS = candidateMs / 1000;
      const answers = truthAnswers(sim, SITE, toS - 6 * HOUR_S, toS);
      const keys = new Set(
        answers.flatMap((a) =>
          a.records
            .filter((r) => hasPoisonTarget(r) && sim.isPoisoned(SITE, r.timestamp, r.values_id))
            .map(rowKey),
        ),
      );
      const [key] = keys;
      if (keys.size !== 1 || key === undefined) return undefined;
      return answers.filter((a) => a.records.some((r) => rowKey(r) === key)).length;
    });
    clock.nowMs = nowMs;
    rowLetters = found;
    db = await createHourShardDb("cli_dead_letters");
    stateDb = tempStateDb();
    env = pipelineEnv(sim, db, stateDb, { SYNC_START: "PT6H", LOG_LEVEL: "warn" });

    const { pipeline } = await openTestPipeline(env, () => new Date(clock.now()));
    try {
      // row dead letters: SITE against the poisoned API
      expect((await runSync(pipeline, { deviceIds: [SITE] })).deadLetters).toBe(rowLetters);
      // a line dead letter: HYBRID's total_solar_power in an hour whose shard has it as a string
      sim.dataFaults = {};
      clock.advance(3 * HOUR_S * 1000);
      conflictS = clock.now() / 1000 - HOUR_S;
      await writeRawLines(db, [`total_solar_power,device_id=other value="x" ${conflictS}`]);
      expect((await runSync(pipeline, { deviceIds: [HYBRID] })).deadLetters).toBe(1);
    } finally {
      await pipeline.close();
    }
  });

  afterAll(async () => {
    await sim.close();
    await dropTestDb(db);
    removeStateDir(stateDb);
  });

  it("lists them as tab-separated rows when piped: one row per dead letter and the summary line", async () => {
    const letters = stored();
    expect(letters).toHaveLength(rowLetters + 1);
    const { code, out } = await cli("dead-letters");
    expect(code).toBe(0);
    const rows = out.split("\n").filter((l) => /^\d+\t(row|line)\t/.test(l));
    expect(rows).toHaveLength(letters.length);
    letters.forEach((letter, i) => {
      const cells = rows[i]?.split("\t");
      expect(cells?.slice(0, 4)).toEqual([
        String(letter.id),
        letter.kind,
        letter.deviceId,
        letter.resourceId,
      ]);
      expect(cells?.[5]).toBe(String(letter.occurrences));
    });
    expect(out).toContain(
      `${letters.length} of ${letters.length} dead letters (--json for whole payloads, --retry to write them again)`,
    );
  });

  it("--json prints them whole", async () => {
    const { code, out } = await cli("dead-letters", "--json");
    expect(code).toBe(0);
    const letters = stored();
    expect(JSON.parse(out)).toEqual(JSON.parse(JSON.stringify(letters)));
    const rows = letters.filter((l) => l.kind === "row");
    expect(rows).toHaveLength(rowLetters);
    for (const letter of rows) {
      expect(letter.payload).toContain(POISON_TEXT);
      expect(letter.payload.length).toBeGreaterThan(60);
      expect(out).toContain(JSON.stringify(letter.payload));
    }
  });

  it("--device shows that device's only", async () => {
    const { code, out } = await cli("dead-letters", "--device", HYBRID);
    expect(code).toBe(0);
    const rows = out.split("\n").filter((l) => /^\d+\t(row|line)\t/.test(l));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatch(/^\d+\tline\thybrid-site-01\tall_data\t/);
    expect(out).toContain(`1 of ${rowLetters + 1} dead letters`);
    const json = await cli("dead-letters", "--device", SITE, "--json");
    expect(json.code).toBe(0);
    expect(JSON.parse(json.out)).toEqual(
      JSON.parse(JSON.stringify(stored().filter((l) => l.deviceId === SITE))),
    );
  });

  it("--retry of a row dead letter: the kept payload is still poison, so it stays (one more retry)", async () => {
    // the API healed, but a row dead letter is its payload as received
    sim.dataFaults = {};
    const [first, ...others] = stored().filter((l) => l.deviceId === SITE);
    const { code, out } = await cli("dead-letters", "--retry", "--device", SITE, "--limit", "1");
    expect(code).toBe(0);
    expect(out).toMatch(
      /^retried 1 dead letters: 0 written, 1 still refused, 0 cut when kept \(not retried\) -> InfluxDB /,
    );
    const after = stored().filter((l) => l.deviceId === SITE);
    expect(after.map((l) => l.id)).toEqual([first?.id, ...others.map((l) => l.id)]);
    expect(after[0]).toMatchObject({ retries: 1, payload: first?.payload });
    expect(after[0]?.error).toMatch(/still not a valid record/);
    expect(after.slice(1).map((l) => l.retries)).toEqual(others.map(() => 0));
  });

  it("--clear --device forgets that device's only", async () => {
    const { code, out } = await cli("dead-letters", "--clear", "--device", SITE);
    expect(code).toBe(0);
    expect(out).toContain(`forgot ${rowLetters} dead letters`);
    const left = stored();
    expect(left.map((l) => [l.deviceId, l.kind])).toEqual([[HYBRID, "line"]]);
  });

  it("--retry of a line dead letter once InfluxDB takes it: written, forgotten, stored", async () => {
    // InfluxDB 1.6 keeps a field's type per shard: DROP SERIES of the string point leaves the
    // conflict, dropping the hour's shard (or the whole measurement) clears it
    await dropShardAt(db, conflictS);
    const { code, out } = await cli("dead-letters", "--retry");
    expect(code).toBe(0);
    expect(out).toMatch(/^retried 1 dead letters: 1 written, 0 still refused, 0 cut when kept/);
    expect(stored()).toEqual([]);
    const truth = [
      ...recordsByResource(truthAnswers(sim, HYBRID, conflictS, conflictS)).entries(),
    ].flatMap(([resourceId, records]) => expectedPoints(HYBRID, resourceId, records));
    const solar = truth.find((p) => p.measurement === "total_solar_power");
    const [series] = await db.series(
      `SELECT "value" FROM "total_solar_power" WHERE "device_id" = '${HYBRID}' AND time = ${conflictS}s`,
    );
    expect(series?.values).toEqual([[conflictS, solar?.fields.value]]);
    const listed = await cli("dead-letters");
    expect(listed).toMatchObject({ code: 0, out: "no dead letters\n" });
  });

  it("--retry --clear is a usage error", async () => {
    const { code, err } = await cli("dead-letters", "--retry", "--clear");
    expect(code).toBe(2);
    expect(err).toContain("--retry and --clear exclude each other");
  });
});
