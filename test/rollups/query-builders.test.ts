/**
 * Every InfluxQL query the project builds over time ranges (rollups, audit), run against the
 * tests' influxd on readings that lie in several disjoint ranges, each answering what the test
 * computes from the readings it wrote; and no source file ORs time ranges (InfluxQL 1.x and 2.x
 * answer such a WHERE with nothing).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { InfluxQuery } from "../../src/influx/influx-query.js";
import { storedCounts } from "../../src/pipeline/audit-counts.js";
import { dayPlan } from "../../src/rollups/day-increases.js";
import { type HourSpan, readSpan, spanStatements } from "../../src/rollups/hour-increases.js";
import { rawStatement, readingsBySeries } from "../../src/rollups/readings.js";
import type { RollupTarget } from "../../src/rollups/series.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";

const HOUR_S = 3600;
const DAY_S = 86_400;
const T0 = Date.UTC(2026, 4, 4) / 1000;
/** Three disjoint ranges of readings every 10 minutes, days apart, one with falls. */
const RANGES = [
  { fromS: T0 + 2 * HOUR_S, toS: T0 + 5 * HOUR_S },
  { fromS: T0 + 2 * DAY_S + 10 * HOUR_S, toS: T0 + 2 * DAY_S + 13 * HOUR_S },
  { fromS: T0 + 5 * DAY_S + 19 * HOUR_S, toS: T0 + 6 * DAY_S + 1 * HOUR_S },
];
const DEVICE = "multi-range \\ device";
const target: RollupTarget = {
  deviceId: DEVICE,
  resourceId: "all_data",
  counters: [{ measurement: "total_solar_energy", unit: "kWh", type: "cumulative" }],
};

/** The readings written: rising, with a fall every 7th reading of the second range. */
const readings: { s: number; v: number }[] = [];
for (const [r, range] of RANGES.entries()) {
  for (let s = range.fromS, i = 0; s < range.toS; s += 600, i++) {
    const rise = 100 * r + i;
    readings.push({ s, v: r === 1 && i % 7 === 6 ? rise - 3 : rise });
  }
}

let db: TestInfluxDb;
let query: InfluxQuery;

beforeAll(async () => {
  db = await createTestInfluxDb("query_builders");
  const tags = "device_id=multi-range\\ /\\ device,resource_id=all_data,type=cumulative,unit=kWh";
  const lines = readings.map(
    ({ s, v }) => `total_solar_energy,${tags},values_id=000 value=${v} ${s}`,
  );
  // another device's points in between, which no query of the target may see
  lines.push(
    `total_solar_energy,device_id=other,resource_id=all_data,type=cumulative,unit=kWh,values_id=000 value=5 ${T0 + DAY_S}`,
  );
  const res = await fetch(`${db.rawUrl}/write?db=${db.bucket}&precision=s`, {
    method: "POST",
    body: lines.join("\n"),
  });
  expect(res.status).toBe(204);
  query = new InfluxQuery({ url: db.url, token: db.token, bucket: db.bucket, timeoutMs: 10_000 });
});

const inRange = (fromS: number, toS: number) => readings.filter((r) => r.s >= fromS && r.s < toS);

