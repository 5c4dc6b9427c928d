/**
 * The `sites` of the config file: an optional description per device (peak power, display name,
 * site group). Config file only: a map by device id has no place in one variable or flag.
 */
import { z } from "zod";
import { textProblem } from "../util/input-text.js";
import { checked } from "./values.js";

/**
 * Largest peak power accepted, in kWp (a 10 GWp plant): above it, a unit mistake (Wp). A Wp value
 * below it (9800 for 9.8 kWp) is also a plant's kWp: `doctor` tells them apart by the data
 * (src/cli/doctor/site-checks.ts).
 */
export const MAX_KWP = 10_000_000;

/** Text a user gives: no control character (see {@link textProblem}), not blank. */
const text = (max: number) =>
  checked(
    z
      .string()
      .trim()
      .min(1, "must not be empty (leave it out instead)")
      .max(max, `must be at most ${max} characters`),
    textProblem,
  );

export const siteSchema = z
  .object(
    {
      kwp: z
        .number('must be a JSON number of kWp (write 9.8, not "9.8")')
        .positive("must be above 0 kWp (leave it out when unknown)")
        .max(MAX_KWP, `must be at most ${MAX_KWP} kWp (in kWp, not Wp)`)
        .optional()
        .describe("Peak power of the site's solar generator in kWp: specific yield is kWh per kWp"),
      name: text(200)
        .optional()
        .describe("Display name of the site (the dashboards' site table); default: the device id"),
      group: text(100)
        .optional()
        .describe("Site group (a region, a customer, a portfolio), written as tag `group`"),
    },
    'must be an object: {"kwp": 9.8, "name": "…", "group": "…"}, each optional',
  )
  .strict();

export type Site = z.output<typeof siteSchema>;

/** `sites`: by device id (as the API lists it), each device's site; none by default. */
export const sitesSchema = z
  .record(
    checked(z.string().min(1, "a device id must not be empty"), (value) => {
      const problem = textProblem(value);
      return problem && `a device id ${problem}`;
    }),
    siteSchema,
  )
  .default({})
  .describe(
    "Sites by device id: peak power (`kwp`), display name (`name`), site group (`group`); " +
      "config file only",
  );

export type Sites = z.output<typeof sitesSchema>;

/** The configured site of `deviceId`, if any (an own key: never a prototype's). */
export function siteOf(sites: Sites, deviceId: string): Site | undefined {
  return Object.hasOwn(sites, deviceId) ? sites[deviceId] : undefined;
}
