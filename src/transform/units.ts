/**
 * The code tables of a coded value id (spec 2.3, "Structure of a value id"): unit prefix, unit and
 * value type, keyed by their two-digit code. Pure data; value-id.ts decodes ids with them.
 */

/** Unit prefix codes -> symbol ("" for none): spec 2.3, table "Unit prefix codes". */
export const UNIT_PREFIXES: ReadonlyMap<string, string> = new Map([
  ["00", ""],
  ["01", "m"],
  ["02", "M"],
  ["03", "k"],
]);

/** Unit codes -> symbol ("" for none), spelled as in spec 2.3, table "Unit codes". */
export const UNITS: ReadonlyMap<string, string> = new Map([
  ["00", ""],
  ["01", "W"],
  ["02", "V"],
  ["03", "A"],
  ["04", "°C"],
  ["05", "%"],
  ["06", "Hz"],
  ["07", "Wh"],
  ["08", "Varh"],
  ["09", "VA"],
  ["10", "pH"],
  ["11", "bar"],
  ["12", "W/m²"],
  ["13", "RPM"],
  ["14", "m³/h"],
  ["15", "var"],
  ["16", "h"],
  ["17", "Degree"],
  ["18", "m/Min"],
  ["19", "liter"],
  ["20", "m"],
  ["21", "Ohm"],
  ["22", "Pa"],
  ["23", "g"],
  ["24", "min"],
  ["25", "day"],
  ["26", "month"],
  ["27", "Ah"],
  ["28", "byte"],
  ["29", "m/s"],
  ["30", "Vah"],
]);

/** Value type codes -> name (spec 2.3, "Value type codes"), its "continous" as "continuous". */
export const VALUE_TYPES: ReadonlyMap<string, string> = new Map([
  ["00", "continuous"],
  ["01", "pulse"],
  ["02", "digital"],
  ["03", "text"],
  ["04", "cumulative"],
  ["05", "cumulative_daily_reset"], // "cumulative with reset every day"
  ["06", "status"],
]);
