import { z } from "zod";
import { runCli } from "../../src/cli.js";
import { runSync } from "../../src/pipeline/sync.js";
import type { DataRecord } from "../../src/records/data-record.js";
import { POISON_TEXT, type Simulator } from "../../src/simulator/server.js";
import { StateStore } from "../../src/state/state-store.js";
import type { DeadLetter, NewDeadLetter } from "../../src/state/types.js";
import {
  createHourShardDb,
  dropShardAt,
  dropTestDb,
  findClock,
  hasPoisonTarget,
  recordsByResource,
  rowKey,
  truthAnswers,
  writeRawLines,
} from "../support/bad-data.js";
import { bufferIo } from "../support/cli-io.js";
import {
  expectedPoints,
  type StoredPoint,
  sortPoints,
  storedPoints,
} from "../support/expected-points.js";
import { asTerminal } from "../support/fake-tty.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { openTestPipeline, pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { ManualClock, startTestSimulator } from "../support/simulator.js";

const BASE_MS = Date.UTC(2026, 5, 15, 12);
const HOUR_S = 3600;
const SITE = "site A+1";
const HYBRID = "hybrid-site-01";
const META = new Set(["values_id", "protocol_id", "alarm_index", "alarm_name"]);

/** The members of a row that carry a value (not its meta members). */
const valued = (row: DataRecord): string[] =>
  Object.keys(row).filter((k) => k !== "timestamp" && !META.has(k) && row[k] !== null);

