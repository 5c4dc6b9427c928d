/**
 * Power flows of one site for one UTC day. Sign convention (kW): load = solar + battery + genset +
 * other; battery > 0 discharges, other > 0 imports from the grid and other < 0 exports.
 */
import { abs, clamp, exp, floor, min, roundTo } from "./num.js";
import type { BatterySpec, SiteProfile } from "./profiles.js";
import { smoothNoise, subKey, unit2, unit3 } from "./rng.js";
import { dayGrid, dayStartOf, weekdayOf } from "./time.js";
import { dayCloudiness, skyAndAir, sunWindow, weatherKeys } from "./weather.js";

export interface SiteState {
  /** Battery state of charge, 0..1 (0 without battery). */
  readonly soc: number;
  readonly gensetOn: boolean;
}

/** One simulated UTC day: per-sample channels, index i at time firstS + i * resolutionS. */
export interface DayFrame {
  readonly day: number;
  readonly dayStartS: number;
  readonly firstS: number;
  readonly count: number;
  readonly resolutionS: number;
  readonly cloudiness: number;
  /** Powers in kW, rounded to 3 decimals. */
  readonly solar: Float64Array;
  readonly load: Float64Array;
  readonly battery: Float64Array;
  readonly genset: Float64Array;
  readonly other: Float64Array;
  /** Battery state of charge 0..1 at the sample. */
  readonly soc: Float64Array;
  /** W/m². */
  readonly irradiance: Float64Array;
  /** °C. */
  readonly ambient: Float64Array;
  readonly gridUp: Uint8Array;
  readonly gensetOn: Uint8Array;
  /** Solar was limited by the inverter rating. */
  readonly clipped: Uint8Array;
  /** Active alarm code, 0 = none (filled by the alarm schedule). */
  readonly alarm: Uint16Array;
}

export type SiteKeys = ReturnType<typeof siteKeys>;

export function siteKeys(deviceKey: number) {
  return {
    weather: weatherKeys(deviceKey),
    load: subKey(deviceKey, "load"),
    spike: subKey(deviceKey, "load.spike"),
    outage: subKey(deviceKey, "grid.outage"),
  };
}

export function initialSiteState(profile: SiteProfile): SiteState {
  return { soc: profile.battery?.initialSoc ?? 0, gensetOn: false };
}

/** The grid outage of `day` in UTC hours [startH, endH), if any (at most one per day). */
function dayOutage(
  profile: SiteProfile,
  keys: SiteKeys,
  day: number,
): { startH: number; endH: number } | undefined {
  const p = profile.grid?.outageProbability ?? 0;
  if (p <= 0 || unit2(keys.outage, day) >= p) return undefined;
  const startH = 6 + 16 * unit3(keys.outage, day, 1);
  const endH = min(24, startH + 0.5 + 2.5 * unit3(keys.outage, day, 2));
  return { startH, endH };
}

function smoothstep(a: number, b: number, x: number): number {
  const f = clamp((x - a) / (b - a), 0, 1);
  return f * f * (3 - 2 * f);
}

function bump(h: number, mu: number, sigma: number): number {
  let d = abs(h - mu);
  if (d > 12) d = 24 - d;
  const z = d / sigma;
  return exp(-0.5 * z * z);
}

function loadKw(
  profile: SiteProfile,
  keys: SiteKeys,
  t: number,
  h: number,
  weekend: boolean,
): number {
  const s = profile.load;
  let kw: number;
  if (s.style === "residential") {
    kw =
      s.baseKw +
      s.morningKw * bump(h, 7, 1) * (weekend ? 0.7 : 1) +
      s.eveningKw * bump(h, 19.5, 1.6) +
      s.daytimeKw * bump(h, 13, 3) * (weekend ? 1.5 : 1);
  } else {
    const open = smoothstep(6.5, 8, h) * (1 - smoothstep(17.5, 19, h));
    kw = s.baseKw + s.daytimeKw * open * (weekend ? 0.25 : 1);
  }
  kw *= 0.875 + 0.25 * smoothNoise(keys.load, t, 900);
  const u = unit2(keys.spike, floor(t / 300));
  if (u > 0.93) kw += (s.spikeKw * (u - 0.93)) / 0.07;
  return kw;
}

/**
 * Genset control. Off-grid: starts in the early evening when the battery will not last the
 * night (or at any time when nearly empty), stops on solar surplus or once recharged.
 * Standby: runs while the grid is down; with a battery only once the battery runs low.
 */
function nextGensetOn(
  profile: SiteProfile,
  on: boolean,
  soc: number,
  h: number,
  gridUp: boolean,
  surplus: boolean,
): boolean {
  const genset = profile.genset;
  if (genset === undefined) return false;
  const battery = profile.battery;
  if (genset.mode === "offgrid" && battery !== undefined) {
    if (on) return !(surplus || soc >= (h >= 16 ? 0.9 : 0.45));
    return (h >= 17 && h < 18.5 && soc < 0.8) || soc <= battery.minSoc + 0.02;
  }
  if (gridUp) return false;
  if (battery === undefined) return true;
  return on ? soc < 0.6 : soc < 0.35;
}

function emptyFrame(day: number, resolutionS: number, cloudiness: number): DayFrame {
  const { firstS, count } = dayGrid(day, resolutionS);
  return {
    day,
    dayStartS: dayStartOf(day),
    firstS,
    count,
    resolutionS,
    cloudiness,
    solar: new Float64Array(count),
    load: new Float64Array(count),
    battery: new Float64Array(count),
    genset: new Float64Array(count),
    other: new Float64Array(count),
    soc: new Float64Array(count),
    irradiance: new Float64Array(count),
    ambient: new Float64Array(count),
    gridUp: new Uint8Array(count),
    gensetOn: new Uint8Array(count),
    clipped: new Uint8Array(count),
    alarm: new Uint16Array(count),
  };
}

