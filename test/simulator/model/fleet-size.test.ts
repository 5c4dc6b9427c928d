import {
  BUILT_DEVICE_LIMIT,
  COMMISSIONED_AT_S,
  COMMON_VALUE_IDS,
  createFleet,
  DEFAULT_DEVICES,
  NEW_VALUE_SPREAD_S,
} from "../../../src/simulator/model/fleet.js";
import { dayStart, requestable } from "./helpers.js";

const DEFAULT_IDS = DEFAULT_DEVICES.map((d) => d.id);
const SOLAR = "e_03_01_00_000_total_solar_power";

describe("a fleet of N devices", () => {
  it("lists the default devices first, then site-00005 … in sorting order", () => {
    const ids = createFleet({ seed: 1, devices: 300 }).deviceIds();
    expect(ids).toHaveLength(300);
    expect(ids.slice(0, 4)).toEqual(DEFAULT_IDS);
    expect(ids.slice(4, 6)).toEqual(["site-00005", "site-00006"]);
    expect(ids[299]).toBe("site-00300");
    const generated = ids.slice(4);
    expect([...generated].sort()).toEqual(generated);
    expect(new Set(ids).size).toBe(300);
  });

  it("keeps the first N default devices when N < 4, and 4 by default", () => {
    expect(createFleet({ seed: 1, devices: 2 }).deviceIds()).toEqual(DEFAULT_IDS.slice(0, 2));
    expect(createFleet({ seed: 1 }).deviceIds()).toEqual(DEFAULT_IDS);
    const fleet = createFleet({ seed: 1, devices: 2 });
    expect(fleet.hasDevice("audit-box-03")).toBe(false);
    expect(fleet.resourceIds("audit-box-03")).toBeUndefined();
  });

  it("pads ids to six digits for 100 000 devices", () => {
    const fleet = createFleet({ seed: 1, devices: 100_000 });
    const ids = fleet.deviceIds();
    expect(ids[4]).toBe("site-000005");
    expect(ids[99_999]).toBe("site-100000");
    expect(fleet.hasDevice("site-00005")).toBe(false);
    expect(fleet.builtDevices()).toBe(0);
  });

  it.each([0, -1, 2.5, Number.NaN])("refuses %p devices", (devices) => {
    expect(() => createFleet({ seed: 1, devices })).toThrow(RangeError);
  });

  it("knows only its own ids", () => {
    const fleet = createFleet({ seed: 1, devices: 50 });
    for (const id of ["site-00051", "site-0050", "site-00004", "site-000050", "site-0005x"]) {
      expect(fleet.hasDevice(id)).toBe(false);
      expect(fleet.kindOf(id)).toBeUndefined();
    }
    expect(fleet.hasDevice("site-00050")).toBe(true);
  });

  it("derives kinds and value lists from the seed", () => {
    const a = createFleet({ seed: 3, devices: 200 });
    const b = createFleet({ seed: 3, devices: 200 });
    const c = createFleet({ seed: 4, devices: 200 });
    const ids = a.deviceIds();
    expect(b.deviceIds()).toEqual(ids);
    expect(c.deviceIds()).toEqual(ids);
    expect(ids.map((id) => b.kindOf(id))).toEqual(ids.map((id) => a.kindOf(id)));
    expect(ids.map((id) => c.kindOf(id))).not.toEqual(ids.map((id) => a.kindOf(id)));
    for (const id of ids.slice(4, 40)) {
      expect(b.resourceIds(id)).toEqual(a.resourceIds(id));
      expect(b.valueIds(id, "all_data")).toEqual(a.valueIds(id, "all_data"));
    }
    // the id, not the fleet size, picks a device's make-up
    const bigger = createFleet({ seed: 3, devices: 400 });
    expect(bigger.valueIds("site-00077", "all_data")).toEqual(a.valueIds("site-00077", "all_data"));
  });

  describe("the generated devices", () => {
    const fleet = createFleet({ seed: 1, devices: 404 });
    const generated = fleet.deviceIds().slice(4);

    it("list 20 to 90 values each, the common ones included, without repeats", () => {
      for (const id of generated) {
        const ids = requestable(fleet, id);
        expect(ids.length).toBeGreaterThanOrEqual(20);
        expect(ids.length).toBeLessThanOrEqual(90);
        expect(new Set(ids).size).toBe(ids.length);
        const listed = fleet.valueIds(id, "all_data") ?? [];
        expect(listed[0]).toBe("values_id");
        for (const common of COMMON_VALUE_IDS) expect(listed).toContain(common);
      }
    });

    it("mix every kind, some with a second resource that all_data lists too", () => {
      const kinds = new Set(generated.map((id) => fleet.kindOf(id)));
      expect([...kinds].sort()).toEqual(["auditbox", "gridtied", "hybrid", "offgrid"]);
      const seconds = new Set<string>();
      for (const id of generated) {
        const [all, second, ...more] = fleet.resourceIds(id) ?? [];
        expect(all).toBe("all_data");
        expect(more).toEqual([]);
        if (second === undefined) continue;
        seconds.add(second);
        const listed = fleet.valueIds(id, "all_data") ?? [];
        for (const v of fleet.valueIds(id, second) ?? []) expect(listed).toContain(v);
      }
      expect([...seconds].sort()).toEqual(["battery_bank", "sensor_board"]);
      const counts = generated.map((id) => requestable(fleet, id).length);
      expect(Math.min(...counts)).toBeLessThan(30);
      expect(Math.max(...counts)).toBeGreaterThan(80);
    });

    it("serve every listed value, extra sensors with valid codes included", () => {
      const hybrid = generated.find((id) => requestable(fleet, id).length > 80) ?? "";
      const ids = requestable(fleet, hybrid);
      for (let k = 0; k < ids.length; k += 20) {
        const chunk = ids.slice(k, k + 20);
        const rows = fleet.records(hybrid, "all_data", chunk, dayStart(3), dayStart(3) + 600);
        for (const id of chunk.filter((v) => !v.startsWith("alarm_"))) {
          expect(rows.some((r) => r[id] !== null)).toBe(true);
        }
      }
      const extras = ids.filter((id) => /^e_\d\d_\d\d_\d\d_00[678]_/.test(id));
      expect(extras.length).toBeGreaterThan(0);
      for (const id of extras) expect(id).toMatch(/^e_0[0-3]_([0-2]\d|30)_0[0-6]_00[678]_[a-z_]+$/);
    });

    it("give counters of extra sensors a day total", () => {
      const id = generated.find((d) => requestable(fleet, d).some((v) => /_04_00[678]_/.test(v)));
      const counter = requestable(fleet, id ?? "").find((v) => /_04_00[678]_/.test(v)) ?? "";
      expect(fleet.dayEnergyKwh(id ?? "", counter, dayStart(2))).toBeGreaterThan(0);
    });
  });

  it("leaves the default devices as they are", () => {
    const plain = createFleet({ seed: 7 });
    const large = createFleet({ seed: 7, devices: 2_000 });
    for (const id of DEFAULT_IDS) {
      expect(large.resourceIds(id)).toEqual(plain.resourceIds(id));
      for (const r of plain.resourceIds(id) ?? []) {
        expect(large.valueIds(id, r)).toEqual(plain.valueIds(id, r));
      }
      const ids = requestable(plain, id).slice(0, 20);
      expect(large.records(id, "all_data", ids, dayStart(40), dayStart(40) + 1800)).toEqual(
        plain.records(id, "all_data", ids, dayStart(40), dayStart(40) + 1800),
      );
    }
    expect(plain.scheduledValues()).toEqual([]);
  });

  it("gives generated devices data of their own", () => {
    const fleet = createFleet({ seed: 7, devices: 30 });
    const curves = fleet
      .deviceIds()
      .slice(4)
      .map((id) =>
        JSON.stringify(
          fleet.records(id, "all_data", [SOLAR], dayStart(3), dayStart(4)).map((r) => r[SOLAR]),
        ),
      );
    expect(new Set(curves).size).toBe(curves.length);
  });
});

