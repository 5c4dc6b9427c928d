/**
 * doctor's kWp check (#42) when it cannot compare: rows of the peaks in another shape (a solar
 * power point without its `unit` tag) are counted and warned, never an ok that compared nothing;
 * and a read InfluxDB refuses names the credentials in use. Points written straight to the run's
 * influxd; the expected figures are worked out here from what was written.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { SITES_KWP, siteChecks } from "../../src/cli/doctor/site-checks.js";
import { loadConfig } from "../../src/config.js";
import { dropTestDb, writeRawLines } from "../support/bad-data.js";
import { createTestInfluxDb, type TestInfluxDb } from "../support/influx-db.js";
import { tempDir } from "../support/temp-dir.js";

const NOW_MS = Date.UTC(2026, 5, 15, 12);
const HOUR_AGO_S = NOW_MS / 1000 - 3600;

let db: TestInfluxDb;
const dir = tempDir("energy-etl-doctor-sites-");
const config = (env: Record<string, string>) => {
  const file = join(dir, "sites.json");
  writeFileSync(
    file,
    JSON.stringify({ sites: { "roof-bare": { kwp: 9.8 }, "roof-ok": { kwp: 9.8 } } }),
  );
  return loadConfig({ env: { INFLUX_BUCKET: db.bucket, ...env }, file });
};

beforeAll(async () => {
  db = await createTestInfluxDb("doctor_sites");
  await writeRawLines(db, [
    // as energy-etl writes it: fits 9.8 kWp
    `total_solar_power,device_id=roof-ok,unit=kW value=8.1 ${HOUR_AGO_S}`,
    // no unit tag: its peak cannot be put in kW
    `total_solar_power,device_id=roof-bare value=8100 ${HOUR_AGO_S}`,
  ]);
});
afterAll(() => dropTestDb(db));

describe("doctor's kWp check when it cannot compare", () => {
  it("a row without the unit is counted and warned, naming the shape; never ok for it", async () => {
    const checked = config({ INFLUX_URL: db.url, INFLUX_TOKEN: db.token, INFLUX_ORG: db.org });
    const results = await siteChecks(checked, true, NOW_MS);
    expect(results).toEqual([
      {
        check: SITES_KWP,
        status: "warning",
        detail:
          `1 row(s) of "total_solar_power"'s peaks are not [time, max of "value" (a number), ` +
          `"device_id", "unit" (W, kW or MW)] (the first: ["2026-06-15T11:00:00Z",8100,"roof-bare",null]): ` +
          "their devices' kWp was not compared",
        fix:
          'each "total_solar_power" point needs a number field "value" and the tags "device_id" ' +
          'and "unit" (W, kW or MW), as energy-etl writes it',
      },
    ]);
  });

  it("a read refused on a 1.x user names INFLUX_USERNAME and INFLUX_PASSWORD, not the token", async () => {
    // the tests' v2 proxy takes only its token on /query: a user is refused (401)
    const results = await siteChecks(
      config({ INFLUX_URL: db.url, INFLUX_USERNAME: "etl", INFLUX_PASSWORD: "pw-3d9a" }),
      true,
      NOW_MS,
    );
    expect(results).toEqual([
      expect.objectContaining({
        check: SITES_KWP,
        status: "warning",
        fix: "check that INFLUX_USERNAME and INFLUX_PASSWORD may read INFLUX_BUCKET",
      }),
    ]);
    expect(JSON.stringify(results)).not.toContain("pw-3d9a");
  });
});
