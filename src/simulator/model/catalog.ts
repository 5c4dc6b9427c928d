/** Device definitions: the value ids of each device kind, their readouts and how each is computed. */

import { COMMON_VALUE_IDS } from "../../api/common-values.js";
import { alarmName } from "./alarms.js";
import { abs, clamp, floor, max, PI, round3, roundTo, sin, sqrt } from "./num.js";
import { type DeviceKind, type SiteProfile, siteProfile } from "./profiles.js";
import { smoothNoise, subKey, unit2, wobble } from "./rng.js";
import type { DayFrame } from "./site-physics.js";
import { COMMISSIONED_AT_S, DAY_S } from "./time.js";
import { counter, sampled, type ValueDef } from "./values.js";
import { rainPulses, weatherKeys, windDirection, windSpeed } from "./weather.js";

/** Value ids that spec 2.3 lists as present for every device, in the spec's order. */
export { COMMON_VALUE_IDS };

/** The Audit Box's remaining monitoring credit in days. */
export const DAYS_REMAINING_ID = "e_00_00_00_000_days_remaining";

/** Resource holding every value of a device. */
export const ALL_DATA = "all_data";

/** Meta values listed in every resource. */
export const META_VALUE_IDS: readonly string[] = [
  "values_id",
  "protocol_id",
  "alarm_index",
  "alarm_name",
];

const PROTOCOL_IDS: Record<DeviceKind, number> = {
  hybrid: 12,
  offgrid: 7,
  auditbox: 31,
  gridtied: 4,
};

/** A resource of a device and the value ids it lists. */
export interface ResourceDef {
  readonly id: string;
  readonly valueIds: readonly string[];
}

/** The static definition of one device. */
export interface DeviceCatalog {
  readonly kind: DeviceKind;
  readonly profile: SiteProfile;
  /** Computable values (every listed id except values_id). */
  readonly defs: readonly ValueDef[];
  readonly resources: readonly ResourceDef[];
}

function at(a: ArrayLike<number>, i: number): number {
  return a[i] ?? 0;
}

function dtH(f: DayFrame): number {
  return f.resolutionS / 3600;
}

interface Ctx {
  readonly kind: DeviceKind;
  readonly deviceKey: number;
  readonly profile: SiteProfile;
  key(id: string): number;
}