describe("lazy devices", () => {
  it("builds no device to list ids, kinds and the schedule", () => {
    const fleet = createFleet({ seed: 1, devices: 5_000 });
    expect(fleet.deviceIds()).toHaveLength(5_000);
    expect(fleet.kindOf("site-04321")).toBeDefined();
    expect(fleet.hasDevice("site-05000")).toBe(true);
    expect(fleet.scheduledValues().length).toBeGreaterThan(0);
    expect(fleet.builtDevices()).toBe(0);
    fleet.resourceIds("site-04321");
    expect(fleet.builtDevices()).toBe(1);
  });

  it("holds at most BUILT_DEVICE_LIMIT devices after a walk over all, and rebuilds the same", () => {
    const fleet = createFleet({ seed: 1, devices: 5_000 });
    const first = "site-00005";
    const before = fleet.records(first, "all_data", [SOLAR], dayStart(1), dayStart(1) + 3600);
    const listed = fleet.valueIds(first, "all_data");
    fleet.addValue(first, "all_data", "e_00_04_00_012_probe_temperature");
    for (const id of fleet.deviceIds()) fleet.resourceIds(id);
    expect(fleet.builtDevices()).toBe(BUILT_DEVICE_LIMIT);
    expect(fleet.valueIds(first, "all_data")).toEqual([
      ...(listed ?? []),
      "e_00_04_00_012_probe_temperature",
    ]);
    expect(fleet.records(first, "all_data", [SOLAR], dayStart(1), dayStart(1) + 3600)).toEqual(
      before,
    );
  });
});