interface Flows {
  readonly solar: number;
  readonly load: number;
  readonly battery: number;
  readonly genset: number;
}

/**
 * Dispatch: the battery takes the surplus or covers the deficit within its limits, a running
 * genset also recharges it; the grid takes the rest, else solar is curtailed or load shed.
 */
function dispatch(
  profile: SiteProfile,
  demand: { readonly solar: number; readonly load: number },
  soc: number,
  on: boolean,
  dtH: number,
  gridUp: boolean,
): Flows {
  let { solar, load } = demand;
  const bat = profile.battery;
  const gen = profile.genset;
  const net = load - solar;
  let battery = 0;
  let genset = 0;
  if (bat !== undefined) {
    const chargeLimit = clamp(
      ((bat.maxSoc - soc) * bat.capacityKwh) / (dtH * bat.efficiency),
      0,
      bat.maxChargeKw,
    );
    const dischargeLimit = clamp(
      ((soc - bat.minSoc) * bat.capacityKwh) / dtH,
      0,
      bat.maxDischargeKw,
    );
    if (on && gen !== undefined) {
      genset = clamp(net + chargeLimit, 0, gen.ratedKw);
      battery = net - genset;
    } else {
      battery = net;
    }
    battery = clamp(battery, -chargeLimit, dischargeLimit);
  } else if (on && gen !== undefined) {
    genset = clamp(net, 0, gen.ratedKw);
  }
  const rest = net - battery - genset;
  if (rest > 0 && !gridUp) load -= rest;
  else if (rest < 0 && !gridUp) solar += rest;
  return { solar, load, battery, genset };
}

/**
 * The flows rounded to 3 decimals so that they balance: off grid the load is the sum of the
 * sources; on grid, a balance without grid exchange puts the rounding into one source.
 */
function roundedFlows(flows: Flows, gridUp: boolean): Flows {
  const { solar, load, battery, genset } = flows;
  let solarR = roundTo(solar, 3);
  let batteryR = roundTo(battery, 3);
  let gensetR = roundTo(genset, 3);
  const loadR = gridUp ? roundTo(load, 3) : roundTo(solarR + batteryR + gensetR, 3);
  if (gridUp && abs(load - solar - battery - genset) < 1e-9) {
    if (battery !== 0) batteryR = roundTo(loadR - solarR - gensetR, 3);
    else if (genset !== 0) gensetR = roundTo(loadR - solarR, 3);
    else solarR = loadR;
  }
  return { solar: solarR, load: loadR, battery: batteryR, genset: gensetR };
}

/** The state of charge after `batteryKw` (> 0 discharges) for one sample of `dtH` hours. */
function nextSoc(bat: BatterySpec, soc: number, batteryKw: number, dtH: number): number {
  const next =
    soc +
    (batteryKw < 0
      ? (-batteryKw * dtH * bat.efficiency) / bat.capacityKwh
      : (-batteryKw * dtH) / bat.capacityKwh);
  return clamp(next, 0, 1);
}

/** Simulates day `day` from the state at its 00:00 UTC; returns the frame and the end state. */
export function simulateDay(
  profile: SiteProfile,
  keys: SiteKeys,
  day: number,
  resolutionS: number,
  start: SiteState,
): { frame: DayFrame; end: SiteState } {
  const frame = emptyFrame(day, resolutionS, dayCloudiness(keys.weather, day));
  const { dayStartS, firstS, count, cloudiness } = frame;
  const sun = sunWindow(dayStartS + 43_200, profile.solarNoonUtcH);
  const weekday = weekdayOf(dayStartS);
  const weekend = weekday === 0 || weekday === 6;
  const outage = dayOutage(profile, keys, day);
  const dtH = resolutionS / 3600;
  const bat = profile.battery;
  let soc = start.soc;
  let on = start.gensetOn;

  for (let i = 0; i < count; i++) {
    const t = firstS + i * resolutionS;
    const h = (t - dayStartS) / 3600;
    const { irradianceWm2: irr, ambientC: amb } = skyAndAir(keys.weather, sun, t, h, cloudiness);
    const moduleC = amb + irr * 0.028;
    const dcKw = profile.solarPeakKw * (irr / 1000) * (1 - 0.004 * (moduleC - 25)) * 0.96;
    const solar = dcKw < 0.002 ? 0 : min(profile.inverterMaxKw, dcKw);
    const load = loadKw(profile, keys, t, h, weekend);
    const inOutage = outage !== undefined && h >= outage.startH && h < outage.endH;
    const gridUp = profile.grid !== undefined && !inOutage;
    on = nextGensetOn(profile, on, soc, h, gridUp, solar > load);
    const r = roundedFlows(dispatch(profile, { solar, load }, soc, on, dtH, gridUp), gridUp);
    frame.solar[i] = r.solar;
    frame.load[i] = r.load;
    frame.battery[i] = r.battery;
    frame.genset[i] = r.genset;
    frame.other[i] = gridUp ? roundTo(r.load - r.solar - r.battery - r.genset, 3) : 0;
    frame.irradiance[i] = irr;
    frame.ambient[i] = amb;
    frame.gridUp[i] = gridUp ? 1 : 0;
    frame.gensetOn[i] = on ? 1 : 0;
    frame.clipped[i] = dcKw > profile.inverterMaxKw ? 1 : 0;
    if (bat !== undefined) soc = nextSoc(bat, soc, r.battery, dtH);
    frame.soc[i] = soc;
  }
  return { frame, end: { soc, gensetOn: on } };
}
