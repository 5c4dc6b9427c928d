/** The "spec" catalog: spec 2.3's value ids and a few seeded coded ids the spec does not know. */
import { COMMON_VALUE_IDS } from "../../api/common-values.js";
import { ALL_DATA, type ResourceDef } from "./catalog.js";
import { floor } from "./num.js";
import { hashString, subKey, unit2 } from "./rng.js";

/** Catalogs a fleet can give its devices: each kind's own (default) or only the spec's names. */
export type CatalogOption = "default" | "spec";

/** Coded ids beyond the spec's names each device of a spec catalog lists. */
export const SPEC_EXTRA_VALUES = 3;

const two = (n: number): string => String(n).padStart(2, "0");

/** The seeded coded ids (names not in the spec) a spec-catalog device lists after the spec's. */
export function specExtraIds(seed: number, deviceId: string): string[] {
  const key = subKey(hashString(String(seed)), `spec-catalog ${deviceId}`);
  return Array.from({ length: SPEC_EXTRA_VALUES }, (_, k) => {
    const unit = floor(unit2(key, 4 * k) * 31);
    const type = floor(unit2(key, 4 * k + 1) * 7);
    const readout = 6 + floor(unit2(key, 4 * k + 2) * 4);
    const tag = floor(unit2(key, 4 * k + 3) * 0x10000)
      .toString(16)
      .padStart(4, "0");
    return `e_00_${two(unit)}_${two(type)}_${String(readout).padStart(3, "0")}_aux${k + 1}_${tag}`;
  });
}

/** The one resource (all_data) of a spec-catalog device: the spec's ids, then the extra ones. */
export function specResources(seed: number, deviceId: string): ResourceDef[] {
  return [{ id: ALL_DATA, valueIds: [...COMMON_VALUE_IDS, ...specExtraIds(seed, deviceId)] }];
}