describe("rollup queries over readings in disjoint ranges", () => {
  it("a span over all of them: per hour, the first, last and count of its readings; nothing in the gaps", async () => {
    const span: HourSpan = {
      target,
      fromS: T0,
      toS: T0 + 7 * DAY_S,
      lookup: true,
      next: true,
      stored: true,
    };
    const facts = readSpan(span, await query.query(spanStatements(span, {})));
    const [series] = [...facts.hours.values()];
    // per hour: its first and last reading, the steps down landing in it (difference() from the
    // reading before, in the span), and whether one of them is inside the hour
    type Hour = { first: number; last: number; falls: number; fallsInside: boolean };
    const want = new Map<number, Hour>();
    readings.forEach(({ s, v }, i) => {
      const hour = Math.floor(s / HOUR_S) * HOUR_S;
      const before = readings[i - 1];
      const h = want.get(hour) ?? { first: v, last: v, falls: 0, fallsInside: false };
      h.last = v;
      if (before !== undefined && v < before.v) {
        h.falls++;
        if (Math.floor(before.s / HOUR_S) * HOUR_S === hour) h.fallsInside = true;
      }
      want.set(hour, h);
    });
    expect(facts.hours.size).toBe(1);
    expect(series?.hours).toEqual(want);
    // the falls of range 1 are among them
    expect([...want.values()].some((h) => h.fallsInside)).toBe(true);
    expect(facts.before.size).toBe(0);
    expect(facts.next.size).toBe(0);
  });

  it.each(RANGES.map((r, i) => [i, r] as const))(
    "range %i alone: its hours only, the reading before it, the next one after it",
    async (_i, range) => {
      const span: HourSpan = {
        target,
        fromS: range.fromS,
        toS: range.toS,
        lookup: true,
        next: true,
        stored: false,
      };
      const facts = readSpan(span, await query.query(spanStatements(span, {})));
      const hours = [...([...facts.hours.values()][0]?.hours.keys() ?? [])].sort((a, b) => a - b);
      const want = [
        ...new Set(inRange(range.fromS, range.toS).map((r) => Math.floor(r.s / HOUR_S) * HOUR_S)),
      ];
      expect(hours).toEqual(want);
      const before = readings.filter((r) => r.s < range.fromS).at(-1);
      expect([...facts.before.values()].map((b) => b.base)).toEqual(before ? [before.v] : []);
      const after = readings.find((r) => r.s >= range.toS);
      expect([...facts.next.values()]).toEqual(after ? [after.s] : []);
    },
  );

  it("the readings of several disjoint runs of hours, one statement each, in one request", async () => {
    const runs = RANGES.map((r) => ({ fromS: r.fromS + HOUR_S, toS: r.fromS + 2 * HOUR_S }));
    const statements = runs.map((run) => rawStatement(target, run));
    const results = await query.query(statements);
    runs.forEach((run, i) => {
      const got = [...readingsBySeries(target, [results[i] ?? []]).values()].flatMap((x) =>
        x.readings.map((r) => ({ s: r.s, v: r.value })),
      );
      expect(got).toEqual(inRange(run.fromS, run.toS));
    });
  });

  it("the days of a zone off the UTC hour (Asia/Kolkata) around each range: their split hours' readings", async () => {
    const days = RANGES.map((r) => {
      const startS = Math.floor((r.fromS + 5.5 * HOUR_S) / DAY_S) * DAY_S - 5.5 * HOUR_S;
      return { startS, endS: startS + DAY_S };
    });
    for (const day of days) {
      const plan = dayPlan(target, "Asia/Kolkata", day, {});
      const results = await query.query(plan.statements);
      // no hour points stored: a day's sum is only what its split hours' readings add
      const split = [day.startS, day.endS].map((edge) => Math.floor(edge / HOUR_S) * HOUR_S);
      const points = plan.points(results);
      const readIn = split.flatMap((h) => inRange(h, h + HOUR_S));
      expect(points.length).toBe(readIn.some((r) => r.s >= day.startS && r.s < day.endS) ? 1 : 0);
    }
  });
});

describe("audit queries over readings in disjoint ranges", () => {
  it("stored points per day: each range's day holds its readings, the days between none", async () => {
    const [perDay = new Map()] = await storedCounts(
      query,
      {
        deviceId: DEVICE,
        resourceId: "all_data",
        syncedUntilS: T0 + 7 * DAY_S,
        samples: [
          {
            valueId: "e_02_07_04_000_total_solar_energy",
            group: [],
            measurement: "total_solar_energy",
            unit: "kWh",
            type: "cumulative",
          },
        ],
      },
      T0,
      T0 + 7 * DAY_S - 1,
    );
    const want = new Map<number, number>();
    for (const { s } of readings) {
      const day = Math.floor(s / DAY_S) * DAY_S;
      want.set(day, (want.get(day) ?? 0) + 1);
    }
    const got = new Map([...perDay].filter(([, n]) => n > 0));
    expect(got).toEqual(want);
  });
});

describe("no query ORs time ranges", () => {
  /** Source files under `dir`. */
  const sources = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? sources(path) : path.endsWith(".ts") ? [path] : [];
    });

  it("no source file joins time conditions with OR", () => {
    const offenders = sources("src").filter((path) => {
      const text = readFileSync(path, "utf8");
      return /time\s*[<>]=?[^;\n]*\)\s*OR\s*\(/i.test(text) || /join\(\s*" OR "\s*\)/.test(text);
    });
    expect(offenders).toEqual([]);
  });
});
