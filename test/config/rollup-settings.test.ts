/**
 * ROLLUP_TIME_ZONES by canonical name (one `tz` tag per zone, whatever the spelling and the
 * Node), and ROLLUP_BUCKET (`<database>/<retention policy>` on INFLUX_BUCKET's database): what
 * they become, and each refusal as one line naming the setting, exit 2.
 */
import { runCli } from "../../src/cli.js";
import { RENAMED_ZONES } from "../../src/config/time-zones.js";
import { ConfigError, loadConfig } from "../../src/config.js";
import { bufferIo } from "../support/cli-io.js";

/** The configuration's value of ROLLUP_TIME_ZONES for `zones`. */
const zonesOf = (zones: string): string =>
  loadConfig({ env: { ROLLUP_TIME_ZONES: zones } }).rollups.timeZones;

/** The one issue of a refused configuration (one line: `invalid configuration: <issue>`). */
function refusal(env: Record<string, string>): string {
  try {
    loadConfig({ env });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    const lines = (error as Error).message.split("\n");
    expect(lines).toHaveLength(1);
    return (lines[0] ?? "").replace(/^invalid configuration: /, "");
  }
  throw new Error(`expected ${JSON.stringify(env)} to be refused`);
}

/** The zone Node's Intl resolves `name` to. */
const intlZone = (name: string): string =>
  new Intl.DateTimeFormat("en-US", { timeZone: name }).resolvedOptions().timeZone;

describe("ROLLUP_TIME_ZONES", () => {
  it.each([
    ["utc", "UTC"],
    ["europe/berlin", "Europe/Berlin"],
    ["AMERICA/NEW_YORK", "America/New_York"],
    [" utc , Europe/Berlin ", "UTC,Europe/Berlin"],
    ["america/port-au-prince", "America/Port-au-Prince"],
    // Intl knows it but does not list it: as Intl spells it
    ["etc/gmt+5", "Etc/GMT+5"],
    // the names of UTC
    ["Etc/UTC", "UTC"],
    ["GMT", "UTC"],
    ["etc/gmt", "UTC"],
    ["Zulu", "UTC"],
  ])("takes %j as %j", (given, canonical) => {
    expect(zonesOf(given)).toBe(canonical);
  });

  it("writes a renamed zone by its current IANA name, however this Node's ICU lists it", () => {
    for (const spelling of ["Asia/Calcutta", "Asia/Kolkata", "asia/kolkata", "ASIA/CALCUTTA"]) {
      expect(zonesOf(spelling)).toBe("Asia/Kolkata");
    }
    expect(zonesOf("Europe/Kiev,europe/kyiv")).toBe("Europe/Kyiv");
    // each pair is one zone, and this Node lists one of its names
    const listed = new Set(Intl.supportedValuesOf("timeZone"));
    for (const [former, current] of Object.entries(RENAMED_ZONES)) {
      expect({ former, current, same: intlZone(former) === intlZone(current) }).toEqual({
        former,
        current,
        same: true,
      });
      expect({ former, listed: listed.has(former) || listed.has(current) }).toEqual({
        former,
        listed: true,
      });
      expect(zonesOf(former)).toBe(current);
    }
  });

  it("drops a zone given again after canonicalisation, keeping the first place", () => {
    expect(zonesOf("utc,UTC,Etc/UTC,europe/berlin,Europe/Berlin,Asia/Calcutta,Asia/Kolkata")).toBe(
      "UTC,Europe/Berlin,Asia/Kolkata",
    );
  });

  it.each([
    ["Mars/Olympus", "Mars/Olympus is not a time zone (such as Europe/Berlin)"],
    ["UTC,Europe/Brlin", "Europe/Brlin is not a time zone (such as Europe/Berlin)"],
    ["US/Eastern", "US/Eastern is another name of America/New_York: write America/New_York"],
    ["Europe/Belfast", "Europe/Belfast is another name of Europe/London: write Europe/London"],
    [" , ", "must name a time zone"],
  ])("refuses %j, naming it", (given, why) => {
    expect(refusal({ ROLLUP_TIME_ZONES: given })).toBe(
      `ROLLUP_TIME_ZONES (rollups.timeZones, from environment ROLLUP_TIME_ZONES): ${why}`,
    );
  });

  it("an unknown zone stops the program with exit 2 and one line naming it", async () => {
    const io = bufferIo({ ROLLUP_TIME_ZONES: "UTC,Moon/Base" });
    expect(await runCli(["config"], io)).toBe(2);
    expect(io.out()).toBe("");
    expect(io.err()).toMatch(
      /^energy-etl: error: invalid configuration: ROLLUP_TIME_ZONES \(rollups.timeZones, from environment ROLLUP_TIME_ZONES\): Moon\/Base is not a time zone \(such as Europe\/Berlin\)\n/,
    );
  });

  it("`config` shows the zones as they are written", async () => {
    const io = bufferIo({ ROLLUP_TIME_ZONES: "utc, europe/berlin" });
    expect(await runCli(["config", "--sources", "--json"], io)).toBe(0);
    const sources = JSON.parse(io.out()) as { setting: string; value: string }[];
    expect(sources.find((s) => s.setting === "ROLLUP_TIME_ZONES")?.value).toBe("UTC,Europe/Berlin");
  });
});

