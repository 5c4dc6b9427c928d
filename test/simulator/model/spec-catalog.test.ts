import { COMMON_VALUE_IDS } from "../../../src/api/common-values.js";
import { createFleet, SPEC_EXTRA_VALUES } from "../../../src/simulator/model/fleet.js";
import { codedShape, idShape } from "../../support/schema-oracle.js";

const DAY = Date.UTC(2026, 5, 13) / 1000;
const SPEC_NAMES = new Set(COMMON_VALUE_IDS.map((id) => idShape(id)?.measurement));

describe('catalog: "spec"', () => {
  const spec = createFleet({ seed: 1, devices: 7, newValueShare: 0, catalog: "spec" });
  const own = createFleet({ seed: 1, devices: 7, newValueShare: 0 });

  // newValueShare 0: no seeded sensor appears later (it would add a resource of its own).
  it("lists only the spec's value ids plus a few seeded coded ids with names the spec does not know", () => {
    const extras = new Set<string>();
    for (const id of spec.deviceIds()) {
      expect([id, spec.resourceIds(id)]).toEqual([id, ["all_data"]]);
      const listed = spec.valueIds(id, "all_data") ?? [];
      expect(listed.slice(0, COMMON_VALUE_IDS.length)).toEqual(COMMON_VALUE_IDS);
      const extra = listed.slice(COMMON_VALUE_IDS.length);
      expect(extra).toHaveLength(SPEC_EXTRA_VALUES);
      for (const x of extra) {
        // a coded id of spec 2.3 whose codes are all in its tables, its name not the spec's
        const d = codedShape(x);
        expect([x, d?.known, SPEC_NAMES.has(d?.measurement)]).toEqual([x, true, false]);
        extras.add(x);
      }
    }
    // Seeded per device: not the same three everywhere.
    expect(extras.size).toBeGreaterThan(SPEC_EXTRA_VALUES);
    // Deterministic.
    const again = createFleet({ seed: 1, devices: 7, newValueShare: 0, catalog: "spec" });
    expect(again.valueIds("site-00006", "all_data")).toEqual(
      spec.valueIds("site-00006", "all_data"),
    );
  });

  it("the spec's values are the kind's own (same records and day totals as the default catalog)", () => {
    for (const id of ["hybrid-site-01", "site A+1", "site-00005"]) {
      const ids = spec.valueIds(id, "all_data") ?? [];
      const common = ids.filter((v) => COMMON_VALUE_IDS.includes(v));
      const from = DAY + 12 * 3600;
      expect(spec.records(id, "all_data", common, from, from + 600)).toEqual(
        own.records(id, "all_data", common, from, from + 600),
      );
      const solar = "e_03_07_04_000_total_solar_energy";
      expect(spec.dayEnergyKwh(id, solar, DAY)).toBe(own.dayEnergyKwh(id, solar, DAY));
      // The extra ids have records too (generic generators by unit and type).
      const rows = spec.records(id, "all_data", ids, from, from + 600);
      for (const x of ids.slice(COMMON_VALUE_IDS.length)) {
        expect(rows.some((r) => r[x] !== undefined && r[x] !== null)).toBe(true);
      }
    }
  });

  it("the default catalog is unchanged by the option", () => {
    const explicit = createFleet({ seed: 1, devices: 7, newValueShare: 0, catalog: "default" });
    for (const id of own.deviceIds()) {
      for (const r of own.resourceIds(id) ?? []) {
        expect(explicit.valueIds(id, r)).toEqual(own.valueIds(id, r));
      }
    }
  });
});
