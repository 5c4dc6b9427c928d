import type { Logger } from "pino";
import { UNIT_PREFIXES, UNITS, VALUE_TYPES } from "./units.js";

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
  /** How it is read: coded (`e_PP_UU_TT_VVV_name`), a meta or alarm id, or anything else. */
  readonly kind: "coded" | "values_id" | "protocol_id" | "alarm" | "uncoded";
  /** Measurement: a coded id's name, "alarm" for the alarm ids, "" for values_id, else the id. */
  readonly measurement: string;
  /**
   * Tag `unit`: prefix + unit symbol ("kWh" for 03+07), "none" when both are none or the id is not
   * coded; `unknown_<prefix>_<unit>` when either code is unknown (a symbol "k?" would mislead).
   */
  readonly unit: string;
  /** Tag `type`: the type's name ("unknown_42" if not in the table), "alarm", "meta", "unknown". */
  readonly type: string;
  /** The field of the alarm ids; for others numbers go to field "value", strings to "text". */
  readonly field?: "alarm_index" | "alarm_name";
  /** Present for coded ids: the raw segments. */
  readonly codes?: ValueIdCodes;
  /** Codes that are not in the spec's tables, e.g. ["unit 99", "type 42"]. */
  readonly unknownCodes: readonly string[];
}

/**
 * `e_PP_UU_TT_VVV_name`: ASCII digits only, the name is everything after the fifth underscore. The
 * codes have fixed widths, so a matching id's segments are at fixed places (see decodeValueId).
 */
const CODED = /^e_[0-9]{2}_[0-9]{2}_[0-9]{2}_[0-9]{3}_[\s\S]/;

const NO_UNKNOWN: readonly string[] = Object.freeze([]);

function decodeCoded(id: string, codes: ValueIdCodes): DecodedValueId {
  const prefixSymbol = UNIT_PREFIXES.get(codes.prefix);
  const unitSymbol = UNITS.get(codes.unit);
  const typeName = VALUE_TYPES.get(codes.type);
  const unknown: string[] = [];
  if (prefixSymbol === undefined) unknown.push(`prefix ${codes.prefix}`);
  if (unitSymbol === undefined) unknown.push(`unit ${codes.unit}`);
  if (typeName === undefined) unknown.push(`type ${codes.type}`);
  const unit =
    prefixSymbol === undefined || unitSymbol === undefined
      ? `unknown_${codes.prefix}_${codes.unit}`
      : `${prefixSymbol}${unitSymbol}` || "none";
  return Object.freeze({
    id,
    kind: "coded",
    measurement: codes.name,
    unit,
    type: typeName ?? `unknown_${codes.type}`,
    codes: Object.freeze({ ...codes }),
    unknownCodes: unknown.length === 0 ? NO_UNKNOWN : Object.freeze(unknown),
  });
}

/** An id that is not coded (unit "none"), its members in the order `decode --json` prints. */
function uncoded(
  id: string,
  kind: DecodedValueId["kind"],
  measurement: string,
  type: string,
  field?: DecodedValueId["field"],
): DecodedValueId {
  const fixed = field === undefined ? {} : { field };
  return Object.freeze({
    id,
    kind,
    measurement,
    unit: "none",
    type,
    ...fixed,
    unknownCodes: NO_UNKNOWN,
  });
}

/**
 * Decodes one value id (spec 2.3): pure, uncached, never throws, logs nothing. Ids that are not
 * exactly `e_PP_UU_TT_VVV_name` nor a meta or alarm id are "uncoded".
 */
export function decodeValueId(id: string): DecodedValueId {
  if (id === "values_id") return uncoded(id, "values_id", "", "meta");
  if (id === "protocol_id") return uncoded(id, "protocol_id", id, "meta");
  if (id === "alarm_index" || id === "alarm_name")
    return uncoded(id, "alarm", "alarm", "alarm", id);
  if (!CODED.test(id)) return uncoded(id, "uncoded", id, "unknown");
  return decodeCoded(id, {
    prefix: id.slice(2, 4),
    unit: id.slice(5, 7),
    type: id.slice(8, 10),
    valuesId: id.slice(11, 14),
    name: id.slice(15),
  });
}

/** Decodes ids, cached per id (a small, fixed set); warns once per id with unknown codes. */
export class ValueIdDecoder {
  /** Number of distinct ids seen with unknown codes. */
  unknownCodeIds = 0;
  private readonly cache = new Map<string, DecodedValueId>();

  constructor(private readonly logger?: Logger) {}

  /** The decoded id, from the cache after the first call. Never throws. */
  decode(id: string): DecodedValueId {
    const cached = this.cache.get(id);
    if (cached) return cached;
    const decoded = decodeValueId(id);
    this.cache.set(id, decoded);
    if (decoded.unknownCodes.length > 0) {
      this.unknownCodeIds += 1;
      this.logger?.warn(
        { valueId: id, unknownCodes: decoded.unknownCodes, unit: decoded.unit, type: decoded.type },
        "value id has codes that are not in the spec's tables; written with unknown_* tags",
      );
    }
    return decoded;
  }
}
