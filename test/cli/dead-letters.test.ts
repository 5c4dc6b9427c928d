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
import { asTerminal } from "../support/fake-tty.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

const BASE_MS = Date.UTC(2026, 5, 15, 12);
const HOUR_S = 3600;
const SITE = "site A+1";
const HYBRID = "hybrid-site-01";

/**
 * The error column of a terminal table, per id: the last cell of each row, its wrapped lines
 * joined with a space (a new row starts where the id cell is not empty).
 */
function errorCells(table: string): Map<string, string> {
  const lines = table.split("\n");
  const body = lines.slice(lines.findIndex((l) => l.startsWith("├")) + 1);
  const errors = new Map<string, string[]>();
  let id = "";
  for (const line of body) {
    if (!line.startsWith("│")) break;
    const cells = line
      .split("│")
      .slice(1, -1)
      .map((c) => c.trim());
    if (cells[0]) id = cells[0];
    errors.set(id, [...(errors.get(id) ?? []), cells.at(-1) ?? ""]);
  }
  return new Map([...errors].map(([key, parts]) => [key, parts.filter(Boolean).join(" ")]));
}

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
      // piped, nothing is cut: the error and the payload whole
      expect(cells?.slice(6)).toEqual([letter.error, letter.payload]);
    });
    expect(out).toContain(
      `${letters.length} of ${letters.length} dead letters (--json for whole payloads, --retry to write them again)`,
    );
  });

  it.each([140, 80])(
    "on a terminal %i columns wide: no line longer, and each error's useful part (the member, the conflict) whole",
    async (columns) => {
      const letters = stored();
      const io = bufferIo(env);
      asTerminal(io.stdout, columns);
      expect(await runCli(["dead-letters"], io)).toBe(0);
      const out = io.out();
      const tooLong = out.split("\n").filter((line) => [...line].length > columns);
      expect(tooLong).toEqual([]);
      const shown = errorCells(out);
      expect([...shown.keys()]).toEqual(letters.map((l) => String(l.id)));
      for (const letter of letters) {
        const error = shown.get(String(letter.id)) ?? "";
        // not the request the device and resource columns already name
        expect(error).not.toMatch(/^GET /);
        if (letter.kind === "row") {
          const member = new RegExp(`"([^"]+)":${POISON_TEXT}\\b`).exec(letter.payload)?.[1];
          expect(member).toBeDefined();
          expect(error).toContain(`${member}:`);
        } else {
          expect(error).toContain('field type conflict: input field "value" on measurement');
        }
      }
      expect(out).toContain("one whole: energy-etl dead-letters show ID");
    },
  );

  it("show ID prints one whole: its error and its payload, uncut; an unknown id is a usage error", async () => {
    for (const letter of stored()) {
      const io = bufferIo(env);
      asTerminal(io.stdout, 80);
      expect(await runCli(["dead-letters", "show", String(letter.id)], io)).toBe(0);
      expect(io.out()).toContain(`error:    ${letter.error}\n`);
      expect(io.out()).toContain(`payload:  ${letter.payload}\n`);
      const json = await cli("dead-letters", "show", String(letter.id), "--json");
      expect(JSON.parse(json.out)).toEqual(JSON.parse(JSON.stringify(letter)));
    }
    const unknown = await cli("dead-letters", "show", "999999");
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain("no dead letter 999999");
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

describe("energy-etl sync's summary", () => {
  const clock = new ManualClock(BASE_MS);
  let sim: Simulator;
  let db: TestInfluxDb;
  let stateDb: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    sim = await startTestSimulator({
      now: clock.now,
      resolutionS: 3600,
      dataFaults: { poisonRate: 0.2 },
    });
    db = await createTestInfluxDb("cli_sync_dead_letters");
    stateDb = tempStateDb();
    env = pipelineEnv(sim, db, stateDb, { SYNC_START: "PT6H", LOG_LEVEL: "error" });
  });

  afterAll(async () => {
    await sim.close();
    await dropTestDb(db);
    removeStateDir(stateDb);
  });

  const deadLetters = () => {
    const store = StateStore.open(stateDb);
    try {
      return store.deadLetters.count();
    } finally {
      store.close();
    }
  };

  it("names the dead letters the run made and where to read them; a run that made none says nothing of them", async () => {
    const first = bufferIo(env);
    expect(await runCli(["sync", "--device", SITE], first)).toBe(0);
    const made = deadLetters();
    expect(made).toBeGreaterThan(0);
    expect(first.out()).toMatch(
      new RegExp(
        `^sync ok: 1 devices, .*; ${made} new dead letters? \\(see energy-etl dead-letters\\)$`,
        "m",
      ),
    );
    // the lookback reads the same poisoned rows again: known ones, no new dead letter
    const again = bufferIo(env);
    expect(await runCli(["sync", "--device", SITE], again)).toBe(0);
    expect(deadLetters()).toBe(made);
    expect(again.out()).toMatch(/^sync ok: 1 devices, /m);
    expect(again.out()).not.toContain("dead letter");
  });
});
