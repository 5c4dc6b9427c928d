/**
 * What InfluxDB must hold, worked out apart from src: the value-id tables of the API spec (2.3,
 * copied below as data), the schema of docs/schema.md (measurements, tags, fields, how names are
 * stored) and the API's limits (spec 8: at most 20 values over at most 7 days a request). It
 * imports nothing from src but types, so a bug in src's decoding, number coercion, name escaping
 * or request planning shows against it instead of on both sides. The oracle of expected-points,
 * the rollups-exact tests and the transcoder's answer-oracle.
 */
import type { SimulatedFleet } from "../../src/simulator/model/fleet.js";

/** Spec 2.3, "Unit prefix codes": code -> symbol ("" for none). */
const PREFIXES: Readonly<Record<string, string>> = { "00": "", "01": "m", "02": "M", "03": "k" };

/** Spec 2.3, "Unit codes": code -> symbol ("" for none), as the spec spells them. */
const UNITS: Readonly<Record<string, string>> = {
  "00": "",
  "01": "W",
  "02": "V",
  "03": "A",
  "04": "°C",
  "05": "%",
  "06": "Hz",
  "07": "Wh",
  "08": "Varh",
  "09": "VA",
  "10": "pH",
  "11": "bar",
  "12": "W/m²",
  "13": "RPM",
  "14": "m³/h",
  "15": "var",
  "16": "h",
  "17": "Degree",
  "18": "m/Min",
  "19": "liter",
  "20": "m",
  "21": "Ohm",
  "22": "Pa",
  "23": "g",
  "24": "min",
  "25": "day",
  "26": "month",
  "27": "Ah",
  "28": "byte",
  "29": "m/s",
  "30": "Vah",
};

/**
 * Spec 2.3, "Value type codes", named as docs/schema.md's tag `type` names them ("continous" is
 * `continuous`, "cumulative with reset every day" is `cumulative_daily_reset`).
 */
const TYPES: Readonly<Record<string, string>> = {
  "00": "continuous",
  "01": "pulse",
  "02": "digital",
  "03": "text",
  "04": "cumulative",
  "05": "cumulative_daily_reset",
  "06": "status",
};

/** The counter types of docs/schema.md's rollups. */
export const COUNTER_TYPES: readonly string[] = ["cumulative", "cumulative_daily_reset"];

/** How one value id is stored (docs/schema.md "Points"), before names are made storable. */
export interface IdShape {
  readonly measurement: string;
  readonly type: string;
  readonly unit: string;
  /** The field a number goes to: `value`, or the alarm ids' own. */
  readonly field: "value" | "alarm_index" | "alarm_name";
}

const own = (table: Readonly<Record<string, string>>, code: string): string | undefined =>
  Object.hasOwn(table, code) ? table[code] : undefined;

const isDigits = (text: string | undefined, n: number): boolean =>
  text !== undefined && text.length === n && [...text].every((c) => c >= "0" && c <= "9");

/** A coded value id's point, with the three-digit values id it carries. */
export interface CodedShape extends IdShape {
  readonly valuesId: string;
  /** Whether every code is one of spec 2.3's tables (else the type or unit says `unknown_`). */
  readonly known: boolean;
}

/**
 * `e_PP_UU_TT_VVV_name` (spec 2.3): the letter e, two-digit prefix, unit and type codes, a
 * three-digit values id, and a name (everything after, underscores included, never empty);
 * undefined for an id of another form.
 */
export function codedShape(id: string): CodedShape | undefined {
  const [e, prefix, unit, type, valuesId, ...rest] = id.split("_");
  const name = rest.join("_");
  if (e !== "e" || rest.length === 0 || name === "") return undefined;
  if (!isDigits(prefix, 2) || !isDigits(unit, 2) || !isDigits(type, 2) || !isDigits(valuesId, 3))
    return undefined;
  const p = own(PREFIXES, prefix ?? "");
  const u = own(UNITS, unit ?? "");
  const t = own(TYPES, type ?? "");
  return {
    measurement: name,
    type: t ?? `unknown_${type}`,
    unit: p === undefined || u === undefined ? `unknown_${prefix}_${unit}` : p + u || "none",
    field: "value",
    valuesId: valuesId ?? "",
    known: p !== undefined && u !== undefined && t !== undefined,
  };
}

