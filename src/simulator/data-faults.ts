/**
 * Data faults of real installations (test knobs). Every choice is a pure function of the seed and
 * of the row (device, timestamp, values_id) or the request, so every answer holding a row agrees.
 */
import { VALUES_ID } from "../api/limits.js";
import type { DataRecord, RecordMember } from "../records/data-record.js";
import { DEFAULT_EXTRA_MEMBERS } from "../util/demo-defaults.js";
import { META_VALUE_IDS } from "./model/catalog.js";
import { hashString, subKey, unit2 } from "./model/rng.js";

/** A gateway that lost its uplink: its records are not visible in the API until it uploads its buffer (oldest first). */
export interface GatewayOutage {
  readonly deviceId: string;
  /** First second without uplink (epoch s). */
  readonly fromS: number;
  /** Uplink back (epoch s). */
  readonly toS: number;
  /** When the buffered records are visible in the API (epoch s, default toS; Infinity: never, a dead gateway). FIFO upload: every record of the device with fromS <= t < max(toS, visibleAtS) is invisible while the simulator's clock is before visibleAtS, and visible from then on. */
  readonly visibleAtS?: number;
}

/** Data faults (test knobs). Rates are shares in [0, 1]; every choice is drawn from the seed. */
export interface DataFaultOptions {
  readonly outages?: readonly GatewayOutage[];
  /** Share of readout rows, chosen per (device, timestamp, values_id) from the seed, whose first requested non-meta member is sent as the JSON number 1e400 (a "poison row": valid JSON, not a finite number). Every data answer that contains such a row carries it poisoned. */
  readonly poisonRate?: number;
  /** Share of rows (chosen per device, timestamp, values_id) that carry members that were not requested. */
  readonly extraMemberRate?: number;
  /** How many unrequested members such a row carries (default 3). The names include "etl_run", a coded id "e_03_01_00_000_spoofed_power" and numbered ones "extra_<k>"; values are numbers. 10000 must work (a 10,000-key record). */
  readonly extraMembers?: number;
  /** Share of data answers (chosen per request URL from the seed) that carry two extra rows outside the requested window: one at 2300-01-01T00:00:00 and one at 0000-01-01T00:00:00, each with values_id and the requested members. */
  readonly outOfWindowRate?: number;
  /** Share of rows (chosen per device, timestamp, values_id) sent twice: the copy comes right after the original, with every numeric member + 1 (the first one is the truth). */
  readonly duplicateRate?: number;
}

/** The text a poisoned member is sent as: valid JSON, but no finite number (JSON.parse gives Infinity). */
export const POISON_TEXT = "1e400";
export const FAR_FUTURE_TIMESTAMP = "2300-01-01T00:00:00";
export const YEAR_ZERO_TIMESTAMP = "0000-01-01T00:00:00";
export { DEFAULT_EXTRA_MEMBERS } from "../util/demo-defaults.js";

const META = new Set(META_VALUE_IDS);

/** The per-row fault channels (each draws independently) and the option of each one's rate. */
const RATE_OF = {
  poison: "poisonRate",
  "extra-members": "extraMemberRate",
  duplicate: "duplicateRate",
} as const;

export type RowFault = keyof typeof RATE_OF;

/** True when some data fault can change an answer; false: answers are exactly the plain records. */
export function dataFaultsActive(faults: DataFaultOptions): boolean {
  const { poisonRate, extraMemberRate, outOfWindowRate, duplicateRate } = faults;
  const rates = [poisonRate, extraMemberRate, outOfWindowRate, duplicateRate];
  return (faults.outages?.length ?? 0) > 0 || rates.some((rate) => (rate ?? 0) > 0);
}

/** True for the rows (timestamp, values_id) of a device the channel picks; undefined at rate 0. */
function rowChooser(
  seed: number,
  faults: DataFaultOptions,
  channel: RowFault,
  deviceId: string,
): ((timestamp: string, valuesId: RecordMember | undefined) => boolean) | undefined {
  const rate = faults[RATE_OF[channel]];
  if (rate === undefined || !(rate > 0)) return undefined;
  const deviceKey = subKey(subKey(subKey(seed, "data-faults"), channel), deviceId);
  let lastTimestamp: string | undefined;
  let timestampKey = 0;
  return (timestamp, valuesId) => {
    if (timestamp !== lastTimestamp) {
      lastTimestamp = timestamp;
      timestampKey = subKey(deviceKey, timestamp);
    }
    const readout = valuesId === undefined ? "" : JSON.stringify(valuesId);
    return unit2(timestampKey, hashString(readout)) < rate;
  };
}

/** True when the row (device, `YYYY-MM-DDTHH:MM:SS`, values_id) has the `channel` fault. */
export function rowHasFault(
  seed: number,
  faults: DataFaultOptions,
  channel: RowFault,
  [deviceId, timestamp, valuesId]: readonly [string, string, RecordMember | undefined],
): boolean {
  return rowChooser(seed, faults, channel, deviceId)?.(timestamp, valuesId) ?? false;
}

