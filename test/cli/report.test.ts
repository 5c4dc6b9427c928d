/**
 * `energy-etl report` on a real influxd and simulator: backfill (which writes the rollups), then
 * the report, its figures held to an oracle computed from the simulator's readings (the
 * counter rule of docs/schema.md written again in test/report/report-oracle.ts; the counters as
 * docs/schema.md maps them), per day, ISO week and month, in UTC and Europe/Berlin; TSV piped,
 * bars on a terminal.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../../src/cli.js";
import type { Simulator } from "../../src/simulator/server.js";
import {
  byPeriod,
  expectFigures,
  isoWeek,
  KEYS,
  type Key,
  type Oracle,
  oracle,
  reportSchema,
} from "../report/report-oracle.js";
import { builtCli, killCliChildren, spawnCli } from "../support/cli-child.js";
import { bufferIo, NO_ENV_DIR } from "../support/cli-io.js";
import { asTerminal } from "../support/fake-tty.js";
import { headOne, inBatches, looksLikeStackTrace } from "../support/head-one.js";
import { createTestInfluxDb } from "../support/influx-db.js";
import { influxql } from "../support/influxd.js";
import { pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";
import { tempDir } from "../support/temp-dir.js";

// Berlin moves to summer time on 29 March 2026; 23-29 March are ISO week 13, 30 March week 14.
// The backfill starts days before the reports' --from: on Sunday 22 March (week 12).
const BACKFILL_FROM = "2026-03-22T00:00:00Z";
const FROM = "2026-03-27T00:00:00Z";
const TO = "2026-03-30T23:59:59Z";
const BACKFILL_FROM_S = Date.parse(BACKFILL_FROM) / 1000;
const TO_S = Date.parse(TO) / 1000;
/** The oracle over what the backfill read (the counter rule needs the reading before each day). */
const truth = (sim: Simulator, tz: string) => oracle(sim, tz, BACKFILL_FROM_S, TO_S);
/** The oracle's days from `first` to `last` alone. */
function within(want: Oracle, first: string, last: string): Oracle {
  const out: Oracle = new Map();
  for (const [id, days] of want) {
    out.set(id, new Map([...days].filter(([date]) => date >= first && date <= last)));
  }
  return out;
}

const SITES = {
  "hybrid-site-01": { kwp: 9.8, name: "Hybrid roof" },
  "audit-box-03": { kwp: 30, name: "Audit box", group: "north" },
  "site A+1": { kwp: 5 },
};

