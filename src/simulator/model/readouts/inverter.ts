/** Inverter readout 001: three-phase on the hybrid site, single-phase on the grid-tied one. */
import { roundTo, sqrt } from "../num.js";
import { subKey, unit2, wobble } from "../rng.js";
import type { DayFrame } from "../site-physics.js";
import { counter, sampled, type ValueDef } from "../values.js";
import { at, dtH, type ReadoutContext, sampleTime } from "./context.js";

type InverterSignals = ReturnType<typeof inverterSignals>;

/** AC power (kW) and voltage of phase 1..phases, reactive (kvar) and apparent (kVA) power. */
function inverterSignals(ctx: ReadoutContext, phases: 1 | 3) {
  const share1 = subKey(ctx.deviceKey, "inverter.share.L1");
  const share2 = subKey(ctx.deviceKey, "inverter.share.L2");
  const phaseKw = (f: DayFrame, i: number, t: number, phase: number): number => {
    const s = at(f.solar, i);
    if (phases === 1) return s;
    const l1 = roundTo((s / 3) * (1 + 0.03 * wobble(share1, t, 1800)), 3);
    const l2 = roundTo((s / 3) * (1 + 0.03 * wobble(share2, t, 1800)), 3);
    return phase === 1 ? l1 : phase === 2 ? l2 : roundTo(s - l1 - l2, 3);
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
    return s === 0 ? 0 : roundTo(s * (0.09 + 0.04 * wobble(reactiveKey, t, 1800)), 3);
  };
  const apparent = (f: DayFrame, i: number, t: number): number => {
    const s = at(f.solar, i);
    const q = reactive(f, i, t);
    return roundTo(sqrt(s * s + q * q), 3);
  };
  return { phaseKw, phaseV, reactive, apparent };
}

/** Voltage, current and active power of each phase, grouped by quantity. */
function phaseValues(s: InverterSignals, phases: 1 | 3): ValueDef[] {
  const names = phases === 3 ? [1, 2, 3] : [1];
  return [
    ...names.map((n) =>
      sampled(`e_00_02_00_001_AC_voltage_L${n}`, (f, i, t) => s.phaseV(f, i, t, n)),
    ),
    ...names.map((n) =>
      sampled(`e_00_03_00_001_AC_current_L${n}`, (f, i, t) => {
        const v = s.phaseV(f, i, t, n);
        return v === 0 ? 0 : roundTo((s.phaseKw(f, i, t, n) * 1000) / v, 2);
      }),
    ),
    ...names.map((n) =>
      sampled(`e_03_01_00_001_AC_activepower_L${n}`, (f, i, t) => s.phaseKw(f, i, t, n)),
    ),
  ];
}

/** Frequency, reactive and apparent power, heatsink and DC string of the three-phase inverter. */
function threePhaseValues(ctx: ReadoutContext, s: InverterSignals): ValueDef[] {
  const fk = ctx.key("e_00_06_00_001_AC_frequency");
  const tk = ctx.key("e_00_04_00_001_heatsink_temperature");
  const dk = ctx.key("e_00_02_00_001_DC_string1_voltage");
  const maxKw = ctx.profile.inverterMaxKw;
  return [
    sampled("e_00_06_00_001_AC_frequency", (f, i, t) =>
      roundTo(50 + (at(f.gridUp, i) === 1 ? 0.025 : 0.08) * wobble(fk, t, 300), 2),
    ),
    sampled("e_03_15_00_001_AC_reactivepower", s.reactive),
    sampled("e_00_09_00_001_AC_apparentpower", (f, i, t) => roundTo(s.apparent(f, i, t) * 1000, 0)),
    sampled("e_00_04_00_001_heatsink_temperature", (f, i, t) =>
      roundTo(at(f.ambient, i) + 4 + (26 * at(f.solar, i)) / maxKw + 0.6 * wobble(tk, t, 900), 1),
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
  ];
}

function inverterMode(ctx: ReadoutContext, f: DayFrame, i: number): string {
  if (ctx.profile.battery !== undefined && at(f.gridUp, i) === 0) return "Backup";
  if (at(f.solar, i) === 0) return "Standby";
  return at(f.clipped, i) === 1 ? "Derating" : "MPPT";
}

const MODE_STATUS: Record<string, number> = { Standby: 1, MPPT: 2, Derating: 3, Backup: 4 };

/** Operating mode, status code and today's energy. */
function statusValues(ctx: ReadoutContext): ValueDef[] {
  return [
    sampled("e_00_00_03_001_operating_mode", (f, i) => inverterMode(ctx, f, i)),
    sampled("e_00_00_06_001_status_code", (f, i) => {
      const alarm = at(f.alarm, i);
      if (alarm === 301 || alarm === 302) return 9;
      return MODE_STATUS[inverterMode(ctx, f, i)] ?? 0;
    }),
    counter("e_03_07_05_001_energy_today", (f, i) => at(f.solar, i) * dtH(f), { daily: true }),
  ];
}

/** Lifetime counters: reactive and apparent energy (three-phase) or lifetime MWh (single-phase). */
function lifetimeCounters(ctx: ReadoutContext, s: InverterSignals, phases: 1 | 3): ValueDef[] {
  const base = (id: string, lo: number, span: number): number =>
    roundTo(lo + span * unit2(ctx.key(id), 0), 3);
  if (phases === 1) {
    return [
      counter("e_02_07_04_001_lifetime_energy", (f, i) => (at(f.solar, i) * dtH(f)) / 1000, {
        base: base("e_02_07_04_001_lifetime_energy", 2, 12),
        output: (sum) => roundTo(sum, 6),
      }),
    ];
  }
  return [
    counter(
      "e_03_08_04_001_reactive_energy",
      (f, i) => s.reactive(f, i, sampleTime(f, i)) * dtH(f),
      { base: base("e_03_08_04_001_reactive_energy", 800, 1500) },
    ),
    counter(
      "e_03_30_04_001_apparent_energy",
      (f, i) => s.apparent(f, i, sampleTime(f, i)) * dtH(f),
      { base: base("e_03_30_04_001_apparent_energy", 9000, 6000) },
    ),
  ];
}

export function inverterValues(ctx: ReadoutContext, phases: 1 | 3): ValueDef[] {
  const s = inverterSignals(ctx, phases);
  return [
    ...phaseValues(s, phases),
    ...(phases === 3 ? threePhaseValues(ctx, s) : []),
    ...statusValues(ctx),
    ...lifetimeCounters(ctx, s, phases),
  ];
}
