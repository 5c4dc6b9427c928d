import cron from "node-cron";
import { z } from "zod";
import {
  formatIsoDuration,
  type IsoDuration,
  parseIsoDuration,
  subtractDuration,
} from "../util/iso-duration.js";
import { parseTimeSpec, TIME_SPEC_FORMS, type TimeSpec } from "../util/utc-time.js";
import { canonicalTimeZone } from "./time-zones.js";

/** Where a device without a watermark starts: a fixed instant, or a duration back from now. */
export type SyncStart = TimeSpec;

/** What a setting holds once parsed. */
export type SettingValue = string | number | boolean | IsoDuration | SyncStart;

/** A whole number in `min..max`, from JSON or from the text of a variable or flag. */
export const int = (min: number, max: number) =>
  z
    .union([
      z.number(),
      z
        .string()
        .trim()
        .regex(/^-?\d+$/, "must be a whole number"),
    ])
    .transform(Number)
    .pipe(z.number().int("must be a whole number").min(min).max(max));

/** A number above 0 and at most `max`, from JSON or text. */
export const positiveNumber = (max: number) =>
  z
    .union([
      z.number(),
      z
        .string()
        .trim()
        .regex(/^\d+(\.\d+)?$/, "must be a positive number"),
    ])
    .transform(Number)
    .pipe(z.number().positive().max(max));

const TRUE_WORDS = ["true", "1", "yes"];
const FALSE_WORDS = ["false", "0", "no"];

/** true/false, also as the words true, 1, yes, false, 0, no (any case). */
export const bool = z.union([z.boolean(), z.string()]).transform((value, ctx) => {
  if (typeof value === "boolean") return value;
  const word = value.trim().toLowerCase();
  if (TRUE_WORDS.includes(word)) return true;
  if (!FALSE_WORDS.includes(word))
    ctx.addIssue({ code: "custom", message: "must be true or false" });
  return false;
});

/** `text` as a URL when it parses, else undefined. */
function parseUrl(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

/**
 * An http(s) URL, or "" (unset). One message per problem, never with the value itself (it may be
 * a secret set in the wrong variable). A URL with credentials (`https://user:pass@host`) is
 * refused, `credentials` saying where they belong: they would be printed and logged with the
 * URL, and a client would send them instead of its own Authorization header.
 */
export const optionalUrl = (credentials: string) =>
  z
    .string()
    .trim()
    .superRefine((s, ctx) => {
      if (s === "") return;
      const problem = urlProblem(s, credentials);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    });

/**
 * What is wrong with `text` as an http(s) URL without credentials, or undefined; never repeats
 * the value. `credentials` says where a user and password belong instead.
 */
export function urlProblem(text: string, credentials: string): string | undefined {
  const url = /^https?:\/\/[^\s/]/i.test(text) ? parseUrl(text) : undefined;
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

/** An ISO 8601 duration (`PT1H`, `P7D`). */
export const isoDuration = z.string().transform((s, ctx) => {
  const parsed = parseIsoDuration(s);
  if (!parsed) {
    ctx.addIssue({ code: "custom", message: "must be an ISO 8601 duration such as PT1H or P7D" });
    return z.NEVER;
  }
  return parsed;
});

/** SYNC_START: the grammar of `--from` ({@link parseTimeSpec}). */
export const syncStart = z.string().transform((s, ctx): SyncStart => {
  const spec = parseTimeSpec(s);
  if (spec) return spec;
  ctx.addIssue({ code: "custom", message: `must be ${TIME_SPEC_FORMS}` });
  return z.NEVER;
});

/**
 * A comma-separated list of time zones (`UTC,Europe/Berlin`), each by its canonical IANA name
 * ({@link canonicalTimeZone}: any case, `utc` -> `UTC`); kept as text, in the order given, each
 * zone once (a repeat after canonicalisation is dropped). An unknown name or an alias is refused,
 * named.
 */
export const timeZoneList = z.string().transform((s, ctx) => {
  const zones: string[] = [];
  let refused = false;
  for (const name of s.split(",").map((z) => z.trim())) {
    if (name === "") continue;
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

/** The time zones of a {@link timeZoneList}'s value. */
export function timeZonesOf(list: string): string[] {
  return list
    .split(",")
    .map((z) => z.trim())
    .filter((z) => z !== "");
}

/** What is wrong with a ROLLUP_BUCKET that is set, or undefined. */
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
export const rollupBucket = z
  .string()
  .trim()
  .superRefine((s, ctx) => {
    const problem = s === "" ? undefined : rollupBucketProblem(s);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });

/** A bucket's database and retention policy: `energy/rollups`, `energy` (no policy: the default). */
export function databaseAndPolicy(bucket: string): { database: string; retentionPolicy?: string } {
  const [database = "", retentionPolicy] = bucket.split("/");
  return retentionPolicy === undefined ? { database } : { database, retentionPolicy };
}

/** A cron expression node-cron runs. */
export const cronExpression = z
  .string()
  .trim()
  .refine((s) => cron.validate(s), "must be a cron expression such as */5 * * * *");

/** The instant a device without a watermark starts syncing from. */
export function resolveSyncStart(start: SyncStart, now: Date): Date {
  return start.kind === "at" ? start.at : subtractDuration(now, start.duration);
}

/**
 * A parsed value as the config file writes it: durations as ISO text (`PT1H`), a start instant
 * as an ISO date-time, everything else as it is.
 */
export function printValue(value: SettingValue): string | number | boolean {
  if (typeof value !== "object") return value;
  if (!("kind" in value)) return formatIsoDuration(value);
  return value.kind === "at" ? value.at.toISOString() : formatIsoDuration(value.duration);
}
