import { isIP } from "node:net";
import { z } from "zod";
import {
  durationMs,
  formatIsoDuration,
  type IsoDuration,
  parseIsoDuration,
  subtractDuration,
} from "../util/iso-duration.js";
import { EARLIEST, EARLIEST_TEXT, MAX_RANGE } from "../util/time-bounds.js";
import { parseTimeSpec, TIME_SPEC_FORMS, type TimeSpec } from "../util/utc-time.js";
import { CRON_EXAMPLE, cronProblem, normalizeCron } from "./cron.js";
import { withBounds } from "./setting.js";
import { canonicalTimeZone } from "./time-zones.js";

export type SettingValue = string | number | boolean | IsoDuration | TimeSpec;

/** The branches of a union for the text of a variable or flag, left out of config/schema.json. */
export const TEXT_BRANCHES = new WeakSet<object>();

function textOnly<S extends z.ZodType>(schema: S): S {
  TEXT_BRANCHES.add(schema);
  return schema;
}

/** A number from JSON, or from the text of a variable or flag when it matches `form`. */
const numberOrText = (form: RegExp, message: string) =>
  z.union([z.number(), textOnly(z.string().trim().regex(form, message))]).transform(Number);

export const int = (min: number, max: number) =>
  numberOrText(/^-?\d+$/, "must be a whole number").pipe(
    z.number().int("must be a whole number").min(min).max(max),
  );

export const positiveNumber = (max: number) =>
  numberOrText(/^\d+(\.\d+)?$/, "must be a positive number").pipe(z.number().positive().max(max));

/** `schema`, refusing a value that `problemOf` finds a problem with (the problem as message). */
export function checked<S extends z.ZodType<string>>(
  schema: S,
  problemOf: (value: string) => string | undefined,
): S {
  return schema.superRefine((value, ctx) => {
    const problem = problemOf(value);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });
}

/** true/false, also as the words true, 1, yes, false, 0, no (any case). */
export const bool = z.union([z.boolean(), textOnly(z.string())]).transform((value, ctx) => {
  if (typeof value === "boolean") return value;
  const word = value.trim().toLowerCase();
  if (["true", "1", "yes"].includes(word)) return true;
  if (!["false", "0", "no"].includes(word))
    ctx.addIssue({ code: "custom", message: "must be true or false" });
  return false;
});

/** An http(s) URL or "" (unset), without credentials (logged with it): `credentials` says where. */
export const optionalUrl = (credentials: string) =>
  checked(z.string().trim(), (s) => (s === "" ? undefined : urlProblem(s, credentials)));

/** What is wrong with `text` as an http(s) URL without credentials; never the value (a secret?). */
export function urlProblem(text: string, credentials: string): string | undefined {
  const url = /^https?:\/\/[^\s/]/i.test(text) && URL.canParse(text) ? new URL(text) : undefined;
  if (!url) {
    const hint = !/^[a-z][a-z\d+.-]*:\/\//i.test(text)
      ? "http:// or https:// is missing in front"
      : /^https?:/i.test(text)
        ? "not a valid URL"
        : "only http and https are supported";
    return `must be an http(s) URL such as http://host:port (${hint})`;
  }
  if (url.username !== "" || url.password !== "") {
    return `must not hold credentials (${url.protocol}//***@${url.host}): ${credentials}`;
  }
  return undefined;
}

export const isoDuration = z.string().transform((s, ctx) => {
  const parsed = parseIsoDuration(s);
  if (!parsed) {
    ctx.addIssue({ code: "custom", message: "must be an ISO 8601 duration such as PT1H or P7D" });
    return z.NEVER;
  }
  return parsed;
});

/** An ISO 8601 duration from `min` to `max` (a month counts 30 days, a year 365). */
export function boundedDuration(min: string, max: string) {
  const [low, high] = [min, max].map((text) => {
    const parsed = parseIsoDuration(text);
    if (!parsed) throw new Error(`boundedDuration: ${text} is no ISO 8601 duration`);
    return durationMs(parsed);
  });
  const schema = isoDuration.superRefine((duration, ctx) => {
    const ms = durationMs(duration);
    if (ms < (low ?? 0) || ms > (high ?? 0)) {
      const given = formatIsoDuration(duration);
      ctx.addIssue({ code: "custom", message: `must be from ${min} to ${max}, not ${given}` });
    }
  });
  return withBounds(schema, `\`${min}\` to \`${max}\``);
}

/** What is wrong with a SYNC_START, or undefined: before 1970, after now, too long before now. */
function syncStartProblem(spec: TimeSpec, now: Date): string | undefined {
  if (spec.kind === "ago") {
    if (durationMs(spec.duration) <= durationMs(MAX_RANGE)) return undefined;
    const longest = formatIsoDuration(MAX_RANGE);
    return `must be at most ${longest} before now, not ${formatIsoDuration(spec.duration)}`;
  }
  const at = spec.at.toISOString().replace(".000Z", "Z");
  if (spec.at.getTime() < EARLIEST.getTime()) return `must not be before ${EARLIEST_TEXT} (${at})`;
  if (spec.at.getTime() > now.getTime()) return `must not be in the future (${at})`;
  return undefined;
}

