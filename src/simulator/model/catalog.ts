/** Device definitions: the values every kind lists, and each kind's own (from readouts/). */
import { COMMON_VALUE_IDS } from "../../api/common-values.js";
import { alarmName } from "./alarms.js";
import { max, roundTo } from "./num.js";
import { type DeviceKind, type SiteProfile, siteProfile } from "./profiles.js";
import { auditValues } from "./readouts/audit-box.js";
import { at, dtH, type ReadoutContext } from "./readouts/context.js";
import {
  batterySoc,
  batteryValues,
  gensetValues,
  gridValues,
  weatherValues,
} from "./readouts/hybrid.js";
import { inverterValues } from "./readouts/inverter.js";
import { pumpValues } from "./readouts/pump.js";
import { subKey, unit2 } from "./rng.js";
import type { DayFrame } from "./site-physics.js";
import { counter, sampled, type ValueDef } from "./values.js";

export const ALL_DATA = "all_data";

/** Meta values listed in every resource: the first four of COMMON_VALUE_IDS. */
export const META_VALUE_IDS: readonly string[] = COMMON_VALUE_IDS.slice(0, 4);

const PROTOCOL_IDS: Record<DeviceKind, number> = {
  hybrid: 12,
  offgrid: 7,
  auditbox: 31,
  gridtied: 4,
};

export interface ResourceDef {
  readonly id: string;
  readonly valueIds: readonly string[];
}

export interface DeviceCatalog {
  readonly profile: SiteProfile;
  /** Computable values (every listed id except values_id). */
  readonly defs: readonly ValueDef[];
  readonly resources: readonly ResourceDef[];
}

/** The values of COMMON_VALUE_IDS (values_id aside), in its order. */
function commonValues(ctx: ReadoutContext): ValueDef[] {
  const k = subKey(ctx.deviceKey, "multipliers");
  const money = roundTo(0.12 + 0.13 * unit2(k, 1), 3);
  const revenue = roundTo(0.05 + 0.05 * unit2(k, 2), 3);
  const co2 = roundTo(0.4 + 0.3 * unit2(k, 3), 3);
  const trees = roundTo(0.015 + 0.005 * unit2(k, 4), 4);
  const solarKwh = (f: DayFrame, i: number): number => at(f.solar, i) * dtH(f);
  const protocolId = PROTOCOL_IDS[ctx.kind];
  return [
    sampled("protocol_id", () => protocolId),
    sampled("alarm_index", (f, i) => at(f.alarm, i) || null),
    sampled("alarm_name", (f, i) => alarmName(at(f.alarm, i))),
    counter("e_03_07_04_000_total_solar_energy", solarKwh),
    counter("e_03_07_04_000_total_load_energy", (f, i) => at(f.load, i) * dtH(f)),
    counter("e_03_07_04_000_total_battery_energy", (f, i) => max(0, at(f.battery, i)) * dtH(f)),
    counter("e_03_07_04_000_genset_energy", (f, i) => at(f.genset, i) * dtH(f)),
    counter("e_03_07_04_000_total_export_energy", (f, i) => max(0, -at(f.other, i)) * dtH(f)),
    counter("e_03_07_04_000_total_other_energy", (f, i) => max(0, at(f.other, i)) * dtH(f)),
    sampled("e_03_01_00_000_total_solar_power", (f, i) => at(f.solar, i)),
    sampled("e_03_01_00_000_total_load_power", (f, i) => at(f.load, i)),
    sampled("e_03_01_00_000_total_battery_power", (f, i) => at(f.battery, i)),
    sampled("e_03_01_00_000_genset_power", (f, i) => at(f.genset, i)),
    sampled("e_03_01_00_000_total_other_power", (f, i) => at(f.other, i)),
    counter("e_00_00_04_000_money_saved", (f, i) => solarKwh(f, i) * money),
    counter("e_00_00_04_000_revenue_created", (f, i) => solarKwh(f, i) * revenue),
    counter("e_03_23_04_000_CO2_saved", (f, i) => solarKwh(f, i) * co2),
    counter("e_00_00_04_000_trees_saved", (f, i) => solarKwh(f, i) * trees),
    sampled("e_00_00_00_000_money_per_kWh", () => money),
    sampled("e_00_00_00_000_revenue_per_kWh", () => revenue),
    sampled("e_00_00_00_000_CO2_saved_per_kWh", () => co2),
    sampled("e_00_00_00_000_trees_saved_per_kWh", () => trees),
  ];
}

function specificValues(ctx: ReadoutContext): ValueDef[] {
  switch (ctx.kind) {
    case "hybrid":
      return [
        ...inverterValues(ctx, 3),
        ...batteryValues(ctx),
        ...gridValues(ctx),
        ...weatherValues(ctx),
        ...gensetValues(ctx),
      ];
    case "offgrid":
      return [batterySoc(), ...pumpValues(ctx)];
    case "auditbox":
      return auditValues(ctx);
    case "gridtied":
      return inverterValues(ctx, 1);
  }
}

export function buildCatalog(kind: DeviceKind, deviceKey: number): DeviceCatalog {
  const profile = siteProfile(kind, deviceKey);
  const ctx: ReadoutContext = { kind, deviceKey, profile, key: (id) => subKey(deviceKey, id) };
  const defs = [...commonValues(ctx), ...specificValues(ctx)];
  const all = ["values_id", ...defs.map((d) => d.id)];
  const resources: ResourceDef[] = [{ id: ALL_DATA, valueIds: all }];
  if (kind === "hybrid") {
    const battery = defs.filter((d) => d.readout === 2).map((d) => d.id);
    resources.push({ id: "battery_bank", valueIds: [...META_VALUE_IDS, ...battery] });
  }
  return { profile, defs, resources };
}