/** A row's JSON text with `member` sent as 1e400 (as the simulator poisons it). */
const poisoned = (row: DataRecord, member: string): string =>
  `{${Object.entries(row)
    .map(([k, v]) => `${JSON.stringify(k)}:${k === member ? POISON_TEXT : JSON.stringify(v)}`)
    .join(",")}}`;

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
  /** Members of SITE dead-lettered (one per answer that carried the poisoned row). */
  let memberLetters = 0;
  /** The hour whose shard refused HYBRID's total_solar_power line. */
  let conflictS = 0;
  /** The end of SITE's synced six hours. */
  let siteToS = 0;

  async function cli(...argv: string[]) {
    const io = bufferIo(env);
    const code = await runCli(argv, io);
    return { code, out: io.out(), err: io.err() };
  }

  /** Keeps a dead letter as an earlier version of energy-etl may have kept it. */
  function keep(letter: NewDeadLetter): void {
    const store = StateStore.open(stateDb);
    try {
      store.deadLetters.add(letter, new Date(clock.now()));
    } finally {
      store.close();
    }
  }

  /** SITE's raw points at one second, as InfluxDB holds them (not the rollups a retry writes). */
  const siteAt = async (tS: number): Promise<StoredPoint[]> =>
    (await storedPoints(db, `"device_id" = '${SITE}' AND time = ${tS}s`)).filter(
      (p) => !p.measurement.startsWith("rollup_"),
    );

  /** A row of SITE at `tS` with at least two members that carry a value, and its answer. */
  function siteRow(tS: number) {
    for (const answer of truthAnswers(sim, SITE, tS, tS)) {
      const row = answer.records.find((r) => valued(r).length >= 2);
      if (row) return { answer, row };
    }
    throw new Error(`no row of ${SITE} at ${tS} with two valued members`);
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
            .filter(
              (r) =>
                hasPoisonTarget(r) && sim.rowHasFault("poison", SITE, r.timestamp, r.values_id),
            )
            .map(rowKey),
        ),
      );
      const [key] = keys;
      if (keys.size !== 1 || key === undefined) return undefined;
      return answers.filter((a) => a.records.some((r) => rowKey(r) === key)).length;
    });
    clock.nowMs = nowMs;
    siteToS = nowMs / 1000;
    memberLetters = found;
    db = await createHourShardDb("cli_dead_letters");
    stateDb = tempStateDb();
    env = pipelineEnv(sim, db, stateDb, { SYNC_START: "PT6H", LOG_LEVEL: "warn" });

    const { pipeline } = await openTestPipeline(env, () => new Date(clock.now()));
    try {
      // member dead letters: SITE against the poisoned API
      expect((await runSync(pipeline, { deviceIds: [SITE] })).deadLetters).toBe(memberLetters);
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
  });

  it("lists them as tab-separated rows when piped: one row per dead letter and the summary line", async () => {
    const letters = stored();
    expect(letters).toHaveLength(memberLetters + 1);
    const { code, out } = await cli("dead-letters", "--list");
    expect(code).toBe(0);
    const rows = out.split("\n").filter((l) => /^\d+\t(row|member|line)\t/.test(l));
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
      expect(await runCli(["dead-letters", "--list"], io)).toBe(0);
      const out = io.out();
      const tooLong = out.split("\n").filter((line) => [...line].length > columns);
      expect(tooLong).toEqual([]);
      const shown = errorCells(out);
      expect([...shown.keys()]).toEqual(letters.map((l) => String(l.id)));
      for (const letter of letters) {
        const error = shown.get(String(letter.id)) ?? "";
        // not the request the device and resource columns already name
        expect(error).not.toMatch(/^GET /);
        if (letter.kind !== "line") {
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

  it("by default sums them up: a row per device, value id and reason, its count and first/last time, the biggest first", async () => {
    // the oracle: the letters as stored, grouped by device and value id (a member's own; a line
    // of several values requested: how many), each its data's times
    const letters = stored();
    const timeOf = (l: DeadLetter): string =>
      l.kind === "line"
        ? new Date(Number(/ (\d+)$/.exec(l.payload)?.[1]) * 1000).toISOString()
        : // the API's times are UTC, written without a zone
          new Date(
            `${z.object({ timestamp: z.string() }).parse(JSON.parse(l.payload)).timestamp}Z`,
          ).toISOString();
    const expected = new Map<string, { count: number; times: string[] }>();
    for (const l of letters) {
      const value = l.valueIds.length === 1 ? l.valueIds[0] : `(${l.valueIds.length} values)`;
      const key = `${l.deviceId}\t${value}`;
      const group = expected.get(key) ?? { count: 0, times: [] };
      group.count++;
      group.times.push(timeOf(l));
      expected.set(key, group);
    }

    const { code, out } = await cli("dead-letters");
    expect(code).toBe(0);
    const [head, ...lines] = out.split("\n");
    expect(head).toBe("count\tdevice\tvalue id\treason\tfirst (UTC)\tlast (UTC)");
    const rows = lines.filter((l) => /^\d+\t/.test(l)).map((l) => l.split("\t"));
    expect(rows).toHaveLength(expected.size);
    const counts = rows.map((r) => Number(r[0]));
    expect(counts).toEqual([...counts].sort((a, b) => b - a));
    for (const [count, device, value, reason, first, last] of rows) {
      const want = expected.get(`${device}\t${value}`);
      const times = [...(want?.times ?? [])].sort();
      expect([Number(count), first, last]).toEqual([
        want?.count,
        times[0]?.replace(".000Z", "Z"),
        times.at(-1)?.replace(".000Z", "Z"),
      ]);
      // the reason is the error's gist: the member it names, or the conflict; not the request
      expect(reason).not.toMatch(/^GET /);
      if (device === SITE) expect(reason).toContain(`${value}:`);
      else expect(reason).toContain('field type conflict: input field "value" on measurement');
    }
    expect(out).toContain(
      `${letters.length} dead letters in ${expected.size} groups of device, value id and reason`,
    );
  });

  it("the summary on an 80-column terminal: no line longer, each device and value id whole on its group's line", async () => {
    const io = bufferIo(env);
    asTerminal(io.stdout, 80);
    expect(await runCli(["dead-letters"], io)).toBe(0);
    const lines = io.out().trimEnd().split("\n");
    expect(lines.filter((line) => [...line].length > 80)).toEqual([]);
    const groupLines = lines.filter((line) => /^\s*\d+ {2}\S/.test(line));
    const keys = new Set(
      stored().map((l) => `${l.deviceId}|${l.valueIds.length === 1 ? l.valueIds[0] : ""}`),
    );
    expect(groupLines).toHaveLength(keys.size);
    for (const key of keys) {
      const [device = "", value = ""] = key.split("|");
      expect(groupLines.some((line) => line.includes(`  ${device}  ${value}`))).toBe(true);
    }
  });

  it("--list --limit N lists the first N and says how many more", async () => {
    const letters = stored();
    const { code, out } = await cli("dead-letters", "--list", "--limit", "1");
    expect(code).toBe(0);
    const rows = out.split("\n").filter((l) => /^\d+\t(row|member|line)\t/.test(l));
    expect(rows.map((r) => r.split("\t")[0])).toEqual([String(letters[0]?.id)]);
    expect(out).toContain(`1 of ${letters.length} dead letters`);
    expect(out).toContain(`${letters.length - 1} more: --limit ${letters.length}\n`);
  });

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
    const members = letters.filter((l) => l.kind === "member");
    expect(members).toHaveLength(memberLetters);
    for (const letter of members) {
      expect(letter.payload).toContain(POISON_TEXT);
      expect(letter.payload.length).toBeGreaterThan(60);
      expect(out).toContain(JSON.stringify(letter.payload));
    }
  });

  it("--device shows that device's only", async () => {
    const { code, out } = await cli("dead-letters", "--list", "--device", HYBRID);
    expect(code).toBe(0);
    const rows = out.split("\n").filter((l) => /^\d+\t(row|member|line)\t/.test(l));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatch(/^\d+\tline\thybrid-site-01\tall_data\t/);
    // of that device's: none more
    expect(out).toContain("1 of 1 dead letter (");
    expect(out).not.toContain("more: --limit");
    const summed = await cli("dead-letters", "--device", HYBRID);
    expect(summed.out.split("\n").filter((l) => /^\d+\t/.test(l))).toEqual([
      expect.stringMatching(/^1\thybrid-site-01\t/),
    ]);
    const json = await cli("dead-letters", "--device", SITE, "--json");
    expect(json.code).toBe(0);
    expect(JSON.parse(json.out)).toEqual(
      JSON.parse(JSON.stringify(stored().filter((l) => l.deviceId === SITE))),
    );
  });

  it("--retry of a member dead letter: the kept payload is still poison, so it stays (one more retry)", async () => {
    // the API healed, but a dead letter is its payload as received
    sim.dataFaults = {};
    const [first, ...others] = stored().filter((l) => l.deviceId === SITE);
    const { code, out } = await cli("dead-letters", "--retry", "--device", SITE, "--limit", "1");
    expect(code).toBe(0);
    expect(out).toMatch(
      /^retried 1 dead letter: 0 written, 1 still refused, 0 cut when kept \(not retried\) -> InfluxDB /,
    );
    const after = stored().filter((l) => l.deviceId === SITE);
    expect(after.map((l) => l.id)).toEqual([first?.id, ...others.map((l) => l.id)]);
    expect(after[0]).toMatchObject({ retries: 1, payload: first?.payload });
    expect(after[0]?.error).toMatch(
      /^still not a valid member \(e_\w+: must be a finite number, a string, a boolean or null; got Infinity/,
    );
    expect(after.slice(1).map((l) => l.retries)).toEqual(others.map(() => 0));
  });

  it("--clear --device forgets that device's only", async () => {
    const { code, out } = await cli("dead-letters", "--clear", "--device", SITE);
    expect(code).toBe(0);
    expect(out).toContain(`forgot ${memberLetters} dead letters`);
    const left = stored();
    expect(left.map((l) => [l.deviceId, l.kind])).toEqual([[HYBRID, "line"]]);
  });

  it("--retry of a line dead letter once InfluxDB takes it: written, forgotten, stored", async () => {
    // InfluxDB 1.6 keeps a field's type per shard: DROP SERIES of the string point leaves the
    // conflict, dropping the hour's shard (or the whole measurement) clears it
    await dropShardAt(db, conflictS);
    const { code, out } = await cli("dead-letters", "--retry");
    expect(code).toBe(0);
    expect(out).toMatch(/^retried 1 dead letter: 1 written, 0 still refused, 0 cut when kept/);
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

  it("--retry of a member that is valid now writes that member's point only", async () => {
    const tS = siteToS - HOUR_S;
    const { answer, row } = siteRow(tS);
    const [member = "", other = ""] = valued(row);
    const alone = (value: DataRecord[string]) =>
      sortPoints(
        expectedPoints(SITE, answer.resourceId, [
          { timestamp: row.timestamp, values_id: row.values_id ?? null, [member]: value },
        ]),
      );
    const before = sortPoints(await siteAt(tS));
    // the sync wrote the member's own point
    const [written] = alone(row[member] ?? null);
    expect(alone(row[member] ?? null)).toHaveLength(1);
    expect(before).toContain(written);
    // a member kept by an older version, with its row as received then (the others differ)
    keep({
      kind: "member",
      deviceId: SITE,
      resourceId: answer.resourceId,
      windowFromS: tS,
      windowToS: tS,
      valueIds: [member],
      payload: JSON.stringify({ ...row, [member]: 42.5, [other]: 999_999.5 }),
      error: "kept by an older version",
    });
    const { code, out } = await cli("dead-letters", "--retry");
    expect(code).toBe(0);
    expect(out).toMatch(/^retried 1 dead letter: 1 written, 0 still refused, 0 cut when kept/);
    expect(stored()).toEqual([]);
    // the member's point has the letter's value; every other point is as it was
    expect(sortPoints(await siteAt(tS))).toEqual(
      [...before.filter((p) => p !== written), ...alone(42.5)].sort(),
    );
  });

  it("--retry of a row kept whole by an older version: its good members are written, its bad one kept as a member dead letter", async () => {
    // an hour before SITE's synced hours: nothing of it is stored yet
    const tS = siteToS - 8 * HOUR_S;
    expect(await siteAt(tS)).toEqual([]);
    const { answer, row } = siteRow(tS);
    const [bad = ""] = valued(row);
    const payload = poisoned(row, bad);
    keep({
      kind: "row",
      deviceId: SITE,
      resourceId: answer.resourceId,
      windowFromS: tS,
      windowToS: tS,
      valueIds: answer.chunk.values,
      payload,
      error: "kept whole by an older version",
    });
    const first = await cli("dead-letters", "--retry");
    expect(first.code).toBe(0);
    expect(first.out).toMatch(
      /^retried 1 dead letter: 1 written \(1 of their members still invalid: kept as member dead letters\), 0 still refused, 0 cut when kept/,
    );
    const good = Object.fromEntries(Object.entries(row).filter(([k]) => k !== bad)) as DataRecord;
    expect(sortPoints(await siteAt(tS))).toEqual(
      sortPoints(expectedPoints(SITE, answer.resourceId, [good])),
    );
    const [letter, ...more] = stored();
    expect(more).toEqual([]);
    expect(letter).toMatchObject({
      kind: "member",
      deviceId: SITE,
      resourceId: answer.resourceId,
      windowFromS: tS,
      windowToS: tS,
      valueIds: [bad],
      payload,
      retries: 0,
    });
    expect(letter?.error).toContain(`(${bad}: must be a finite number`);
    // the member alone is still poison
    const second = await cli("dead-letters", "--retry");
    expect(second.out).toMatch(/^retried 1 dead letter: 0 written, 1 still refused/);
    expect(stored()).toEqual([expect.objectContaining({ id: letter?.id, retries: 1 })]);
    expect(sortPoints(await siteAt(tS))).toEqual(
      sortPoints(expectedPoints(SITE, answer.resourceId, [good])),
    );
    expect((await cli("dead-letters", "--clear")).code).toBe(0);
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
        `^sync ok: 1 device, .*; ${made} new dead letters? \\(see energy-etl dead-letters\\)$`,
        "m",
      ),
    );
    // the lookback reads the same poisoned rows again: known ones, no new dead letter
    const again = bufferIo(env);
    expect(await runCli(["sync", "--device", SITE], again)).toBe(0);
    expect(deadLetters()).toBe(made);
    expect(again.out()).toMatch(/^sync ok: 1 device, /m);
    expect(again.out()).not.toContain("dead letter");
  });
});