/** SYNC_START, in the grammar of `--from`: an instant from 1970 to now, or at most 10 years ago. */
export const syncStart = withBounds(
  z.string().transform((s, ctx): TimeSpec => {
    const spec = parseTimeSpec(s);
    const problem = spec ? syncStartProblem(spec, new Date()) : `must be ${TIME_SPEC_FORMS}`;
    if (spec && problem === undefined) return spec;
    ctx.addIssue({ code: "custom", message: problem });
    return z.NEVER;
  }),
  `an instant from \`${EARLIEST_TEXT.slice(0, 10)}\` to now, or at most ` +
    `\`${formatIsoDuration(MAX_RANGE)}\` before now`,
);

/** A comma-separated list of time zones, each once by its canonical name, kept as text. */
export const timeZoneList = z.string().transform((s, ctx) => {
  const zones: string[] = [];
  let refused = false;
  for (const name of timeZonesOf(s)) {
    const found = canonicalTimeZone(name);
    if ("problem" in found) {
      ctx.addIssue({ code: "custom", message: found.problem });
      refused = true;
    } else if (!zones.includes(found.zone)) {
      zones.push(found.zone);
    }
  }
  if (refused) return z.NEVER;
  if (zones.length === 0) {
    ctx.addIssue({ code: "custom", message: "must name a time zone" });
    return z.NEVER;
  }
  return zones.join(",");
});

export function timeZonesOf(list: string): string[] {
  return list
    .split(",")
    .map((z) => z.trim())
    .filter((z) => z !== "");
}

export function rollupBucketProblem(bucket: string): string | undefined {
  const form = "must be <database>/<retention policy> such as energy/rollups";
  const parts = bucket.split("/");
  if (parts.length === 1) return `${form} (the / is missing)`;
  if (parts.length > 2) return `${form} (${bucket} has more than one /)`;
  if (parts[0] === "") return `${form} (the database is empty)`;
  if (parts[1] === "") return `${form} (the retention policy is empty)`;
  return undefined;
}

/** ROLLUP_BUCKET: "" (beside the raw points) or `database/retention-policy`. */
export const rollupBucket = checked(z.string().trim(), (s) =>
  s === "" ? undefined : rollupBucketProblem(s),
);

/** A bucket's database and retention policy: `energy/rollups`, `energy` (no policy: the default). */
export function databaseAndPolicy(bucket: string): { database: string; retentionPolicy?: string } {
  const [database = "", retentionPolicy] = bucket.split("/");
  return retentionPolicy === undefined ? { database } : { database, retentionPolicy };
}

/** A cron expression of five fields node-cron runs ({@link cronProblem}), normalized. */
export const cronExpression = withBounds(
  checked(z.string().transform(normalizeCron), cronProblem),
  `five fields (minute hour day-of-month month day-of-week, no seconds): at most once a ` +
    `minute, such as \`${CRON_EXAMPLE}\`, or \`@hourly\``,
);

/** A name (a path, an id): not empty, not only spaces. */
export const requiredName = z
  .string()
  // abort: "" is said once (zod runs the next check after a failed one otherwise)
  .min(1, { message: "must not be empty", abort: true })
  .refine((s) => s.trim() !== "", "must not be empty");

/** What is wrong with `text` as a host name or an IP address to listen on, or undefined. */
export function hostProblem(text: string): string | undefined {
  const form = "must be a host name or an IP address such as 127.0.0.1, 0.0.0.0 or ::1";
  if (text.trim() === "") return "must not be empty";
  if (isIP(text) !== 0) return undefined;
  if (/^\[.*\]$/.test(text)) return `${form} (an IPv6 address without brackets)`;
  const labels = text.replace(/\.$/, "").split(".");
  const label = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i;
  const ok = text.length <= 253 && labels.every((l) => label.test(l));
  // all digits and dots is a broken IPv4 address (999.1.1.1), not a name
  return ok && !/^[\d.]+$/.test(text) ? undefined : form;
}

export const hostName = withBounds(
  checked(z.string().trim(), hostProblem),
  "a host name or an IP address",
);

/** A secret that goes into an HTTP header as it is: only characters a header can carry. */
export const headerSecret = z.string().refine(
  // biome-ignore lint/suspicious/noControlCharactersInRegex: those are what it refuses
  (s) => !/[\u0000-\u001f\u007f]|[^\u0000-\u00ff]/.test(s),
  "holds a character an HTTP header cannot carry (a line break, a control character or one " +
    "beyond Latin-1); the value is not shown",
);

/** ENERGY_API_USER: no colon (Basic authentication puts one between user and password). */
export const apiUser = z
  .string()
  .refine(
    (s) => !s.includes(":"),
    "must not hold a colon: Basic authentication separates the user from the password with it",
  );

/** The instant a device without a watermark starts syncing from. */
export function resolveSyncStart(start: TimeSpec, now: Date): Date {
  return start.kind === "at" ? start.at : subtractDuration(now, start.duration);
}

/** A parsed value as the config file writes it: durations and start instants as ISO text. */
export function printValue(value: SettingValue): string | number | boolean {
  if (typeof value !== "object") return value;
  if (!("kind" in value)) return formatIsoDuration(value);
  return value.kind === "at" ? value.at.toISOString() : formatIsoDuration(value.duration);
}
