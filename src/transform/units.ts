/**
 * The code tables of a coded value id (spec 2.3, "Structure of a value id"): unit prefix, unit and
 * value type, keyed by their two-digit code. Pure data; value-id.ts decodes ids with them.
 */

/**
 * Unit prefix codes -> symbol ("" for none).
 * Spec 2.3, table "Unit prefix codes".
 */
export const UNIT_PREFIXES: ReadonlyMap<string, string> = new Map([
  /** Spec 2.3 unit prefix 00: none. */
  ["00", ""],
  /** Spec 2.3 unit prefix 01: m (milli). */
  ["01", "m"],
  /** Spec 2.3 unit prefix 02: M (mega). */
  ["02", "M"],
  /** Spec 2.3 unit prefix 03: k (kilo). */
  ["03", "k"],
]);

/**
 * Unit codes -> symbol ("" for none), spelled as in the spec.
 * Spec 2.3, table "Unit codes".
 */
export const UNITS: ReadonlyMap<string, string> = new Map([
  /** Spec 2.3 unit 00: none. */
  ["00", ""],
  /** Spec 2.3 unit 01. */
  ["01", "W"],
  /** Spec 2.3 unit 02. */
  ["02", "V"],
  /** Spec 2.3 unit 03. */
  ["03", "A"],
  /** Spec 2.3 unit 04. */
  ["04", "°C"],
  /** Spec 2.3 unit 05. */
  ["05", "%"],
  /** Spec 2.3 unit 06. */
  ["06", "Hz"],
  /** Spec 2.3 unit 07. */
  ["07", "Wh"],
  /** Spec 2.3 unit 08. */
  ["08", "Varh"],
  /** Spec 2.3 unit 09. */
  ["09", "VA"],
  /** Spec 2.3 unit 10. */
  ["10", "pH"],
  /** Spec 2.3 unit 11. */
  ["11", "bar"],
  /** Spec 2.3 unit 12. */
  ["12", "W/m²"],
  /** Spec 2.3 unit 13. */
  ["13", "RPM"],
  /** Spec 2.3 unit 14. */
  ["14", "m³/h"],
  /** Spec 2.3 unit 15. */
  ["15", "var"],
  /** Spec 2.3 unit 16. */
  ["16", "h"],
  /** Spec 2.3 unit 17. */
  ["17", "Degree"],
  /** Spec 2.3 unit 18. */
  ["18", "m/Min"],
  /** Spec 2.3 unit 19. */
  ["19", "liter"],
  /** Spec 2.3 unit 20. */
  ["20", "m"],
  /** Spec 2.3 unit 21. */
  ["21", "Ohm"],
  /** Spec 2.3 unit 22. */
  ["22", "Pa"],
  /** Spec 2.3 unit 23. */
  ["23", "g"],
  /** Spec 2.3 unit 24. */
  ["24", "min"],
  /** Spec 2.3 unit 25. */
  ["25", "day"],
  /** Spec 2.3 unit 26. */
  ["26", "month"],
  /** Spec 2.3 unit 27. */
  ["27", "Ah"],
  /** Spec 2.3 unit 28. */
  ["28", "byte"],
  /** Spec 2.3 unit 29. */
  ["29", "m/s"],
  /** Spec 2.3 unit 30. */
  ["30", "Vah"],
]);

/** Name of a value type (tag `type`), snake_case. */
export type ValueTypeName =
  | "continuous"
  | "pulse"
  | "digital"
  | "text"
  | "cumulative"
  | "cumulative_daily_reset"
  | "status";

/**
 * Value type codes -> name.
 * Spec 2.3, table "Value type codes" (its "continous" spelled "continuous" here).
 */
export const VALUE_TYPES: ReadonlyMap<string, ValueTypeName> = new Map<string, ValueTypeName>([
  /** Spec 2.3 value type 00: "continous" in the spec. */
  ["00", "continuous"],
  /** Spec 2.3 value type 01. */
  ["01", "pulse"],
  /** Spec 2.3 value type 02. */
  ["02", "digital"],
  /** Spec 2.3 value type 03. */
  ["03", "text"],
  /** Spec 2.3 value type 04. */
  ["04", "cumulative"],
  /** Spec 2.3 value type 05: "cumulative with reset every day". */
  ["05", "cumulative_daily_reset"],
  /** Spec 2.3 value type 06. */
  ["06", "status"],
]);
