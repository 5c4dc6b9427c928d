/** ROLLUP_TIME_ZONES by canonical name: one `tz` tag per zone, whatever the spelling and Node. */

/**
 * Zones that Node's ICU (CLDR ids never change) lists under a former IANA name, with their
 * current one (Node 20 lists Asia/Calcutta, a newer ICU Asia/Kolkata): both become the current.
 */
export const RENAMED_ZONES: Readonly<Record<string, string>> = {
  "Africa/Asmera": "Africa/Asmara",
  "America/Buenos_Aires": "America/Argentina/Buenos_Aires",
  "America/Catamarca": "America/Argentina/Catamarca",
  "America/Coral_Harbour": "America/Atikokan",
  "America/Cordoba": "America/Argentina/Cordoba",
  "America/Godthab": "America/Nuuk",
  "America/Indianapolis": "America/Indiana/Indianapolis",
  "America/Jujuy": "America/Argentina/Jujuy",
  "America/Louisville": "America/Kentucky/Louisville",
  "America/Mendoza": "America/Argentina/Mendoza",
  "Asia/Calcutta": "Asia/Kolkata",
  "Asia/Katmandu": "Asia/Kathmandu",
  "Asia/Rangoon": "Asia/Yangon",
  "Asia/Saigon": "Asia/Ho_Chi_Minh",
  "Atlantic/Faeroe": "Atlantic/Faroe",
  "Europe/Kiev": "Europe/Kyiv",
  "Pacific/Enderbury": "Pacific/Kanton",
  "Pacific/Ponape": "Pacific/Pohnpei",
  "Pacific/Truk": "Pacific/Chuuk",
};

/** Every canonical name by its lower case: Intl's zones (renamed ones by their new name), UTC. */
function canonicalNames(): ReadonlyMap<string, string> {
  const names = new Map<string, string>();
  const add = (name: string): void => {
    const current = RENAMED_ZONES[name] ?? name;
    names.set(name.toLowerCase(), current);
    names.set(current.toLowerCase(), current);
  };
  for (const name of Intl.supportedValuesOf("timeZone")) add(name);
  for (const name of Object.keys(RENAMED_ZONES)) add(name);
  add("UTC");
  return names;
}

let canonical: ReadonlyMap<string, string> | undefined;

/** The zone Intl resolves `name` to (any case), or undefined when Intl does not know it. */
function resolved(name: string): string | undefined {
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/**
 * `name` (any case) as its IANA name (`Asia/Calcutta` -> `Asia/Kolkata`, `GMT` -> `UTC`), or, for
 * another alias (`CET`) or an unknown name, the problem with it.
 */
export function canonicalTimeZone(
  name: string,
): { readonly zone: string } | { readonly problem: string } {
  canonical ??= canonicalNames();
  const lower = name.toLowerCase();
  const known = canonical.get(lower);
  if (known !== undefined) return { zone: known };
  const zone = resolved(name);
  if (zone === undefined) return { problem: `${name} is not a time zone (such as Europe/Berlin)` };
  if (zone === "UTC" || zone.toLowerCase() === lower) return { zone };
  const instead = canonical.get(zone.toLowerCase()) ?? zone;
  return { problem: `${name} is another name of ${instead}: write ${instead}` };
}
