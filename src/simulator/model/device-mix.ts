/** The generated devices (`site-00005`, …): kind, value count and resources from (seed, index). */
import { COMMON_VALUE_IDS } from "../../api/common-values.js";
import { ALL_DATA, buildCatalog, META_VALUE_IDS, type ResourceDef } from "./catalog.js";
import { extraSensorId, FIRST_BOARD, SENSOR_TEMPLATES } from "./extra-sensors.js";
import { floor, max } from "./num.js";
import type { DeviceKind } from "./profiles.js";
import { hash2, hashString, pickByShare, subKey, unit2 } from "./rng.js";
import { readoutOf } from "./values.js";

/** Listed values per generated device (values_id not counted): at least the common ones. */
const MIN_VALUES = COMMON_VALUE_IDS.length - 1;
const MAX_VALUES = 90;

/** Share of each kind among generated devices, in draw order. */
const KIND_MIX: readonly (readonly [DeviceKind, number])[] = [
  ["gridtied", 0.4],
  ["hybrid", 0.3],
  ["offgrid", 0.15],
  ["auditbox", 0.15],
];

/** Share of non-hybrid devices with extra sensors that list them in a second resource. */
const SENSOR_BOARD_SHARE = 0.4;

const BATTERY_BANK = "battery_bank";
const SENSOR_BOARD = "sensor_board";

export interface GeneratedDevice {
  readonly id: string;
  readonly kind: DeviceKind;
  /** Value ids listed in all_data, values_id not counted. */
  readonly valueCount: number;
  readonly secondResource: string | undefined;
  /** Key of the device's own choices (which values, which sensors). */
  readonly key: number;
}

/** Index of the first generated device: the 4 default devices come first. */
export const FIRST_GENERATED = 5;

/** Digits of the generated ids of a fleet of `devices`: 5, or more for 100 000 devices. */
export function idWidth(devices: number): number {
  return max(5, String(devices).length);
}

export function generatedId(index: number, width: number): string {
  return `site-${String(index).padStart(width, "0")}`;
}

/** The index of a generated id, or undefined when `id` is not one of the fleet's generated ids. */
export function generatedIndex(id: string, width: number, devices: number): number | undefined {
  if (id.length !== width + 5 || !id.startsWith("site-")) return undefined;
  const digits = id.slice(5);
  if (!/^\d+$/.test(digits)) return undefined;
  const index = Number(digits);
  return index >= FIRST_GENERATED && index <= devices ? index : undefined;
}

const catalogIds = new Map<DeviceKind, readonly string[]>();

/** The value ids (values_id not included) of a kind's catalog, in catalog order. */
function kindValueIds(kind: DeviceKind): readonly string[] {
  let ids = catalogIds.get(kind);
  if (ids === undefined) {
    ids = buildCatalog(kind, 0).defs.map((d) => d.id);
    catalogIds.set(kind, ids);
  }
  return ids;
}

/** The generated device number `index` (> 4) of a fleet with `seed`; cheap, builds nothing. */
export function generatedDevice(seed: number, index: number, width: number): GeneratedDevice {
  const key = hash2(subKey(hashString(String(seed)), "device-mix"), index);
  const kind = pickByShare(unit2(key, 0), KIND_MIX) ?? "gridtied";
  const valueCount = MIN_VALUES + floor(unit2(key, 1) * (MAX_VALUES - MIN_VALUES + 1));
  const hasSensors = valueCount > kindValueIds(kind).length;
  const secondResource =
    kind === "hybrid"
      ? BATTERY_BANK
      : hasSensors && unit2(key, 2) < SENSOR_BOARD_SHARE
        ? SENSOR_BOARD
        : undefined;
  return { id: generatedId(index, width), kind, valueCount, secondResource, key };
}

const COMMON = new Set(COMMON_VALUE_IDS);

/** The value ids a generated device lists in all_data (values_id first), in catalog order. */
function listedIds(device: GeneratedDevice): string[] {
  const catalog = kindValueIds(device.kind);
  const extra = device.valueCount - catalog.length;
  if (extra >= 0) {
    const offset = floor(unit2(device.key, 3) * SENSOR_TEMPLATES.length);
    const sensors = Array.from({ length: extra }, (_, k) => extraSensorId(k, offset));
    return ["values_id", ...catalog, ...sensors];
  }
  const specific = catalog.filter((id) => !COMMON.has(id));
  const rank = (id: string): number => unit2(subKey(device.key, id), 0);
  const keep = new Set(
    [...specific].sort((a, b) => rank(a) - rank(b)).slice(0, device.valueCount - MIN_VALUES),
  );
  return ["values_id", ...catalog.filter((id) => COMMON.has(id) || keep.has(id))];
}

export function generatedResources(device: GeneratedDevice): ResourceDef[] {
  const all = listedIds(device);
  const resources: ResourceDef[] = [{ id: ALL_DATA, valueIds: all }];
  const second = device.secondResource;
  if (second !== undefined) {
    const readout = second === BATTERY_BANK ? 2 : FIRST_BOARD;
    const own = all.filter((id) => !COMMON.has(id) && readoutOf(id) === readout);
    resources.push({ id: second, valueIds: [...META_VALUE_IDS, ...own] });
  }
  return resources;
}
