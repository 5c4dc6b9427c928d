import { formatQueryTime } from "../../src/api/time-format.js";
import type { Pipeline } from "../../src/pipeline/pipeline.js";
import { runSync } from "../../src/pipeline/sync.js";
import type { DataRecord } from "../../src/records/data-record.js";
import { META_VALUE_IDS } from "../../src/simulator/model/catalog.js";
import { COMMISSIONED_AT_S } from "../../src/simulator/model/fleet.js";
import { type DataFaultOptions, POISON_TEXT, type Simulator } from "../../src/simulator/server.js";
import {
  createHourShardDb,
  devicePoints,
  dropTestDb,
  findClock,
  firstColumn,
  hasPoisonTarget,
  logRecord,
  recordS,
  recordsByResource,
  rowKey,
  type TruthAnswer,
  truthAnswers,
  writeRawLines,
} from "../support/bad-data.js";
import { expectedPoints, type StoredPoint, sortPoints } from "../support/expected-points.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

const BASE_MS = Date.UTC(2026, 5, 15, 12);
const HOUR_S = 3600;
const HOUR_MS = HOUR_S * 1000;
const DAY_S = 86_400;
const SITE = "site A+1";
const HYBRID = "hybrid-site-01";
const DROPPED = "answer held more than was asked for: dropped";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function simulator(
  clock: ManualClock,
  resolutionS: number,
  dataFaults: DataFaultOptions = {},
): Promise<Simulator> {
  const sim = await startTestSimulator({ now: clock.now, resolutionS, dataFaults });
  cleanups.push(() => sim.close());
  return sim;
}

async function testDb(prefix: string, hourShards = false): Promise<TestInfluxDb> {
  const db = hourShards ? await createHourShardDb(prefix) : await createTestInfluxDb(prefix);
  cleanups.push(() => dropTestDb(db));
  return db;
}

async function pipelineFor(
  sim: Simulator,
  db: TestInfluxDb,
  clock: ManualClock,
  env: Record<string, string>,
): Promise<{ pipeline: Pipeline; logLines: string[] }> {
  const stateDb = tempStateDb();
  const opened = await openTestPipeline(pipelineEnv(sim, db, stateDb, env), () => {
    return new Date(clock.now());
  });
  cleanups.push(() => opened.pipeline.close());
  return opened;
}

/** The points the README promises for the answers' rows (one expectedPoints call per resource). */
function pointsOf(deviceId: string, answers: readonly TruthAnswer[]): StoredPoint[] {
  return [...recordsByResource(answers)].flatMap(([resourceId, records]) =>
    expectedPoints(deviceId, resourceId, records),
  );
}

/** Lines the pipeline writes for the answers: each answer is encoded on its own. */
const linesOf = (deviceId: string, answers: readonly TruthAnswer[]): number =>
  answers.reduce((n, a) => n + expectedPoints(deviceId, a.resourceId, a.records).length, 0);

const META = new Set(META_VALUE_IDS);

/** The member the simulator sends as 1e400 in a poisoned row: its first non-meta member with a value, else its first non-meta member. */
function poisonTarget(row: DataRecord): string | undefined {
  const members = Object.keys(row).filter((k) => k !== "timestamp" && !META.has(k));
  return members.find((k) => row[k] !== null) ?? members[0];
}

/** The answers with the poisoned member of the rows of one (timestamp, values_id) left out. */
const withoutPoison = (answers: readonly TruthAnswer[], key: string): TruthAnswer[] =>
  answers.map((a) => ({
    ...a,
    records: a.records.map((r) =>
      rowKey(r) === key
        ? (Object.fromEntries(
            Object.entries(r).filter(([k]) => k !== poisonTarget(r)),
          ) as DataRecord)
        : r,
    ),
  }));