describe("energy-etl report against influxd, figures from the simulator's readings", () => {
  let sim: Simulator;
  let env: Record<string, string>;
  let configFile: string;

  beforeAll(async () => {
    sim = await startTestSimulator({ resolutionS: 3600 });
    const db = await createTestInfluxDb("cli_report");
    env = pipelineEnv(sim, db, tempStateDb(), {
      LOG_LEVEL: "warn",
      ROLLUP_TIME_ZONES: "UTC,Europe/Berlin,America/New_York",
    });
    configFile = join(tempDir("energy-etl-report-"), "config.json");
    writeFileSync(configFile, JSON.stringify({ sites: SITES }));
    const backfill = await run(env, "backfill", "--all", "--from", BACKFILL_FROM, "--to", TO);
    expect([backfill.code, backfill.err]).toEqual([0, ""]);
  }, 300_000);
  afterEach(() => killCliChildren());
  afterAll(() => sim?.close());

  /**
   * The built CLI as a child: each run a process of its own, as an operator's (in this process,
   * node's shared keep-alive agent would send a query on a socket influxd's proxy closed after
   * 5 idle seconds: ECONNRESET).
   */
  async function run(extra: Record<string, string>, ...argv: string[]) {
    const child = spawnCli(["--config", configFile, ...argv], { ...env, ...extra });
    const { code } = await child.wait(120_000, `energy-etl ${argv.join(" ")}`);
    return { code, out: child.stdout(), err: child.stderr() };
  }
  const report = async (...argv: string[]) => {
    const { code, out, err } = await run(
      {},
      "report",
      "--from",
      FROM,
      "--to",
      TO,
      "--json",
      ...argv,
    );
    expect([code, err]).toEqual([0, ""]);
    return reportSchema.parse(JSON.parse(out));
  };

  it("per day in the first of ROLLUP_TIME_ZONES (UTC): six energies per site and day, fleet totals, specific yield and its ranking", async () => {
    const got = await report();
    expect([got.tz, got.by, got.from, got.to]).toEqual(["UTC", "day", "2026-03-27", "2026-03-30"]);
    expect(got.periods).toEqual(["2026-03-27", "2026-03-28", "2026-03-29", "2026-03-30"]);
    const want = within(truth(sim, "UTC"), "2026-03-27", "2026-03-30");
    expect(expectFigures(got, want, (d) => d)).toBe(4 * 4 * 6);
    // battery in and out are one readout's pair (charge/discharge_energy_today): the hybrid has
    // both, the others neither (empty, not 0), so the fleet's in and out sum the same sites
    const battery = got.sites.map((s) => [
      s.deviceId,
      s.total.batteryIn === null,
      s.total.batteryOut === null,
    ]);
    const hybridOnly = (id: string) => [id, id !== "hybrid-site-01", id !== "hybrid-site-01"];
    expect(battery.sort()).toEqual([...want.keys()].map(hybridOnly).sort());
    expect(got.fleet.total.batteryOut).toBeGreaterThan(0);
    // fleet: the sum of the oracle's sites
    const totals = (key: Key) =>
      [...want.values()]
        .flatMap((days) => [...days.values()].map((d) => d[key] ?? 0))
        .reduce((a, b) => a + b, 0);
    for (const key of KEYS) expect(got.fleet.total[key]).toBeCloseTo(totals(key), 6);
    // specific yield: produced kWh over the configured kWp; ranked highest first, no kWp unranked
    const produced = (id: string) =>
      [...(want.get(id)?.values() ?? [])].reduce((n, d) => n + (d.produced ?? 0), 0);
    const yields = Object.entries(SITES)
      .map(([id, s]) => ({ id, y: produced(id) / s.kwp }))
      .sort((a, b) => b.y - a.y);
    expect(got.sites.map((s) => [s.deviceId, s.rank])).toEqual([
      ...yields.map((y, i) => [y.id, i + 1]),
      ["offgrid-genset-02", null],
    ]);
    for (const { id, y } of yields) {
      expect(got.sites.find((s) => s.deviceId === id)?.kwhPerKwp).toBeCloseTo(y, 9);
    }
    const ratedKwh = yields.reduce((n, { id }) => n + produced(id), 0);
    expect(got.fleet.kwp).toBe(9.8 + 30 + 5);
    expect(got.fleet.kwhPerKwp).toBeCloseTo(ratedKwh / (9.8 + 30 + 5), 9);
    expect(got.sites[0]?.name).toBe(
      yields[0]?.id === "site A+1" ? "site A+1" : SITES[yields[0]?.id as "audit-box-03"].name,
    );
  }, 120_000);

  it("--tz Europe/Berlin --by week: Berlin's local days summed into whole ISO weeks", async () => {
    const got = await report("--tz", "Europe/Berlin", "--by", "week");
    expect([got.tz, got.by, got.from, got.to]).toEqual([
      "Europe/Berlin",
      "week",
      "2026-03-23",
      "2026-04-05",
    ]);
    expect(got.periods).toEqual(["2026-W13", "2026-W14"]);
    expect(expectFigures(got, truth(sim, "Europe/Berlin"), isoWeek)).toBe(4 * 2 * 6);
  }, 120_000);

  it("--by week or month from mid-period: the first period holds the days before --from, and no day before it leaks in (UTC, Berlin, New York)", async () => {
    for (const tz of ["UTC", "Europe/Berlin", "America/New_York"]) {
      // week 13 is 23-29 March: the rollups of 23-26 March are read too; Sunday 22 is week 12
      const week = await report("--tz", tz, "--by", "week");
      expect([week.tz, week.from, week.to, week.periods]).toEqual([
        tz,
        "2026-03-23",
        "2026-04-05",
        ["2026-W13", "2026-W14"],
      ]);
      const want = truth(sim, tz);
      expect(expectFigures(week, want, isoWeek)).toBe(4 * 2 * 6);
      // the month: every March day the rollups hold, from 22 March (21 March in New York)
      const month = await report("--tz", tz, "--by", "month");
      expect([month.from, month.to, month.periods]).toEqual([
        "2026-03-01",
        "2026-03-31",
        ["2026-03"],
      ]);
      expect(expectFigures(month, want, (d) => d.slice(0, 7))).toBe(4 * 6);
    }
    // the oracle's week 12 is not empty: a day of it read into week 13 would show
    const hybrid = byPeriod(
      truth(sim, "America/New_York").get("hybrid-site-01") ?? new Map(),
      isoWeek,
    );
    expect(hybrid.get("2026-W12")?.produced).toBeGreaterThan(0);
  }, 300_000);

  it("--to is an instant the range ends before, as backfill's: --to 2026-04-01 is March alone, --to 2026-03-30 ends on the 29th, --from = --to is that day", async () => {
    const month = await run(
      {},
      "report",
      "--from",
      "2026-03-01",
      "--to",
      "2026-04-01",
      "--by",
      "month",
      "--json",
    );
    expect([month.code, month.err]).toEqual([0, ""]);
    expect(reportSchema.parse(JSON.parse(month.out)).periods).toEqual(["2026-03"]);
    const days = await run({}, "report", "--from", FROM, "--to", "2026-03-30", "--json");
    expect([days.code, days.err]).toEqual([0, ""]);
    expect(reportSchema.parse(JSON.parse(days.out)).periods).toEqual([
      "2026-03-27",
      "2026-03-28",
      "2026-03-29",
    ]);
    const one = await run({}, "report", "--from", "2026-03-28", "--to", "2026-03-28", "--json");
    expect(reportSchema.parse(JSON.parse(one.out)).periods).toEqual(["2026-03-28"]);
  }, 120_000);

  it("the default zone is the first of ROLLUP_TIME_ZONES; a zone not rolled up, not a zone, or a bad --by is a usage error; a range without rollups lists the sites empty, with a warning", async () => {
    const berlinFirst = await run(
      { ROLLUP_TIME_ZONES: "Europe/Berlin,UTC" },
      "report",
      "--from",
      FROM,
      "--to",
      TO,
      "--json",
    );
    expect(berlinFirst.code).toBe(0);
    expect(reportSchema.parse(JSON.parse(berlinFirst.out)).tz).toBe("Europe/Berlin");
    const notRolled = await run({}, "report", "--from", FROM, "--tz", "Asia/Tokyo");
    expect(notRolled.code).toBe(2);
    expect(notRolled.out).toBe("");
    expect(notRolled.err).toContain(
      "Asia/Tokyo is not rolled up: ROLLUP_TIME_ZONES is UTC,Europe/Berlin,America/New_York",
    );
    const notZone = await run({}, "report", "--from", FROM, "--tz", "Mars/Olympus");
    expect(notZone.code).toBe(2);
    expect(notZone.err).toContain("--tz: Mars/Olympus is not a time zone");
    // a range without rollups: every site listed with empty figures, and a warning
    const none = await run(
      { LOG_FORMAT: "json" },
      "report",
      "--from",
      "2026-01-05",
      "--to",
      "2026-01-05",
    );
    expect(none.code).toBe(0);
    expect(none.out.split("\n").filter((l) => l.startsWith("hybrid-site-01\t"))).toEqual([
      "hybrid-site-01\tHybrid roof\t\t9.8\t2026-01-05\t\t\t\t\t\t\t",
    ]);
    expect(none.err).toContain("no rollups in the range");
    const notPeriod = await run({}, "report", "--by", "year");
    expect(notPeriod.code).toBe(2);
    expect(notPeriod.err).toContain('--by: expected day, week or month, got "year"');
  });

  it("piped: TSV, a header row and one row per site and month, the figures the oracle's", async () => {
    const { code, out } = await run({}, "report", "--from", FROM, "--to", TO, "--by", "month");
    expect(code).toBe(0);
    const [head, ...rows] = out
      .replace(/\n$/, "")
      .split("\n")
      .map((line) => line.split("\t"));
    expect(head).toEqual([
      "device_id",
      "name",
      "group",
      "kwp",
      "period",
      "produced_kwh",
      "consumed_kwh",
      "imported_kwh",
      "exported_kwh",
      "battery_in_kwh",
      "battery_out_kwh",
      "kwh_per_kwp",
    ]);
    const want = truth(sim, "UTC");
    expect(rows.map((r) => [r[0], r[4]]).sort()).toEqual(
      [...want.keys()].map((id) => [id, "2026-03"]).sort(),
    );
    for (const row of rows) {
      expect(row).toHaveLength(12);
      const month =
        byPeriod(want.get(row[0] ?? "") ?? new Map(), (d) => d.slice(0, 7)).get("2026-03") ?? {};
      KEYS.forEach((key, i) => {
        const expected = month[key];
        if (expected === undefined) expect(row[5 + i]).toBe("");
        else expect(Number(row[5 + i])).toBeCloseTo(expected, 2);
      });
    }
  });

  // in this process (a terminal's stdout), the only runs here that query influxd: no stale socket
  it("on a terminal: bar charts of Unicode blocks, no line wider than the terminal", async () => {
    for (const columns of [60, 100, 160]) {
      const io = bufferIo(env);
      asTerminal(io.stdout, columns);
      const code = await runCli(["--config", configFile, "report", "--from", FROM, "--to", TO], io);
      expect([code, io.err()]).toEqual([0, ""]);
      const lines = io.out().trimEnd().split("\n");
      const bars = lines.filter((l) => /[█▉▊▋▌▍▎▏]/.test(l));
      // 4 days of the fleet's production, 3 ranked sites
      expect(bars.length).toBe(4 + 3);
      for (const line of lines) expect([...line].length).toBeLessThanOrEqual(columns);
      // the largest bar reaches the figure at the right edge's side: the width is used
      const longest = Math.max(...bars.map((l) => (l.match(/█+/)?.[0] ?? "").length));
      expect(longest).toBeGreaterThan(columns / 4);
      expect(io.out()).toContain("Hybrid roof");
    }
  });

  it("| head -1: exits 0 with no stack trace, 8 runs", async () => {
    const args = ["--config", configFile, "report", "--from", FROM, "--to", TO, "--by", "day"];
    const runs = await inBatches(8, 4, () =>
      headOne(builtCli(), args, { ...process.env, ...env }, NO_ENV_DIR),
    );
    for (const { code, stderr, seen } of runs) {
      expect({ code, stackTrace: looksLikeStackTrace(stderr) }).toEqual({
        code: 0,
        stackTrace: false,
      });
      expect(seen.startsWith("device_id\tname\t")).toBe(true);
    }
  }, 120_000);

  it("ROLLUP_BUCKET=<database>/rollups: the report reads the rollups' own retention policy", async () => {
    const own = await createTestInfluxDb("cli_report_rp");
    await influxql(
      own.rawUrl,
      own.bucket,
      `CREATE RETENTION POLICY "rollups" ON "${own.bucket}" DURATION INF REPLICATION 1 SHARD DURATION 52w`,
    );
    const ownEnv = {
      ...pipelineEnv(sim, own, tempStateDb(), { LOG_LEVEL: "warn", ROLLUP_TIME_ZONES: "UTC" }),
      ROLLUP_BUCKET: `${own.bucket}/rollups`,
    };
    const [from, to] = ["2026-03-28T00:00:00Z", "2026-03-28T23:59:59Z"];
    const backfill = await run(
      ownEnv,
      "backfill",
      "--device",
      "hybrid-site-01",
      "--from",
      from,
      "--to",
      to,
    );
    expect([backfill.code, backfill.err]).toEqual([0, ""]);
    // none beside the raw points: a report that read there would find nothing
    expect(await own.series(`SELECT count("increase") FROM "rollup_day"`)).toEqual([]);
    const { code, out } = await run(ownEnv, "report", "--from", from, "--to", to, "--json");
    expect(code).toBe(0);
    const got = reportSchema.parse(JSON.parse(out));
    const want = oracle(sim, "UTC", Date.parse(from) / 1000, Date.parse(to) / 1000).get(
      "hybrid-site-01",
    );
    const site = got.sites.find((s) => s.deviceId === "hybrid-site-01");
    expect(site?.total.produced).toBeCloseTo(want?.get("2026-03-28")?.produced ?? Number.NaN, 6);
    expect(site?.total.produced).toBeGreaterThan(0);
  }, 120_000);
});