describe("value ids that appear later", () => {
  it("schedules a seeded ~2 % of the generated devices, spread over 7 days", () => {
    const fromS = Date.UTC(2026, 5, 1) / 1000;
    const fleet = createFleet({ seed: 1, devices: 5_000, newValuesFromS: fromS });
    const scheduled = fleet.scheduledValues();
    expect(scheduled.length).toBeGreaterThan(60);
    expect(scheduled.length).toBeLessThan(140);
    expect(new Set(scheduled.map((s) => s.deviceId)).size).toBe(scheduled.length);
    for (const s of scheduled) {
      expect(s.atS).toBeGreaterThanOrEqual(fromS);
      expect(s.atS).toBeLessThan(fromS + NEW_VALUE_SPREAD_S);
      expect(DEFAULT_IDS).not.toContain(s.deviceId);
    }
    expect(scheduled.map((s) => s.atS)).toEqual([...scheduled.map((s) => s.atS)].sort());
    expect(
      createFleet({ seed: 1, devices: 5_000, newValuesFromS: fromS }).scheduledValues(),
    ).toEqual(scheduled);
  });

  it("gives a small fleet at least one, and none with share 0 or without generated devices", () => {
    expect(createFleet({ seed: 1, devices: 5 }).scheduledValues()).toHaveLength(1);
    expect(createFleet({ seed: 1, devices: 50, newValueShare: 0 }).scheduledValues()).toEqual([]);
    expect(createFleet({ seed: 1, devices: 4, newValueShare: 1 }).scheduledValues()).toEqual([]);
    expect(createFleet({ seed: 1, devices: 50, newValueShare: 1 }).scheduledValues()).toHaveLength(
      46,
    );
    expect(() => createFleet({ seed: 1, newValueShare: 1.5 })).toThrow(RangeError);
  });

  it("lists a seeded new value from its time on, with history back to commissioning", () => {
    const fleet = createFleet({ seed: 2, devices: 300 });
    for (const s of fleet.scheduledValues()) {
      for (const r of new Set([s.resourceId, "all_data"])) {
        expect(fleet.valueIds(s.deviceId, r, s.atS - 1)).not.toContain(s.valueId);
        expect(fleet.valueIds(s.deviceId, r, s.atS)).toContain(s.valueId);
        expect(fleet.valueIds(s.deviceId, r)).toContain(s.valueId);
      }
    }
    const [s] = fleet.scheduledValues();
    const rows = fleet.records(s?.deviceId ?? "", "all_data", [s?.valueId ?? ""], 0, dayStart(0));
    expect(rows[0]?.timestamp).toBe("2025-01-01T00:00:00");
    expect(rows[0]?.[s?.valueId ?? ""]).not.toBeNull();
  });

  it("schedules a value by hand, in a new resource too, and keeps it over a rebuild", () => {
    const fleet = createFleet({ seed: 1, devices: 1_000, newValueShare: 0 });
    const atS = COMMISSIONED_AT_S + 400 * 86_400;
    const id = "e_00_04_00_010_inlet_temperature";
    fleet.scheduleValue("site-00020", "all_data", id, atS);
    fleet.scheduleValue("hybrid-site-01", "probes", id, atS + 60);
    expect(fleet.scheduledValues()).toEqual([
      { deviceId: "site-00020", resourceId: "all_data", valueId: id, atS },
      { deviceId: "hybrid-site-01", resourceId: "probes", valueId: id, atS: atS + 60 },
    ]);
    for (const d of fleet.deviceIds()) fleet.resourceIds(d);
    expect(fleet.valueIds("site-00020", "all_data", atS - 1)).not.toContain(id);
    expect(fleet.valueIds("site-00020", "all_data", atS)).toContain(id);
    expect(fleet.resourceIds("hybrid-site-01", atS)).not.toContain("probes");
    expect(fleet.valueIds("hybrid-site-01", "probes", atS)).toBeUndefined();
    expect(fleet.resourceIds("hybrid-site-01", atS + 60)).toContain("probes");
    expect(fleet.valueIds("hybrid-site-01", "probes", atS + 60)).toContain(id);
    expect(fleet.resourceIds("hybrid-site-01")).toContain("probes");
  });

  it("refuses to schedule a listed value, values_id or an unknown device", () => {
    const fleet = createFleet({ seed: 1, devices: 10 });
    expect(() => fleet.scheduleValue("site-00005", "all_data", SOLAR, 0)).toThrow(/already/);
    expect(() => fleet.scheduleValue("site-00005", "all_data", "values_id", 0)).toThrow();
    expect(() => fleet.scheduleValue("site-00011", "all_data", "e_00_04_00_010_x", 0)).toThrow(
      /unknown device/,
    );
  });
});
