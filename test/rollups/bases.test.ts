/**
 * A series' base before an instant (src/rollups/bases.ts), pure: the statements it asks InfluxDB,
 * and the base it takes from their answers (built by hand here). The rule (docs/design.md,
 * "Bases"): the last hour point's `base`, unless a raw reading came after that hour (a reading at
 * the hour's end is the next hour's: docs/schema.md, "Rollups"); then that reading.
 */
import type { InfluxqlSeries } from "../../src/influx/influx-query.js";
import { baseStatements, basesFrom, rowByKey } from "../../src/rollups/bases.js";
import type { RollupTarget, SeriesTags } from "../../src/rollups/series.js";

const H = 3600;
const T0 = Date.UTC(2026, 5, 1) / 1000;
const target: RollupTarget = {
  deviceId: "inv-1",
  resourceId: "all_data",
  counters: [
    { measurement: "total_solar_energy", unit: "kWh", type: "cumulative" },
    { measurement: "charge_energy_today", unit: "kWh", type: "cumulative_daily_reset" },
  ],
};

/** A `last("base")` answer series of rollup_hour, grouped by measurement, values_id, unit, type. */
const storedHour = (measurement: string, valuesId: string, s: number, base: number) => ({
  name: "rollup_hour",
  tags: { measurement, values_id: valuesId, unit: "kWh", type: "cumulative" },
  columns: ["time", "last"],
  values: [[s, base]],
});

/** A `last("value")` answer series of a raw measurement, grouped by values_id, unit, type. */
const rawReading = (
  measurement: string,
  valuesId: string,
  s: number,
  value: unknown,
  type = "cumulative",
): InfluxqlSeries => ({
  name: measurement,
  tags: { values_id: valuesId, unit: "kWh", type },
  columns: ["time", "last"],
  values: [[s, value]],
});

const solar = (valuesId: string): SeriesTags => ({
  measurement: "total_solar_energy",
  valuesId,
  unit: "kWh",
  type: "cumulative",
});
const keyOf = (t: SeriesTags) => JSON.stringify([t.measurement, t.valuesId, t.unit, t.type]);

/** The bases found, as [values_id, base] sorted by values_id. */
const basesOf = (answers: InfluxqlSeries[][]) =>
  [...basesFrom(target, answers).values()]
    .map((b) => [b.tags.valuesId, b.base])
    .sort(([a], [b]) => String(a).localeCompare(String(b)));

describe("baseStatements", () => {
  it("the last stored hour base and the last raw reading of the target's counters, before the instant", () => {
    expect(baseStatements(target, T0, { retentionPolicy: "rollups" })).toEqual([
      `SELECT last("base") FROM "rollups"."rollup_hour" WHERE "device_id" = 'inv-1' AND "resource_id" = 'all_data' AND time < ${T0}s GROUP BY "measurement", "values_id", "unit", "type"`,
      `SELECT last("value") FROM "total_solar_energy","charge_energy_today" WHERE "device_id" = 'inv-1' AND "resource_id" = 'all_data' AND time < ${T0}s GROUP BY "values_id", "unit", "type"`,
    ]);
  });

  it("rollups beside the raw points: the hour measurement unqualified", () => {
    const [stored] = baseStatements(target, T0 + H, {});
    expect(stored).toBe(
      `SELECT last("base") FROM "rollup_hour" WHERE "device_id" = 'inv-1' AND "resource_id" = 'all_data' AND time < ${T0 + H}s GROUP BY "measurement", "values_id", "unit", "type"`,
    );
  });
});

describe("basesFrom: the last hour point's base, unless a raw reading came after that hour", () => {
  const hourAt = T0 - 3 * H;
  it.each<[string, number, number]>([
    // the stored base is the hour's high after a dip (101.5), the last reading in the dip (96)
    ["a reading inside the stored hour: the stored base", hourAt + 59 * 60, 101.5],
    ["a reading at the hour's start: the stored base", hourAt, 101.5],
    ["a reading before the stored hour: the stored base", hourAt - 2 * H, 101.5],
    ["a reading at the stored hour's end is the next hour's: that reading", hourAt + H, 96],
    ["a reading hours after the stored hour (written with rollups off): it", hourAt + 2 * H, 96],
  ])("%s", (_what, readingS, base) => {
    const answers = [
      [storedHour("total_solar_energy", "001", hourAt, 101.5)],
      [rawReading("total_solar_energy", "001", readingS, 96)],
    ];
    expect(basesOf(answers)).toEqual([["001", base]]);
  });

  it("each series on its own: one only stored, one only raw, one with both; tags as stored", () => {
    const found = basesFrom(target, [
      [
        storedHour("total_solar_energy", "001", T0 - 5 * H, 10),
        storedHour("total_solar_energy", "003", T0 - 5 * H, 30),
      ],
      [
        rawReading("total_solar_energy", "002", T0 - 60, 20),
        rawReading("total_solar_energy", "003", T0 - 5 * H + 60, 29),
      ],
    ]);
    expect(new Map([...found].map(([k, b]) => [k, b.base]))).toEqual(
      new Map([
        [keyOf(solar("001")), 10],
        [keyOf(solar("002")), 20],
        [keyOf(solar("003")), 30],
      ]),
    );
    expect(found.get(keyOf(solar("002")))?.tags).toEqual(solar("002"));
    expect(found.get(keyOf(solar("001")))?.tags).toEqual(solar("001"));
  });

  it("no answer, or no rows: no base (the series' first reading then adds nothing)", () => {
    expect(basesOf([])).toEqual([]);
    expect(basesOf([[], []])).toEqual([]);
    expect(basesOf([[{ ...storedHour("total_solar_energy", "001", T0, 1), values: [] }]])).toEqual(
      [],
    );
  });

  it("a raw series not among the target's counters, or a reading that is not a number: no base", () => {
    expect(
      basesOf([
        [],
        [
          rawReading("total_solar_energy", "001", T0 - 60, 5, "continuous"),
          rawReading("total_solar_energy", "002", T0 - 60, null),
          rawReading("total_solar_energy", "003", T0 - 60, 7),
        ],
      ]),
    ).toEqual([["003", 7]]);
  });
});

describe("rowByKey", () => {
  it("per series the first row's time and value, keyed by its tags", () => {
    const rows = rowByKey(
      [
        {
          name: "total_solar_energy",
          tags: { values_id: "001" },
          columns: ["time", "first"],
          values: [
            [T0 + 60, 4],
            [T0 + 120, 5],
          ],
        },
        { name: "total_solar_energy", tags: { values_id: "002" }, columns: [], values: [[T0, 1]] },
      ],
      (s) => (s.tags?.values_id === "001" ? solar("001") : undefined),
    );
    expect([...rows]).toEqual([
      [keyOf(solar("001")), { tags: solar("001"), s: T0 + 60, value: 4 }],
    ]);
  });
});