/** A value id's point (docs/schema.md); undefined for `values_id`, which is a tag, never a point. */
export function idShape(id: string): IdShape | undefined {
  if (id === "values_id") return undefined;
  if (id === "alarm_index" || id === "alarm_name")
    return { measurement: "alarm", type: "alarm", unit: "none", field: id };
  if (id === "protocol_id") return { measurement: id, type: "meta", unit: "none", field: "value" };
  const c = codedShape(id);
  if (c === undefined) return { measurement: id, type: "unknown", unit: "none", field: "value" };
  return { measurement: c.measurement, type: c.type, unit: c.unit, field: c.field };
}

/** The values_id tag: absent, null or blank is `none`; a whole number is padded to three digits. */
export function valuesIdTag(member: unknown): string {
  const text = member === undefined || member === null ? "" : String(member).trim();
  if (text === "") return "none";
  return isDigits(text, text.length) ? text.padStart(3, "0") : text;
}

/** A decimal number with optional sign and exponent, spaces around allowed. */
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** The finite number a string holds (docs/schema.md: it goes to `value`), else undefined. */
export function numberIn(text: string): number | undefined {
  const trimmed = text.trim();
  const n = Number(trimmed);
  return DECIMAL.test(trimmed) && Number.isFinite(n) ? n : undefined;
}

/** A tag value or name as InfluxDB holds it: line breaks and tabs are spaces, backslashes slashes. */
export const safeName = (text: string): string =>
  [...text]
    .map((c) => (c === "\n" || c === "\r" || c === "\t" ? " " : c === "\\" ? "/" : c))
    .join("");

/** A measurement as InfluxDB holds it: as {@link safeName}, `_` when empty, `_` before a `#`. */
export function safeMeasurement(name: string): string {
  const safe = safeName(name);
  if (safe === "") return "_";
  return safe[0] === "#" ? `_${safe}` : safe;
}

/**
 * A stored measurement (as {@link safeMeasurement} gives it) written in line protocol: InfluxDB's
 * line-protocol reference escapes commas and spaces in a measurement with a backslash.
 */
export const lineMeasurement = (stored: string): string => stored.replace(/[, ]/g, "\\$&");

/** A stored tag key or value written in line protocol: commas, equals signs and spaces escaped. */
export const lineTag = (stored: string): string => stored.replace(/[,= ]/g, "\\$&");

const SECONDS_PER_REQUEST = 7 * 86_400;
const VALUES_PER_REQUEST = 20;

/** One GET /data request of the fewest the limits allow. */
export interface OracleRequest {
  /** Its position in the plan: the earliest window's groups first. */
  readonly index: number;
  readonly values: readonly string[];
  readonly fromS: number;
  readonly toS: number;
}

/** The value groups of a request: the distinct ids but `values_id` (a tag), sorted, 20 to a group. */
export function groupsOf(valueIds: readonly string[]): string[][] {
  const ids = [...new Set(valueIds)].filter((v) => v !== "values_id").sort();
  const groups: string[][] = [];
  ids.forEach((id, i) => {
    if (i % VALUES_PER_REQUEST === 0) groups.push([]);
    groups[groups.length - 1]?.push(id);
  });
  return groups;
}

/**
 * The requests that fetch `valueIds` over `[fromS, toS]` (both inclusive): each of
 * {@link groupsOf} over each window, windows whose `to - from` is at most 7 days, gapless.
 */
export function requestsFor(
  valueIds: readonly string[],
  fromS: number,
  toS: number,
): OracleRequest[] {
  const groups = groupsOf(valueIds);
  const requests: OracleRequest[] = [];
  for (let start = fromS; start <= toS; start += SECONDS_PER_REQUEST + 1) {
    const end = Math.min(start + SECONDS_PER_REQUEST, toS);
    for (const values of groups)
      requests.push({ index: requests.length, values, fromS: start, toS: end });
  }
  return requests;
}

/** How many requests {@link requestsFor} makes for `valueCount` distinct ids, by arithmetic. */
export function requestCount(valueCount: number, fromS: number, toS: number): number {
  const windows = toS < fromS ? 0 : Math.ceil((toS - fromS + 1) / (SECONDS_PER_REQUEST + 1));
  return Math.ceil(valueCount / VALUES_PER_REQUEST) * windows;
}

/**
 * The fewest data requests one window of every resource of the fleet takes (as the API lists
 * them at `atS`, when given): one per value group of {@link groupsOf}.
 */
export function fleetGroupCount(fleet: SimulatedFleet, atS?: number): number {
  let total = 0;
  for (const device of fleet.deviceIds()) {
    for (const resource of fleet.resourceIds(device, atS) ?? [])
      total += groupsOf(fleet.valueIds(device, resource, atS) ?? []).length;
  }
  return total;
}
