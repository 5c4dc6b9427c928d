/** Physical make-up of each device kind: PV size, battery, genset, grid and load shape. */
import { round } from "./num.js";
import { subKey, unit2 } from "./rng.js";

/** The kinds of simulated installations. */
export type DeviceKind = "hybrid" | "offgrid" | "auditbox" | "gridtied";

/** A battery bank (state of charge as a fraction 0..1). */
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

/** A grid connection. */
export interface GridSpec {
  readonly exportAllowed: boolean;
  /** Chance that a day has one outage. */
  readonly outageProbability: number;
}

/** Shape of the consumption. */
export interface LoadShape {
  readonly style: "residential" | "commercial";
  readonly baseKw: number;
  readonly morningKw: number;
  readonly eveningKw: number;
  readonly daytimeKw: number;
  readonly spikeKw: number;
}

/** Everything the site physics needs about one installation. */
export interface SiteProfile {
  readonly kind: DeviceKind;
  readonly solarPeakKw: number;
  readonly inverterMaxKw: number;
  readonly solarNoonUtcH: number;
  readonly load: LoadShape;
  readonly battery: BatterySpec | undefined;
  readonly genset: GensetSpec | undefined;
  readonly grid: GridSpec | undefined;
}

function round1(x: number): number {
  return round(x * 10) / 10;
}

/** The profile of a device of `kind`; sizes vary by a few percent with the device key. */
export function siteProfile(kind: DeviceKind, deviceKey: number): SiteProfile {
  const k = subKey(deviceKey, "profile");
  const vary = (slot: number, spread: number): number => 1 + spread * (2 * unit2(k, slot) - 1);
  const noon = 12.1 + 0.5 * unit2(k, 0);
  switch (kind) {
    case "hybrid":
      return {
        kind,
        solarPeakKw: round1(12 * vary(1, 0.1)),
        inverterMaxKw: 10,
        solarNoonUtcH: noon,
        load: {
          style: "residential",
          baseKw: 0.55 * vary(2, 0.15),
          morningKw: 2.2 * vary(3, 0.2),
          eveningKw: 3.2 * vary(4, 0.2),
          daytimeKw: 0.9 * vary(5, 0.2),
          spikeKw: 2.5,
        },
        battery: {
          capacityKwh: 20,
          nominalV: 51.2,
          maxChargeKw: 5,
          maxDischargeKw: 5,
          minSoc: 0.2,
          maxSoc: 0.95,
          efficiency: 0.95,
          initialSoc: 0.5,
        },
        genset: { ratedKw: 8, mode: "standby", tankLiter: 120 },
        grid: { exportAllowed: true, outageProbability: 0.06 },
      };
    case "offgrid":
      return {
        kind,
        solarPeakKw: round1(6.5 * vary(1, 0.1)),
        inverterMaxKw: 7,
        solarNoonUtcH: noon,
        load: {
          style: "residential",
          baseKw: 0.25 * vary(2, 0.15),
          morningKw: 1.0 * vary(3, 0.2),
          eveningKw: 1.3 * vary(4, 0.2),
          daytimeKw: 1.1 * vary(5, 0.2),
          spikeKw: 1.5,
        },
        battery: {
          capacityKwh: 20,
          nominalV: 51.2,
          maxChargeKw: 5,
          maxDischargeKw: 5,
          minSoc: 0.2,
          maxSoc: 0.95,
          efficiency: 0.95,
          initialSoc: 0.6,
        },
        genset: { ratedKw: 6, mode: "offgrid", tankLiter: 200 },
        grid: undefined,
      };
    case "auditbox":
      return {
        kind,
        solarPeakKw: round1(30 * vary(1, 0.1)),
        inverterMaxKw: 27,
        solarNoonUtcH: noon,
        load: {
          style: "commercial",
          baseKw: 3 * vary(2, 0.15),
          morningKw: 0,
          eveningKw: 0,
          daytimeKw: 14 * vary(5, 0.2),
          spikeKw: 6,
        },
        battery: undefined,
        genset: { ratedKw: 30, mode: "standby", tankLiter: 400 },
        grid: { exportAllowed: true, outageProbability: 0.25 },
      };
    case "gridtied":
      return {
        kind,
        solarPeakKw: round1(5 * vary(1, 0.1)),
        inverterMaxKw: 4.6,
        solarNoonUtcH: noon,
        load: {
          style: "residential",
          baseKw: 0.35 * vary(2, 0.15),
          morningKw: 1.4 * vary(3, 0.2),
          eveningKw: 2.0 * vary(4, 0.2),
          daytimeKw: 0.5 * vary(5, 0.2),
          spikeKw: 2,
        },
        battery: undefined,
        genset: undefined,
        grid: { exportAllowed: true, outageProbability: 0 },
      };
  }
}
