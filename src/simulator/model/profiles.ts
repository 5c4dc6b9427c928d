/** Physical make-up of each device kind: PV size, battery, genset, grid and load shape. */
import { roundTo } from "./num.js";
import { subKey, unit2 } from "./rng.js";

export type DeviceKind = "hybrid" | "offgrid" | "auditbox" | "gridtied";

export interface BatterySpec {
  readonly capacityKwh: number;
  readonly nominalV: number;
  readonly maxChargeKw: number;
  readonly maxDischargeKw: number;
  readonly minSoc: number;
  readonly maxSoc: number;
  readonly efficiency: number;
  readonly initialSoc: number;
}

/** A diesel genset: `standby` runs on grid outages, `offgrid` on low battery. */
export interface GensetSpec {
  readonly ratedKw: number;
  readonly mode: "standby" | "offgrid";
  readonly tankLiter: number;
}

export interface GridSpec {
  /** Chance that a day has one outage. */
  readonly outageProbability: number;
}

export interface LoadShape {
  readonly style: "residential" | "commercial";
  readonly baseKw: number;
  readonly morningKw: number;
  readonly eveningKw: number;
  readonly daytimeKw: number;
  readonly spikeKw: number;
}

export interface SiteProfile {
  readonly solarPeakKw: number;
  readonly inverterMaxKw: number;
  readonly solarNoonUtcH: number;
  readonly load: LoadShape;
  readonly battery: BatterySpec | undefined;
  readonly genset: GensetSpec | undefined;
  readonly grid: GridSpec | undefined;
}

/** A factor 1 ± spread drawn for the device from `slot`. */
type Vary = (slot: number, spread: number) => number;

/** The 20 kWh, 51.2 V bank of the hybrid and off-grid sites. */
const BANK_20_KWH = {
  capacityKwh: 20,
  nominalV: 51.2,
  maxChargeKw: 5,
  maxDischargeKw: 5,
  minSoc: 0.2,
  maxSoc: 0.95,
  efficiency: 0.95,
} as const;

/** A load shape from its nominal kW (base, morning, evening, daytime), each varied per device. */
function loadShape(
  vary: Vary,
  style: LoadShape["style"],
  [base, morning, evening, daytime]: readonly [number, number, number, number],
  spikeKw: number,
): LoadShape {
  return {
    style,
    baseKw: base * vary(2, 0.15),
    morningKw: morning * vary(3, 0.2),
    eveningKw: evening * vary(4, 0.2),
    daytimeKw: daytime * vary(5, 0.2),
    spikeKw,
  };
}

/** A kind's nominal make-up: peak PV (before variation), inverter, load; battery, genset, grid. */
interface KindSpec extends Partial<Pick<SiteProfile, "battery" | "genset" | "grid">> {
  readonly solar: { readonly peakKw: number; readonly inverterMaxKw: number };
  readonly load: (vary: Vary) => LoadShape;
}

const KINDS: Record<DeviceKind, KindSpec> = {
  hybrid: {
    solar: { peakKw: 12, inverterMaxKw: 10 },
    load: (vary) => loadShape(vary, "residential", [0.55, 2.2, 3.2, 0.9], 2.5),
    battery: { ...BANK_20_KWH, initialSoc: 0.5 },
    genset: { ratedKw: 8, mode: "standby", tankLiter: 120 },
    grid: { outageProbability: 0.06 },
  },
  offgrid: {
    solar: { peakKw: 6.5, inverterMaxKw: 7 },
    load: (vary) => loadShape(vary, "residential", [0.25, 1.0, 1.3, 1.1], 1.5),
    battery: { ...BANK_20_KWH, initialSoc: 0.6 },
    genset: { ratedKw: 6, mode: "offgrid", tankLiter: 200 },
  },
  auditbox: {
    solar: { peakKw: 30, inverterMaxKw: 27 },
    load: (vary) => loadShape(vary, "commercial", [3, 0, 0, 14], 6),
    genset: { ratedKw: 30, mode: "standby", tankLiter: 400 },
    grid: { outageProbability: 0.25 },
  },
  gridtied: {
    solar: { peakKw: 5, inverterMaxKw: 4.6 },
    load: (vary) => loadShape(vary, "residential", [0.35, 1.4, 2.0, 0.5], 2),
    grid: { outageProbability: 0 },
  },
};

/** The profile of a device of `kind`; sizes vary by a few percent with the device key. */
export function siteProfile(kind: DeviceKind, deviceKey: number): SiteProfile {
  const k = subKey(deviceKey, "profile");
  const vary: Vary = (slot, spread) => 1 + spread * (2 * unit2(k, slot) - 1);
  const spec = KINDS[kind];
  return {
    solarPeakKw: roundTo(spec.solar.peakKw * vary(1, 0.1), 1),
    inverterMaxKw: spec.solar.inverterMaxKw,
    solarNoonUtcH: 12.1 + 0.5 * unit2(k, 0),
    load: spec.load(vary),
    battery: spec.battery,
    genset: spec.genset,
    grid: spec.grid,
  };
}
