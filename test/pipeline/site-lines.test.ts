/** The `site` points and the specific-yield fields of solar day rollups, as line protocol. */
import { siteLines } from "../../src/pipeline/site-lines.js";
import { dayLine } from "../../src/rollups/rollup-lines.js";

const HOUR_S = 3600;
/** 15 June 2026 10:37:12 UTC. */
const NOW_S = Date.UTC(2026, 5, 15, 10, 37, 12) / 1000;

describe("site points", () => {
  it("one per device of the run, stamped with the UTC hour; name defaults to the id, kwp to 0", () => {
    const sites = {
      "hybrid-site-01": { kwp: 9.8, name: 'Farm "north"', group: "north, east" },
      "site A+1": { name: "Roof" },
    };
    const hourS = Date.UTC(2026, 5, 15, 10) / 1000;
    expect(
      siteLines(["hybrid-site-01", "site A+1", "audit-box-03", "site A+1"], sites, NOW_S),
    ).toEqual([
      `site,device_id=hybrid-site-01,group=north\\,\\ east kwp=9.8,name="Farm \\"north\\"" ${hourS}`,
      `site,device_id=site\\ A+1 kwp=0,name="Roof" ${hourS}`,
      `site,device_id=audit-box-03 kwp=0,name="audit-box-03" ${hourS}`,
    ]);
    // every run of the hour writes the same point (idempotent); the next hour a new one
    expect(siteLines(["site A+1"], sites, NOW_S + 1000)).toEqual(
      siteLines(["site A+1"], sites, NOW_S),
    );
    expect(siteLines(["site A+1"], sites, NOW_S + HOUR_S)[0]).toMatch(/ 1781521200$/);
  });

  it("none while no site is configured", () => {
    expect(siteLines(["hybrid-site-01"], {}, NOW_S)).toEqual([]);
  });
});

describe("solar day rollups carry kwp and kwh_per_kwp", () => {
  const target = { deviceId: "hybrid-site-01", resourceId: "all_data", counters: [] };
  const series = (measurement: string, unit: string) => ({
    measurement,
    unit,
    type: "cumulative",
    valuesId: "000",
  });
  const dayS = Date.UTC(2026, 5, 14) / 1000;
  const head = (m: string, unit: string) =>
    `rollup_day,device_id=hybrid-site-01,measurement=${m},resource_id=all_data,type=cumulative,tz=UTC,unit=${unit},values_id=000`;

  it("with a kWp: the day's increase over it; without: kwp=0; other counters: neither", () => {
    const solar = { series: series("total_solar_energy", "kWh"), startS: dayS, increase: 24.5 };
    expect(dayLine(target, "UTC", solar, 9.8)).toBe(
      `${head("total_solar_energy", "kWh")} increase=24.5,kwp=9.8,kwh_per_kwp=2.5,month="2026-06",year="2026" ${dayS}`,
    );
    expect(dayLine(target, "UTC", solar)).toBe(
      `${head("total_solar_energy", "kWh")} increase=24.5,kwp=0,month="2026-06",year="2026" ${dayS}`,
    );
    const load = { series: series("total_load_energy", "kWh"), startS: dayS, increase: 7 };
    expect(dayLine(target, "UTC", load, 9.8)).toBe(
      `${head("total_load_energy", "kWh")} increase=7,month="2026-06",year="2026" ${dayS}`,
    );
    // a solar counter in Wh is not the spec's kWh counter: no yield fields
    const wh = { series: series("total_solar_energy", "Wh"), startS: dayS, increase: 7 };
    expect(dayLine(target, "UTC", wh, 9.8)).not.toMatch(/kwp/);
  });
});