/** The distinct rows the simulator sends poisoned in these answers. */
function poisonedRows(
  sim: Simulator,
  deviceId: string,
  answers: readonly TruthAnswer[],
): Map<string, DataRecord> {
  const rows = new Map<string, DataRecord>();
  for (const answer of answers) {
    for (const r of answer.records) {
      if (hasPoisonTarget(r) && sim.rowHasFault("poison", deviceId, r.timestamp, r.values_id)) {
        rows.set(rowKey(r), r);
      }
    }
  }
  return rows;
}

/** A row as the simulator sends it poisoned: its poison target as 1e400. */
function poisonedText(row: DataRecord): string {
  const target = poisonTarget(row);
  const parts = Object.entries(row).map(
    ([key, value]) =>
      `${JSON.stringify(key)}:${key === target ? POISON_TEXT : JSON.stringify(value ?? null)}`,
  );
  return `{${parts.join(",")}}`;
}

/** The (timestamp, values_id) of a dead-lettered row's payload. */
function rowOfPayload(payload: string): { timestamp: string; values_id?: DataRecord[string] } {
  const parsed = logRecord(payload);
  const { timestamp, values_id: valuesId } = parsed;
  if (typeof timestamp !== "string") throw new Error(`payload without timestamp: ${payload}`);
  const ok =
    valuesId === undefined ||
    valuesId === null ||
    typeof valuesId === "number" ||
    typeof valuesId === "string" ||
    typeof valuesId === "boolean";
  if (!ok) throw new Error(`payload with an odd values_id: ${payload}`);
  return valuesId === undefined ? { timestamp } : { timestamp, values_id: valuesId };
}

/** The log records of one run. */
const runLog = (lines: readonly string[], runId: number) =>
  lines.map(logRecord).filter((r) => r.run === runId);

