/**
 * The report from rollup rows and its renderings, without InfluxDB: periods (ISO weeks, months),
 * a counter repeated by a second resource counted once, empty versus 0, the ranking; bars that
 * fit a width, TSV's shape. Figures by hand (the influxd test holds them to the simulator).
 */

import { reportStatement } from "../../src/report/read-rollups.js";
import { bar, barLines, renderBars } from "../../src/report/render-bars.js";
import { renderTsv } from "../../src/report/render-tsv.js";
import { buildReport, coveredDates, periodLabel, type RollupDay } from "../../src/report/report.js";

const day = (
  deviceId: string,
  measurement: string,
  date: string,
  kwh: number,
  resourceId = "all_data",
): RollupDay => ({ deviceId, resourceId, measurement, valuesId: "000", date, kwh });

const ROWS: RollupDay[] = [
  day("roof", "total_solar_energy", "2026-03-29", 10),
  day("roof", "total_solar_energy", "2026-03-30", 20),
  day("roof", "total_load_energy", "2026-03-30", 0),
  // the same counter again in a second resource of the device (the simulator's battery_bank)
  day("roof", "charge_energy_today", "2026-03-30", 4),
  day("roof", "charge_energy_today", "2026-03-30", 4, "battery_bank"),
  day("barn\twest", "total_solar_energy", "2026-03-30", 90),
  day("field", "total_solar_energy", "2026-03-30", 50),
  // not one of the report's counters, and a day outside the weeks asked
  day("roof", "genset_energy", "2026-03-30", 7),
  day("roof", "total_solar_energy", "2026-03-15", 1000),
];
const SITES = { roof: { kwp: 5, name: "Roof" }, field: { kwp: 50, group: "south" }, barn: {} };

describe("the report of rollup rows", () => {
  it("ISO weeks and months: labels, whole periods", () => {
    expect(periodLabel("week", "2026-01-01")).toBe("2026-W01");
    expect(periodLabel("week", "2027-01-01")).toBe("2026-W53");
    expect(periodLabel("week", "2024-12-30")).toBe("2025-W01");
    expect(periodLabel("week", "2026-03-29")).toBe("2026-W13");
    expect(periodLabel("week", "2026-03-30")).toBe("2026-W14");
    expect(coveredDates("week", "2026-03-29", "2026-03-30")).toEqual({
      from: "2026-03-23",
      to: "2026-04-05",
      labels: ["2026-W13", "2026-W14"],
    });
    expect(coveredDates("month", "2026-01-31", "2026-03-01")).toEqual({
      from: "2026-01-01",
      to: "2026-03-31",
      labels: ["2026-01", "2026-02", "2026-03"],
    });
  });

  it("per week: a repeated counter once, no counter empty and 0 as 0, the ranking, the fleet", () => {
    const report = buildReport(ROWS, {
      tz: "UTC",
      by: "week",
      covered: coveredDates("week", "2026-03-29", "2026-03-30"),
      sites: SITES,
    });
    expect(report.periods).toEqual(["2026-W13", "2026-W14"]);
    const roof = report.sites.find((s) => s.deviceId === "roof");
    expect(roof?.periods.map((p) => p.energy)).toEqual([
      {
        produced: 10,
        consumed: null,
        imported: null,
        exported: null,
        batteryIn: null,
        batteryOut: null,
      },
      { produced: 20, consumed: 0, imported: null, exported: null, batteryIn: 4, batteryOut: null },
    ]);
    expect(roof?.periods.map((p) => p.kwhPerKwp)).toEqual([2, 4]);
    // roof 30/5 = 6 > field 50/50 = 1; barn (no kWp) and the configured "barn" without data
    expect(report.sites.map((s) => [s.deviceId, s.rank, s.kwhPerKwp])).toEqual([
      ["roof", 1, 6],
      ["field", 2, 1],
      ["barn", null, null],
      ["barn\twest", null, null],
    ]);
    expect(report.fleet.total.produced).toBe(10 + 20 + 90 + 50);
    expect(report.fleet.total.batteryIn).toBe(4);
    expect(report.fleet.total.imported).toBeNull();
    expect([report.fleet.kwp, report.fleet.kwhPerKwp]).toEqual([55, 80 / 55]);
  });
});

describe("the rollup days a report reads", () => {
  it("the statement reads the covered dates' days exactly: from the first's start to the day after the last", () => {
    const covered = coveredDates("month", "2026-03-15", "2026-03-20");
    expect(reportStatement({}, "America/New_York", covered)).toContain(
      "AND time >= '2026-03-01T05:00:00.000Z' AND time < '2026-04-01T04:00:00.000Z' ",
    );
    expect(reportStatement({ retentionPolicy: "rollups" }, "UTC", covered)).toContain(
      `FROM "rollups"."rollup_day" WHERE "tz" = 'UTC' `,
    );
  });
});

describe("rendering", () => {
  const report = buildReport(ROWS, {
    tz: "UTC",
    by: "day",
    covered: coveredDates("day", "2026-03-29", "2026-03-30"),
    sites: SITES,
  });

  it("a bar is whole blocks and an eighth-block, scaled to the largest value", () => {
    expect(bar(8, 8, 3)).toBe("███");
    expect(bar(1, 8, 1)).toBe("▏");
    expect(bar(7, 8, 1)).toBe("▉");
    expect(bar(3, 8, 4)).toBe("█▌");
    expect(bar(0, 8, 4)).toBe("");
  });

  it("bars fit every width: the longest spans the room its label and figure leave", () => {
    const items = [
      { label: "a site with a very long display name indeed", value: 120, note: "(a long note)" },
      { label: "b", value: 60 },
    ];
    for (const columns of [20, 33, 80, 141]) {
      const lines = barLines(items, columns);
      for (const line of lines) expect([...line].length).toBeLessThanOrEqual(columns);
      const full = lines[0]?.match(/█+/)?.[0].length ?? 0;
      expect(lines[1]?.match(/[█▏▎▍▌▋▊▉]+/)?.[0].length).toBe(Math.ceil(full / 2));
      expect(full).toBeGreaterThanOrEqual(Math.floor((columns - Math.floor(columns / 3) - 7) / 4));
    }
  });

  it("the terminal view fits 40 to 200 columns", () => {
    for (const columns of [40, 57, 80, 123, 200]) {
      const text = renderBars(report, columns);
      for (const line of text.split("\n")) expect([...line].length).toBeLessThanOrEqual(columns);
      expect(text).toContain("specific yield");
    }
  });

  it("TSV: a header row, one row per site and day, empty where there is no figure, a tab in a name escaped", () => {
    const lines = renderTsv(report).split("\n");
    expect(lines[0]?.split("\t")).toHaveLength(12);
    expect(lines).toHaveLength(1 + 4 * 2);
    expect(lines.filter((l) => l.startsWith("roof\t"))).toEqual([
      "roof\tRoof\t\t5\t2026-03-29\t10\t\t\t\t\t\t2",
      "roof\tRoof\t\t5\t2026-03-30\t20\t0\t\t\t4\t\t4",
    ]);
    expect(lines.filter((l) => l.startsWith("barn\\twest\t"))).toHaveLength(2);
    for (const line of lines) expect(line.split("\t")).toHaveLength(12);
  });
});