function commonValues(ctx: Ctx): ValueDef[] {
  const k = subKey(ctx.deviceKey, "multipliers");
  const money = roundTo(0.12 + 0.13 * unit2(k, 1), 3);
  const revenue = roundTo(0.05 + 0.05 * unit2(k, 2), 3);
  const co2 = roundTo(0.4 + 0.3 * unit2(k, 3), 3);
  const trees = roundTo(0.015 + 0.005 * unit2(k, 4), 4);
  const solarKwh = (f: DayFrame, i: number): number => at(f.solar, i) * dtH(f);
  const protocolId = PROTOCOL_IDS[ctx.kind];
  return [
    sampled("protocol_id", () => protocolId),
    sampled("alarm_index", (f, i) => {
      const code = at(f.alarm, i);
      return code === 0 ? null : code;
    }),
    sampled("alarm_name", (f, i) => {
      const code = at(f.alarm, i);
      return code === 0 ? null : alarmName(code);
    }),
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

function inverterMode(ctx: Ctx, f: DayFrame, i: number): string {
  if (ctx.profile.battery !== undefined && at(f.gridUp, i) === 0) return "Backup";
  if (at(f.solar, i) === 0) return "Standby";
  return at(f.clipped, i) === 1 ? "Derating" : "MPPT";
}

const MODE_STATUS: Record<string, number> = { Standby: 1, MPPT: 2, Derating: 3, Backup: 4 };

/** Inverter readout 001 with `phases` AC phases. */
function inverterValues(ctx: Ctx, phases: 1 | 3): ValueDef[] {
  const p = ctx.profile;
  const share1 = subKey(ctx.deviceKey, "inverter.share.L1");
  const share2 = subKey(ctx.deviceKey, "inverter.share.L2");
  const phaseKw = (f: DayFrame, i: number, t: number, phase: number): number => {
    const s = at(f.solar, i);
    if (phases === 1) return s;
    const l1 = round3((s / 3) * (1 + 0.03 * wobble(share1, t, 1800)));
    const l2 = round3((s / 3) * (1 + 0.03 * wobble(share2, t, 1800)));
    return phase === 1 ? l1 : phase === 2 ? l2 : round3(s - l1 - l2);
  };
  const voltKeys = [1, 2, 3].map((n) => subKey(ctx.deviceKey, `inverter.voltage.L${n}`));
  const phaseV = (f: DayFrame, i: number, t: number, phase: number): number => {
    const vk = voltKeys[phase - 1] ?? 0;
    if (at(f.gridUp, i) === 0) return roundTo(230 + 0.4 * wobble(vk, t, 600), 1);
    return roundTo(230.5 + 2.5 * wobble(vk, t, 900) + (0.45 * phaseKw(f, i, t, phase)) / phases, 1);
  };
  const reactiveKey = ctx.key("e_03_15_00_001_AC_reactivepower");
  const reactive = (f: DayFrame, i: number, t: number): number => {
    const s = at(f.solar, i);
    return s === 0 ? 0 : round3(s * (0.09 + 0.04 * wobble(reactiveKey, t, 1800)));
  };
  const apparent = (f: DayFrame, i: number, t: number): number => {
    const s = at(f.solar, i);
    const q = reactive(f, i, t);
    return round3(sqrt(s * s + q * q));
  };
  const tOf = (f: DayFrame, i: number): number => f.firstS + i * f.resolutionS;
  const base = (id: string, lo: number, span: number): number =>
    roundTo(lo + span * unit2(ctx.key(id), 0), 3);
  const names = phases === 3 ? [1, 2, 3] : [1];
  const defs: ValueDef[] = [];
  for (const n of names) {
    defs.push(sampled(`e_00_02_00_001_AC_voltage_L${n}`, (f, i, t) => phaseV(f, i, t, n)));
  }
  for (const n of names) {
    defs.push(
      sampled(`e_00_03_00_001_AC_current_L${n}`, (f, i, t) => {
        const v = phaseV(f, i, t, n);
        return v === 0 ? 0 : roundTo((phaseKw(f, i, t, n) * 1000) / v, 2);
      }),
    );
  }
  for (const n of names) {
    defs.push(sampled(`e_03_01_00_001_AC_activepower_L${n}`, (f, i, t) => phaseKw(f, i, t, n)));
  }
  if (phases === 3) {
    const fk = ctx.key("e_00_06_00_001_AC_frequency");
    const tk = ctx.key("e_00_04_00_001_heatsink_temperature");
    const dk = ctx.key("e_00_02_00_001_DC_string1_voltage");
    defs.push(
      sampled("e_00_06_00_001_AC_frequency", (f, i, t) =>
        roundTo(50 + (at(f.gridUp, i) === 1 ? 0.025 : 0.08) * wobble(fk, t, 300), 2),
      ),
      sampled("e_03_15_00_001_AC_reactivepower", reactive),
      sampled("e_00_09_00_001_AC_apparentpower", (f, i, t) => roundTo(apparent(f, i, t) * 1000, 0)),
      sampled("e_00_04_00_001_heatsink_temperature", (f, i, t) =>
        roundTo(
          at(f.ambient, i) + 4 + (26 * at(f.solar, i)) / p.inverterMaxKw + 0.6 * wobble(tk, t, 900),
          1,
        ),
      ),
      sampled("e_00_02_00_001_DC_string1_voltage", (f, i, t) => {
        const irr = at(f.irradiance, i);
        if (irr < 3) return 0;
        const moduleC = at(f.ambient, i) + irr * 0.028;
        return roundTo(
          590 + 45 * (1 - irr / 1000) - 2.1 * (moduleC - 25) + 2 * wobble(dk, t, 600),
          1,
        );
      }),
    );
  }
  defs.push(
    sampled("e_00_00_03_001_operating_mode", (f, i) => inverterMode(ctx, f, i)),
    sampled("e_00_00_06_001_status_code", (f, i) => {
      const alarm = at(f.alarm, i);
      if (alarm === 301 || alarm === 302) return 9;
      return MODE_STATUS[inverterMode(ctx, f, i)] ?? 0;
    }),
    counter("e_03_07_05_001_energy_today", (f, i) => at(f.solar, i) * dtH(f), { daily: true }),
  );
  if (phases === 3) {
    defs.push(
      counter("e_03_08_04_001_reactive_energy", (f, i) => reactive(f, i, tOf(f, i)) * dtH(f), {
        base: base("e_03_08_04_001_reactive_energy", 800, 1500),
      }),
      counter("e_03_30_04_001_apparent_energy", (f, i) => apparent(f, i, tOf(f, i)) * dtH(f), {
        base: base("e_03_30_04_001_apparent_energy", 9000, 6000),
      }),
    );
  } else {
    defs.push(
      counter("e_02_07_04_001_lifetime_energy", (f, i) => (at(f.solar, i) * dtH(f)) / 1000, {
        base: base("e_02_07_04_001_lifetime_energy", 2, 12),
        output: (sum) => roundTo(sum, 6),
      }),
    );
  }
  return defs;
}

/** Battery readout 002 (hybrid). */
function batteryValues(ctx: Ctx): ValueDef[] {
  const bat = ctx.profile.battery;
  if (bat === undefined) return [];
  const vk = ctx.key("e_00_02_00_002_battery_voltage");
  const tk = ctx.key("e_00_04_00_002_battery_temperature");
  const volts = (f: DayFrame, i: number, t: number): number =>
    roundTo(48 + 6 * at(f.soc, i) - 0.12 * at(f.battery, i) + 0.05 * wobble(vk, t, 600), 2);
  return [
    sampled("e_00_05_00_002_battery_SOC", (f, i) => roundTo(at(f.soc, i) * 100, 1)),
    sampled("e_00_02_00_002_battery_voltage", volts),
    sampled("e_00_03_00_002_battery_current", (f, i, t) =>
      roundTo((at(f.battery, i) * 1000) / volts(f, i, t), 2),
    ),
    sampled("e_00_27_00_002_remaining_capacity", (f, i) =>
      roundTo((at(f.soc, i) * bat.capacityKwh * 1000) / bat.nominalV, 1),
    ),
    sampled("e_00_04_00_002_battery_temperature", (f, i, t) =>
      roundTo(
        17 + 0.35 * at(f.ambient, i) + 0.9 * abs(at(f.battery, i)) + 0.4 * wobble(tk, t, 1800),
        1,
      ),
    ),
    counter("e_03_07_05_002_charge_energy_today", (f, i) => max(0, -at(f.battery, i)) * dtH(f), {
      daily: true,
    }),
    counter("e_03_07_05_002_discharge_energy_today", (f, i) => max(0, at(f.battery, i)) * dtH(f), {
      daily: true,
    }),
    counter(
      "e_00_00_04_002_cycle_count",
      (f, i) => (max(0, at(f.battery, i)) * dtH(f)) / (bat.capacityKwh * (bat.maxSoc - bat.minSoc)),
      { base: roundTo(80 + 120 * unit2(ctx.key("e_00_00_04_002_cycle_count"), 0), 0) },
    ),
  ];
}

/** Grid meter readout 003 (hybrid). */
function gridValues(ctx: Ctx): ValueDef[] {
  const vk = ctx.key("e_00_02_00_003_grid_voltage");
  return [
    sampled("e_03_01_00_003_grid_power", (f, i) => at(f.other, i)),
    sampled("e_00_02_00_003_grid_voltage", (f, i, t) =>
      at(f.gridUp, i) === 0 ? 0 : roundTo(231 + 3 * wobble(vk, t, 1200) - 0.2 * at(f.other, i), 1),
    ),
  ];
}

/** Weather sensor readout 004 (hybrid). */
function weatherValues(ctx: Ctx): ValueDef[] {
  const wk = weatherKeys(ctx.deviceKey);
  return [
    sampled("e_00_12_00_004_irradiance", (f, i) => roundTo(at(f.irradiance, i), 1)),
    sampled("e_00_04_00_004_ambient_temperature", (f, i) => roundTo(at(f.ambient, i), 1)),
    sampled("e_00_29_00_004_wind_speed", (f, _i, t) => roundTo(windSpeed(wk, t, f.cloudiness), 1)),
    sampled("e_00_17_00_004_wind_direction", (_f, _i, t) => roundTo(windDirection(wk, t), 0)),
    sampled("e_01_20_01_004_rain_gauge", (f, _i, t) =>
      roundTo(rainPulses(wk, t, f.cloudiness, f.resolutionS) * 0.2, 1),
    ),
  ];
}

/** Standby genset readout 005 (hybrid). */
function gensetValues(ctx: Ctx): ValueDef[] {
  const gen = ctx.profile.genset;
  if (gen === undefined) return [];
  const rk = ctx.key("e_00_13_00_005_engine_speed");
  const ok = ctx.key("e_00_11_00_005_oil_pressure");
  const refill = 0.75 * gen.tankLiter;
  return [
    sampled("e_00_13_00_005_engine_speed", (f, i, t) =>
      at(f.gensetOn, i) === 1 ? roundTo(1500 + 6 * wobble(rk, t, 120), 0) : 0,
    ),
    counter(
      "e_00_19_00_005_fuel_level",
      (f, i) => (at(f.gensetOn, i) === 1 ? (0.6 + 0.27 * at(f.genset, i)) * dtH(f) : 0),
      {
        base: refill * unit2(ctx.key("e_00_19_00_005_fuel_level"), 0),
        output: (used) => roundTo(gen.tankLiter - (used % refill), 1),
      },
    ),
    counter("e_00_16_04_005_run_hours", (f, i) => (at(f.gensetOn, i) === 1 ? dtH(f) : 0), {
      base: roundTo(600 + 900 * unit2(ctx.key("e_00_16_04_005_run_hours"), 0), 1),
    }),
    sampled("e_00_11_00_005_oil_pressure", (f, i, t) =>
      at(f.gensetOn, i) === 1 ? roundTo(4.2 + 0.15 * wobble(ok, t, 300), 2) : 0,
    ),
    sampled("e_00_00_02_005_running", (f, i) => at(f.gensetOn, i)),
  ];
}

const PIPE_AREA_M2 = PI * 0.025 * 0.025;
const TANK_AREA_M2 = 12;

/** Water pump and tank readout 003 (off-grid): a solar pump filling a tank. */
function pumpValues(ctx: Ctx): ValueDef[] {
  const fk = ctx.key("e_00_14_00_003_pump_flow");
  const levelKey = ctx.key("e_00_20_00_003_tank_level");
  const pk = ctx.key("e_03_22_00_003_pipe_pressure");
  const phk = ctx.key("e_00_10_00_003_water_pH");
  const flow = (f: DayFrame, i: number, t: number): number => {
    const s = at(f.solar, i);
    if (s < 1) return 0;
    return roundTo(2.2 + 1.6 * clamp((s - 1) / 4, 0, 1) + 0.1 * wobble(fk, t, 600), 2);
  };
  const tOf = (f: DayFrame, i: number): number => f.firstS + i * f.resolutionS;
  const dayPumped = new WeakMap<DayFrame, number>();
  const pumpedOn = (f: DayFrame): number => {
    const cached = dayPumped.get(f);
    if (cached !== undefined) return cached;
    let sum = 0;
    for (let i = 0; i < f.count; i++) sum += flow(f, i, tOf(f, i)) * dtH(f);
    dayPumped.set(f, sum);
    return sum;
  };
  const demandShare = (h: number): number => h / 24 - (0.6 / (2 * PI)) * sin((2 * PI * h) / 24);
  return [
    sampled("e_00_14_00_003_pump_flow", flow),
    counter("e_00_20_00_003_tank_level", (f, i) => flow(f, i, tOf(f, i)) * dtH(f), {
      daily: true,
      output: (pumped, f, _i, t) => {
        const mid = 1.1 + 0.9 * smoothNoise(levelKey, t, 3 * DAY_S);
        const h = (t - f.dayStartS) / 3600;
        const swing = (pumped - pumpedOn(f) * demandShare(h)) / TANK_AREA_M2;
        return roundTo(clamp(mid + swing, 0.1, 3.2), 2);
      },
    }),
    sampled("e_03_22_00_003_pipe_pressure", (f, i, t) => {
      const q = flow(f, i, t);
      return roundTo(
        q > 0 ? 160 + 18 * q + 3 * wobble(pk, t, 300) : 14 + 0.5 * wobble(pk, t, 3600),
        1,
      );
    }),
    sampled("e_00_18_00_003_flow_velocity", (f, i, t) =>
      roundTo(flow(f, i, t) / PIPE_AREA_M2 / 60, 2),
    ),
    sampled("e_00_10_00_003_water_pH", (_f, _i, t) =>
      roundTo(7.15 + 0.25 * wobble(phk, t, 6 * 3600) + 0.04 * wobble(phk ^ 0x3c, t, 600), 2),
    ),
    counter(
      "e_00_24_05_003_pump_runtime_today",
      (f, i) => (at(f.solar, i) >= 1 ? f.resolutionS / 60 : 0),
      {
        daily: true,
      },
    ),
    counter("e_00_23_05_003_chlorine_dosed_today", (f, i) => flow(f, i, tOf(f, i)) * dtH(f) * 2, {
      daily: true,
    }),
  ];
}

/** Audit Box values: credit days, logger readout 001 and meter readout 002. */
function auditValues(ctx: Ctx): ValueDef[] {
  const creditStart = 30 + floor(300 * unit2(ctx.key(DAYS_REMAINING_ID), 0));
  const dk = ctx.key("e_03_28_04_001_data_transmitted");
  const rebootKey = ctx.key("e_00_25_00_001_uptime");
  const rebootEveryS = (20 + floor(25 * unit2(rebootKey, 0))) * DAY_S;
  const rebootOffsetS = floor(unit2(rebootKey, 1) * rebootEveryS);
  const monthsBefore = floor(24 * unit2(ctx.key("e_00_26_00_001_subscription_age"), 0));
  const fwKey = ctx.key("e_00_00_03_001_firmware_version");
  const upgrade1 = 40 + floor(100 * unit2(fwKey, 0));
  const upgrade2 = upgrade1 + 150 + floor(150 * unit2(fwKey, 1));
  const vk = ctx.key("e_00_02_00_002_voltage_L1");
  const pfk = ctx.key("e_00_00_00_002_power_factor");
  const ik = ctx.key("e_02_21_00_002_insulation_resistance");
  const volts = (f: DayFrame, i: number, t: number): number => {
    if (at(f.gridUp, i) === 1) return roundTo(229 + 3 * wobble(vk, t, 1200), 1);
    return at(f.gensetOn, i) === 1 ? roundTo(226 + 4 * wobble(vk, t, 300), 1) : 0;
  };
  return [
    sampled(DAYS_REMAINING_ID, (f) => (((creditStart - f.day) % 365) + 365) % 365),
    counter(
      "e_03_28_04_001_data_transmitted",
      (f, i) =>
        (0.9 + 0.6 * smoothNoise(dk, f.firstS + i * f.resolutionS, 3600)) * (f.resolutionS / 60),
      { base: roundTo(5000 + 20000 * unit2(dk, 0), 0) },
    ),
    sampled("e_00_25_00_001_uptime", (_f, _i, t) => {
      const since = t - COMMISSIONED_AT_S - rebootOffsetS;
      const lastBoot = since < 0 ? COMMISSIONED_AT_S : t - (since % rebootEveryS);
      return roundTo((t - lastBoot) / DAY_S, 2);
    }),
    sampled("e_00_26_00_001_subscription_age", (_f, _i, t) => {
      const d = new Date(t * 1000);
      return monthsBefore + (d.getUTCFullYear() - 2025) * 12 + d.getUTCMonth();
    }),
    sampled("e_00_00_03_001_firmware_version", (f) =>
      f.day < upgrade1 ? "2.4.1" : f.day < upgrade2 ? "2.5.0" : "2.6.3",
    ),
    sampled("e_00_02_00_002_voltage_L1", volts),
    sampled("e_00_03_00_002_current_L1", (f, i, t) => {
      const v = volts(f, i, t);
      return v === 0 ? 0 : roundTo((at(f.load, i) * 1000) / 3 / v, 2);
    }),
    sampled("e_00_00_00_002_power_factor", (_f, _i, t) =>
      roundTo(0.93 + 0.04 * wobble(pfk, t, 1800), 3),
    ),
    sampled("e_02_21_00_002_insulation_resistance", (f, i, t) =>
      at(f.alarm, i) === 302
        ? 0.35
        : roundTo(40 + 25 * smoothNoise(ik, t, 5 * DAY_S) - 8 * f.cloudiness, 2),
    ),
  ];
}

function battery002Soc(): ValueDef {
  return sampled("e_00_05_00_002_battery_SOC", (f, i) => roundTo(at(f.soc, i) * 100, 1));
}

function specificValues(ctx: Ctx): ValueDef[] {
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
      return [battery002Soc(), ...pumpValues(ctx)];
    case "auditbox":
      return auditValues(ctx);
    case "gridtied":
      return inverterValues(ctx, 1);
  }
}

/** Builds the catalog of a device of `kind` whose noise is keyed by `deviceKey`. */
export function buildCatalog(kind: DeviceKind, deviceKey: number): DeviceCatalog {
  const profile = siteProfile(kind, deviceKey);
  const ctx: Ctx = { kind, deviceKey, profile, key: (id) => subKey(deviceKey, id) };
  const defs = [...commonValues(ctx), ...specificValues(ctx)];
  const all = ["values_id", ...defs.map((d) => d.id)];
  const resources: ResourceDef[] = [{ id: ALL_DATA, valueIds: all }];
  if (kind === "hybrid") {
    const battery = defs.filter((d) => d.readout === 2).map((d) => d.id);
    resources.push({ id: "battery_bank", valueIds: [...META_VALUE_IDS, ...battery] });
  }
  return { kind, profile, defs, resources };
}