describe("ROLLUP_BUCKET", () => {
  it("is empty by default (the rollups beside the raw points) and takes <database>/<policy>", () => {
    expect(loadConfig({ env: {} }).rollups.bucket).toBe("");
    expect(loadConfig({ env: { ROLLUP_BUCKET: " energy/rollups " } }).rollups.bucket).toBe(
      "energy/rollups",
    );
    const site = { INFLUX_BUCKET: "site/raw", ROLLUP_BUCKET: "site/rollups" };
    expect(loadConfig({ env: site }).rollups.bucket).toBe("site/rollups");
  });

  const FORM = "must be <database>/<retention policy> such as energy/rollups";
  it.each([
    [{ ROLLUP_BUCKET: "rollups" }, `${FORM} (the / is missing)`],
    [{ ROLLUP_BUCKET: "energy/" }, `${FORM} (the retention policy is empty)`],
    [{ ROLLUP_BUCKET: "/rollups" }, `${FORM} (the database is empty)`],
    [{ ROLLUP_BUCKET: "energy/a/b" }, `${FORM} (energy/a/b has more than one /)`],
    [
      { ROLLUP_BUCKET: "other/rollups" },
      "its database must be INFLUX_BUCKET's (energy, as in energy/rollups), not other: InfluxQL " +
        "reads the raw points and the rollups through one database",
    ],
    [
      { INFLUX_BUCKET: "site/raw", ROLLUP_BUCKET: "energy/rollups" },
      "its database must be INFLUX_BUCKET's (site, as in site/rollups), not energy: InfluxQL " +
        "reads the raw points and the rollups through one database",
    ],
    [
      { INFLUX_BUCKET: "energy/autogen", ROLLUP_BUCKET: "energy/autogen" },
      "is INFLUX_BUCKET itself: leave it empty to keep the rollups beside the raw points",
    ],
  ])("refuses %j with one line naming it", (env, why) => {
    expect(refusal(env)).toBe(
      `ROLLUP_BUCKET (rollups.bucket, from environment ROLLUP_BUCKET): ${why}`,
    );
  });

  it("a database other than INFLUX_BUCKET's stops the program with exit 2 and one line", async () => {
    const io = bufferIo({ ROLLUP_BUCKET: "elsewhere/rollups" });
    expect(await runCli(["config"], io)).toBe(2);
    const lines = io.err().trim().split("\n");
    expect(lines).toEqual([
      expect.stringMatching(
        /^energy-etl: error: invalid configuration: ROLLUP_BUCKET \(rollups.bucket, from environment ROLLUP_BUCKET\): its database must be INFLUX_BUCKET's \(energy, /,
      ),
    ]);
  });
});
