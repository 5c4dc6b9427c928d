import type { Logger } from "pino";
import { UNIT_PREFIXES, UNITS, VALUE_TYPES } from "./units.js";

/** How a value id is read: coded (`e_PP_UU_TT_VVV_name`), one of the meta/alarm ids, or anything else. */
export type ValueIdKind = "coded" | "values_id" | "protocol_id" | "alarm" | "uncoded";

/** The raw segments of a coded value id (spec 2.3, "Structure of a value id"). */
export interface ValueIdCodes {
  readonly prefix: string;
  readonly unit: string;
  readonly type: string;
  readonly valuesId: string;
  readonly name: string;
}

/** What one value id becomes in InfluxDB. */
export interface DecodedValueId {
  readonly id: string;
  readonly kind: ValueIdKind;
  /**
   * InfluxDB measurement: the name part of a coded id; "alarm" for alarm_index/alarm_name; the id
   * itself otherwise; "" for values_id (never a point, it becomes a tag).
   */
  readonly measurement: string;
  /**
   * Tag `unit`: prefix symbol + unit symbol ("kWh" for 03+07, "mA" for 01+03, "%" for 00+05, "k"
   * for 03+00), "none" when both are none or for ids that are not coded. When the prefix or the
   * unit code is not in the spec's tables: `unknown_<prefix>_<unit>` with both raw codes, e.g.
   * "unknown_03_99" (a half-known symbol such as "k?" would be misleading in a tag).
   */
  readonly unit: string;
  /**
   * Tag `type`: the type name; "unknown_42" for an unknown type code; "alarm" for
   * alarm_index/alarm_name; "meta" for protocol_id and values_id; "unknown" for other uncoded ids.
   */
  readonly type: string;
  /**
   * The fixed field name for this id, when it does not depend on the member's runtime type:
   * "alarm_index" / "alarm_name" for the alarm ids; undefined otherwise (then numbers go to field
   * "value", strings to field "text").
   */
  readonly field?: "alarm_index" | "alarm_name";
  /** Present for coded ids: the raw segments. */
  readonly codes?: ValueIdCodes;
  /** Codes that are not in the spec's tables, e.g. ["unit 99", "type 42"]; empty when all are known. */
  readonly unknownCodes: readonly string[];
}

/** `e_PP_UU_TT_VVV_name`: ASCII digits only, the name is everything after the fifth underscore. */
const CODED = /^e_([0-9]{2})_([0-9]{2})_([0-9]{2})_([0-9]{3})_([\s\S]+)$/;

const NO_UNKNOWN: readonly string[] = Object.freeze([]);

function freeze(decoded: DecodedValueId): DecodedValueId {
  return Object.freeze(decoded);
}

function decodeCoded(id: string, codes: ValueIdCodes): DecodedValueId {
  const prefixSymbol = UNIT_PREFIXES.get(codes.prefix);
  const unitSymbol = UNITS.get(codes.unit);
  const typeName = VALUE_TYPES.get(codes.type);
  const unknown: string[] = [];
  if (prefixSymbol === undefined) unknown.push(`prefix ${codes.prefix}`);
  if (unitSymbol === undefined) unknown.push(`unit ${codes.unit}`);
  if (typeName === undefined) unknown.push(`type ${codes.type}`);

  let unit: string;
  if (prefixSymbol === undefined || unitSymbol === undefined) {
    unit = `unknown_${codes.prefix}_${codes.unit}`;
  } else {
    unit = `${prefixSymbol}${unitSymbol}` || "none";
  }
  return freeze({
    id,
    kind: "coded",
    measurement: codes.name,
    unit,
    type: typeName ?? `unknown_${codes.type}`,
    codes: Object.freeze({ ...codes }),
    unknownCodes: unknown.length === 0 ? NO_UNKNOWN : Object.freeze(unknown),
  });
}

/**
 * Decodes one value id (spec 2.3): pure, uncached, never throws, logs nothing. Ids that are not
 * exactly `e_PP_UU_TT_VVV_name` (two-digit codes, three-digit values id, non-empty name) and not one
 * of values_id, protocol_id, alarm_index, alarm_name are "uncoded".
 */
export function decodeValueId(id: string): DecodedValueId {
  switch (id) {
    case "values_id":
      return freeze({
        id,
        kind: "values_id",
        measurement: "",
        unit: "none",
        type: "meta",
        unknownCodes: NO_UNKNOWN,
      });
    case "protocol_id":
      return freeze({
        id,
        kind: "protocol_id",
        measurement: "protocol_id",
        unit: "none",
        type: "meta",
        unknownCodes: NO_UNKNOWN,
      });
    case "alarm_index":
    case "alarm_name":
      return freeze({
        id,
        kind: "alarm",
        measurement: "alarm",
        unit: "none",
        type: "alarm",
        field: id,
        unknownCodes: NO_UNKNOWN,
      });
  }
  const match = CODED.exec(id);
  const [, prefix, unit, type, valuesId, name] = match ?? [];
  if (
    prefix !== undefined &&
    unit !== undefined &&
    type !== undefined &&
    valuesId !== undefined &&
    name !== undefined
  ) {
    return decodeCoded(id, { prefix, unit, type, valuesId, name });
  }
  return freeze({
    id,
    kind: "uncoded",
    measurement: id,
    unit: "none",
    type: "unknown",
    unknownCodes: NO_UNKNOWN,
  });
}

/**
 * Decodes ids and caches the result per id (the same frozen object every time); logs an id with
 * unknown codes once (warn, with the id and the unknown codes) and counts such ids. The cache is
 * unbounded: an installation has a small, fixed set of value ids.
 */
export class ValueIdDecoder {
  readonly #cache = new Map<string, DecodedValueId>();
  readonly #logger: Logger | undefined;
  #unknownCodeIds = 0;

  constructor(logger?: Logger) {
    this.#logger = logger;
  }

  /** The decoded id, from the cache after the first call. Never throws. */
  decode(id: string): DecodedValueId {
    const cached = this.#cache.get(id);
    if (cached) return cached;
    const decoded = decodeValueId(id);
    this.#cache.set(id, decoded);
    if (decoded.unknownCodes.length > 0) {
      this.#unknownCodeIds += 1;
      this.#logger?.warn(
        { valueId: id, unknownCodes: decoded.unknownCodes, unit: decoded.unit, type: decoded.type },
        "value id has codes that are not in the spec's tables; written with unknown_* tags",
      );
    }
    return decoded;
  }

  /** Number of distinct ids seen with unknown codes. */
  get unknownCodeIds(): number {
    return this.#unknownCodeIds;
  }
}