/** True when the data answer to `request` (parameters as sent) carries the out-of-window rows. */
export function hasOutOfWindowRowsFor(
  seed: number,
  faults: DataFaultOptions,
  request: { deviceId: string; resourceId: string; values: string; from: string; to: string },
): boolean {
  const rate = faults.outOfWindowRate;
  if (rate === undefined || !(rate > 0)) return false;
  const { deviceId, resourceId, values, from, to } = request;
  const text = [deviceId, resourceId, values, from, to].join("\u0000");
  return unit2(subKey(seed, "data-faults/out-of-window"), hashString(text)) < rate;
}

/** True when a record at `tS` is visible at `nowS` (epoch s) despite the device's outages. */
export function isVisibleAt(
  outages: readonly GatewayOutage[] | undefined,
  deviceId: string,
  tS: number,
  nowS: number,
): boolean {
  return (outages ?? []).every((o) => {
    const visibleAtS = o.visibleAtS ?? o.toS;
    const hidden = nowS < visibleAtS && tS >= o.fromS && tS < Math.max(o.toS, visibleAtS);
    return o.deviceId !== deviceId || !hidden;
  });
}

/** The records visible at `nowS` under the outages of `deviceId` (all of them when it has none). */
export function visibleRecords(
  outages: readonly GatewayOutage[] | undefined,
  deviceId: string,
  records: DataRecord[],
  nowS: number,
): DataRecord[] {
  const own = (outages ?? []).filter((o) => o.deviceId === deviceId);
  if (own.length === 0) return records;
  return records.filter((r) =>
    isVisibleAt(own, deviceId, Date.parse(`${r.timestamp}Z`) / 1000, nowS),
  );
}

export interface ExtraMember {
  readonly name: string;
  readonly value: number;
}

/** The unrequested members a chosen row carries first, then "extra_1" (1), "extra_2" (2), …. */
const FIRST_EXTRA_MEMBERS: readonly ExtraMember[] = [
  { name: "etl_run", value: 1 },
  { name: "e_03_01_00_000_spoofed_power", value: 99_999.9 },
];

/** The `count` unrequested members of a row; names in `taken` (the row's own) are skipped. */
export function extraMembersFor(count: number, taken: ReadonlySet<string>): ExtraMember[] {
  const out: ExtraMember[] = [];
  for (const member of FIRST_EXTRA_MEMBERS) {
    if (out.length < count && !taken.has(member.name)) out.push(member);
  }
  for (let k = 1; out.length < count; k++) {
    const name = `extra_${k}`;
    if (!taken.has(name)) out.push({ name, value: k });
  }
  return out;
}

/** `,"name":value,...` for members, each value plus `bump`. */
function memberText(members: readonly ExtraMember[], bump: number): string {
  let text = "";
  for (const m of members) text += `,${JSON.stringify(m.name)}:${JSON.stringify(m.value + bump)}`;
  return text;
}

/** The member a poisoned row carries 1e400 in: its first non-meta member with a value, else its first non-meta member. */
function poisonTarget(row: DataRecord): string | undefined {
  let fallback: string | undefined;
  for (const key in row) {
    if (key === "timestamp" || META.has(key)) continue;
    if (row[key] !== null) return key;
    fallback ??= key;
  }
  return fallback;
}

/** A row's JSON: as JSON.stringify, with `poisonKey` sent as 1e400 and numbers (but values_id) + 1 when `bump`. */
function rowText(row: DataRecord, poisonKey: string | undefined, bump: boolean): string {
  if (poisonKey === undefined && !bump) return JSON.stringify(row);
  let text = "";
  for (const key in row) {
    const value = row[key];
    const shown =
      key === poisonKey
        ? POISON_TEXT
        : JSON.stringify(
            bump && key !== VALUES_ID && typeof value === "number" ? value + 1 : (value ?? null),
          );
    text += `${text === "" ? "{" : ","}${JSON.stringify(key)}:${shown}`;
  }
  return `${text}}`;
}

/** The body of a data answer with the row faults spliced in. */
export function renderFaultedRecords(answer: {
  readonly seed: number;
  readonly faults: DataFaultOptions;
  readonly deviceId: string;
  readonly records: readonly DataRecord[];
  readonly appended: readonly DataRecord[];
}): string {
  const { seed, faults, deviceId, records, appended } = answer;
  const poisoned = rowChooser(seed, faults, "poison", deviceId);
  const extra = rowChooser(seed, faults, "extra-members", deviceId);
  const duplicated = rowChooser(seed, faults, "duplicate", deviceId);
  const first = records[0];
  const members =
    extra && first
      ? extraMembersFor(faults.extraMembers ?? DEFAULT_EXTRA_MEMBERS, new Set(Object.keys(first)))
      : [];
  const extraText = memberText(members, 0);
  const extraCopyText = memberText(members, 1);
  const parts: string[] = [];
  for (const row of records) {
    const { timestamp, values_id: valuesId } = row;
    const poisonKey = poisoned?.(timestamp, valuesId) ? poisonTarget(row) : undefined;
    const withExtras = extraText !== "" && (extra?.(timestamp, valuesId) ?? false);
    const text = rowText(row, poisonKey, false);
    parts.push(withExtras ? `${text.slice(0, -1)}${extraText}}` : text);
    if (duplicated?.(timestamp, valuesId)) {
      const copy = rowText(row, poisonKey, true);
      parts.push(withExtras ? `${copy.slice(0, -1)}${extraCopyText}}` : copy);
    }
  }
  for (const row of appended) parts.push(JSON.stringify(row));
  return `[${parts.join(",")}]`;
}