describe("bad rows and refused lines become dead letters; the rest is written", () => {
  it("an answer with a poison row is written but for the bad member; the member is one dead letter; the cursor moves; the next sync is quiet", async () => {
    const clock = new ManualClock(BASE_MS);
    const sim = await simulator(clock, 60, { poisonRate: 0.01 });
    const LATER_S = 300;
    // a window of one hour whose rows (and the next sync's five minutes) hold exactly one
    // poisoned row, after the window's first second (so the lookback reads it again)
    const { nowMs, found } = findClock(BASE_MS, HOUR_MS, 500, (candidateMs) => {
      const toS = candidateMs / 1000;
      const fromS = toS - HOUR_S;
      const poisoned = poisonedRows(sim, SITE, truthAnswers(sim, SITE, fromS, toS + LATER_S));
      const [row] = poisoned.values();
      if (poisoned.size !== 1 || row === undefined) return undefined;
      const tS = recordS(row.timestamp);
      return tS > fromS && tS <= toS ? { fromS, toS, row } : undefined;
    });
    clock.nowMs = nowMs;
    const { fromS, toS, row } = found;
    const poisonKey = rowKey(row);
    const answers = truthAnswers(sim, SITE, fromS, toS);
    const carriers = answers.filter((a) =>
      a.records.some((r) => rowKey(r) === poisonKey && hasPoisonTarget(r)),
    );
    const good = withoutPoison(answers, poisonKey);

    const db = await testDb("poison");
    // the lookback on every sync, so that the next one reads the poisoned row again
    const { pipeline, logLines } = await pipelineFor(sim, db, clock, {
      SYNC_START: "PT1H",
      SYNC_LOOKBACK_EVERY: "PT0S",
    });
    const first = await runSync(pipeline, { deviceIds: [SITE] });

    expect(first.status).toBe("ok");
    // InfluxDB holds every good row, and every member of the poisoned one but the bad one
    expect(sortPoints(await devicePoints(db, SITE))).toEqual(sortPoints(pointsOf(SITE, good)));
    expect(first.points).toBe(linesOf(SITE, good));
    expect(linesOf(SITE, answers) - linesOf(SITE, good)).toBe(carriers.length);

    const letters = pipeline.store.deadLetters.list();
    expect(letters).toHaveLength(carriers.length);
    for (const letter of letters) {
      expect(letter).toMatchObject({
        kind: "member",
        deviceId: SITE,
        truncated: false,
        occurrences: 1,
        retries: 0,
      });
      expect(letter.payload).toContain(POISON_TEXT);
      expect(rowKey(rowOfPayload(letter.payload))).toBe(poisonKey);
    }
    // one per answer that carried the row, each its bad member with the row as that answer sent it
    const where = (resourceId: string, fromS: number, toS: number, values: readonly string[]) =>
      JSON.stringify([resourceId, fromS, toS, values]);
    const targets = carriers.map((a) => {
      const row = a.records.find((r) => rowKey(r) === poisonKey);
      return { a, target: row && poisonTarget(row) };
    });
    expect(
      letters.map((l) => where(l.resourceId, l.windowFromS, l.windowToS, l.valueIds)).sort(),
    ).toEqual(
      targets
        .map(({ a, target }) => where(a.resourceId, a.chunk.fromS, a.chunk.toS, [target ?? ""]))
        .sort(),
    );
    for (const letter of letters) {
      expect(letter.error).toContain(`with an invalid member (${letter.valueIds[0]}: `);
    }
    const sent = carriers.flatMap((a) =>
      a.records.filter((r) => rowKey(r) === poisonKey).map(poisonedText),
    );
    expect(letters.map((l) => l.payload).sort()).toEqual(sent.sort());

    expect(pipeline.store.cursors.get(SITE, "all_data")?.newestRecordS).toBe(toS);
    expect(first.deadLetters).toBe(letters.length);
    expect(first.counters).toMatchObject({
      deadLetters: letters.length,
      dataRequests: answers.length,
      chunkErrors: 0,
      droppedMembers: 0,
      droppedRows: 0,
      duplicateRows: 0,
    });
    expect(first.devices[0]?.deadLetters).toBe(letters.length);
    const firstWarnings = runLog(logLines, first.runId).filter((r) => r.level === "warn");
    expect(firstWarnings.map((r) => r.msg)).toEqual(
      carriers.map(() => "bad rows, members or lines kept as dead letters"),
    );

    // five minutes later: the lookback reads the poisoned row again; it is no news
    clock.advance(LATER_S * 1000);
    const second = await runSync(pipeline, { deviceIds: [SITE] });
    expect(second.status).toBe("ok");
    expect(second.deadLetters).toBe(0);
    expect(second.devices[0]?.deadLetters).toBe(carriers.length);
    const again = pipeline.store.deadLetters.list();
    expect(again.map((l) => l.id)).toEqual(letters.map((l) => l.id));
    expect(again.map((l) => l.occurrences)).toEqual(letters.map(() => 2));
    const secondLog = runLog(logLines, second.runId);
    expect(secondLog.length).toBeGreaterThan(0);
    expect(secondLog.filter((r) => r.level === "warn" || r.level === "error")).toEqual([]);
    expect(secondLog.filter((r) => r.msg === "known dead letters read again")).toHaveLength(
      carriers.length,
    );
    expect(pipeline.store.cursors.get(SITE, "all_data")?.newestRecordS).toBe(toS + LATER_S);
    const later = withoutPoison(truthAnswers(sim, SITE, fromS, toS + LATER_S), poisonKey);
    expect(sortPoints(await devicePoints(db, SITE))).toEqual(sortPoints(pointsOf(SITE, later)));
  });

  it("a line InfluxDB refuses is a dead letter; the good lines are stored once", async () => {
    const clock = new ManualClock(BASE_MS);
    const sim = await simulator(clock, 3600);
    const db = await testDb("refused", true);
    const toS = BASE_MS / 1000;
    const fromS = toS - 5 * HOUR_S;
    const conflictS = toS - 2 * HOUR_S;
    // the hour's shard learns `value` of total_solar_power as a string first
    await writeRawLines(db, [`total_solar_power,device_id=other value="x" ${conflictS}`]);

    const { pipeline } = await pipelineFor(sim, db, clock, { SYNC_START: "PT5H" });
    const result = await runSync(pipeline, { deviceIds: [SITE] });

    expect(result.status).toBe("ok");
    const letters = pipeline.store.deadLetters.list();
    expect(letters).toHaveLength(1);
    const [letter] = letters;
    expect(letter).toMatchObject({ kind: "line", deviceId: SITE, resourceId: "all_data" });
    expect(letter?.payload.startsWith("total_solar_power,")).toBe(true);
    expect(letter?.payload.endsWith(` ${conflictS}`)).toBe(true);
    expect(letter?.error).toMatch(/^HTTP 400: .*field type conflict/);
    expect(result.deadLetters).toBe(1);

    const all = pointsOf(SITE, truthAnswers(sim, SITE, fromS, toS));
    const refused = (p: StoredPoint) =>
      p.measurement === "total_solar_power" && p.time === conflictS;
    expect(all.filter(refused)).toHaveLength(1);
    const stored = await devicePoints(db, SITE);
    expect(sortPoints(stored)).toEqual(sortPoints(all.filter((p) => !refused(p))));
    expect(pipeline.store.cursors.get(SITE, "all_data")?.newestRecordS).toBe(toS);
    expect(pipeline.store.runs.last("sync")).toMatchObject({ status: "ok", errors: 0 });
  });

  it("a record with 10,000 unrequested members: no new measurement, one warning", async () => {
    const clock = new ManualClock(BASE_MS);
    const sim = await simulator(clock, 3600, { extraMemberRate: 0.01, extraMembers: 10_000 });
    // a day in which exactly one row of one answer carries the extra members
    const { nowMs, found } = findClock(BASE_MS, HOUR_MS, 1000, (candidateMs) => {
      const toS = candidateMs / 1000;
      const fromS = toS - DAY_S;
      const answers = truthAnswers(sim, HYBRID, fromS, toS);
      const carriers = answers.filter((a) =>
        a.records.some((r) => sim.rowHasFault("extra-members", HYBRID, r.timestamp, r.values_id)),
      );
      const [carrier] = carriers;
      const rows = answers.reduce(
        (n, a) =>
          n +
          a.records.filter((r) =>
            sim.rowHasFault("extra-members", HYBRID, r.timestamp, r.values_id),
          ).length,
        0,
      );
      return rows === 1 && carrier ? { answers, carrier } : undefined;
    });
    clock.nowMs = nowMs;
    const { answers, carrier } = found;

    const db = await testDb("extras");
    const { pipeline, logLines } = await pipelineFor(sim, db, clock, { SYNC_START: "P1D" });
    const result = await runSync(pipeline, { deviceIds: [HYBRID] });

    expect(result.status).toBe("ok");
    const truth = pointsOf(HYBRID, answers);
    const measurements = firstColumn(await db.series("SHOW MEASUREMENTS"));
    expect(measurements.sort()).toEqual(
      [
        ...new Set([
          ...truth.map((p) => p.measurement),
          "etl_lag",
          "etl_run",
          "rollup_day",
          "rollup_hour",
        ]),
      ].sort(),
    );
    expect(measurements).not.toContain("spoofed_power");
    expect(measurements.some((m) => m.startsWith("extra_"))).toBe(false);
    expect(firstColumn(await db.series("SHOW TAG KEYS FROM etl_run")).sort()).toEqual([
      "kind",
      "status",
    ]);
    expect(sortPoints(await devicePoints(db, HYBRID))).toEqual(sortPoints(truth));

    const warnings = logLines.map(logRecord).filter((r) => r.msg === DROPPED);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      level: "warn",
      run: result.runId,
      device: HYBRID,
      resource: carrier.resourceId,
      chunk: carrier.chunk.index,
      extraMembers: 10_000,
      outOfWindow: 0,
      duplicates: 0,
      extraMemberNames: [
        "etl_run",
        "e_03_01_00_000_spoofed_power",
        "extra_1",
        "extra_2",
        "extra_3",
      ],
    });
    expect(result.counters.droppedMembers).toBe(10_000);
    expect(result.deadLetters).toBe(0);
  });

  it("rows outside the window and duplicate rows are dropped and counted", async () => {
    const clock = new ManualClock(BASE_MS);
    const sim = await simulator(clock, 3600, { outOfWindowRate: 1, duplicateRate: 0.2 });
    const toS = BASE_MS / 1000;
    const fromS = toS - 2 * DAY_S;
    const answers = truthAnswers(sim, SITE, fromS, toS);
    // the truth: two far rows per answer that has them, one copy per duplicated row
    const outOfWindow = answers.reduce((n, a) => {
      const query = {
        values: a.chunk.values.join(","),
        from: formatQueryTime(new Date(a.chunk.fromS * 1000)),
        to: formatQueryTime(new Date(a.chunk.toS * 1000)),
      };
      const has = sim.hasOutOfWindowRows(SITE, a.resourceId, query);
      const source = sim.fleet.records(
        SITE,
        a.resourceId,
        a.chunk.values,
        COMMISSIONED_AT_S,
        COMMISSIONED_AT_S + sim.fleet.resolutionS,
      );
      return n + (has && source.length > 0 ? 2 : 0);
    }, 0);
    const duplicates = answers.reduce(
      (n, a) =>
        n +
        a.records.filter((r) => sim.rowHasFault("duplicate", SITE, r.timestamp, r.values_id))
          .length,
      0,
    );
    expect(outOfWindow).toBe(2 * answers.length);
    expect(duplicates).toBeGreaterThan(0);

    const db = await testDb("window");
    const { pipeline, logLines } = await pipelineFor(sim, db, clock, { SYNC_START: "P2D" });
    const result = await runSync(pipeline, { deviceIds: [SITE] });

    expect(result.status).toBe("ok");
    expect(result.counters.droppedRows).toBe(outOfWindow);
    expect(result.counters.duplicateRows).toBe(duplicates);
    expect(result.counters.droppedMembers).toBe(0);
    // the first of each duplicated row is the truth (the copy has every number + 1)
    expect(sortPoints(await devicePoints(db, SITE))).toEqual(sortPoints(pointsOf(SITE, answers)));
    // nothing outside the window; the rollups are stamped with their bucket's start: a day's at
    // the UTC midnight before it, an hour's up to the hour after its last reading
    const data = async (where: string) =>
      (await db.series(`SELECT count(*) FROM /.*/ WHERE ${where}`)).filter(
        (s) => !s.name.startsWith("rollup_"),
      );
    expect(await data(`time < ${fromS}s`)).toEqual([]);
    expect(await data(`time > ${toS}s`)).toEqual([]);
    const rollups = (where: string) => db.series(`SELECT count(*) FROM /^rollup_/ WHERE ${where}`);
    const firstDayS = Math.floor(fromS / DAY_S) * DAY_S;
    expect(await rollups(`time < ${firstDayS}s`)).toEqual([]);
    expect(await rollups(`time > ${(Math.floor(toS / 3600) + 1) * 3600}s`)).toEqual([]);
    expect((await rollups(`time >= ${firstDayS}s`)).length).toBe(2);
    expect(pipeline.store.deadLetters.list()).toEqual([]);
    const warnings = logLines.map(logRecord).filter((r) => r.msg === DROPPED);
    expect(warnings).toHaveLength(answers.length);
    expect(warnings.reduce((n, r) => n + Number(r.outOfWindow), 0)).toBe(outOfWindow);
    expect(warnings.reduce((n, r) => n + Number(r.duplicates), 0)).toBe(duplicates);
  });
});
