import cron from "node-cron";
import { z } from "zod";
import { isTimeZone } from "../rollups/buckets.js";
import {
  formatIsoDuration,
  type IsoDuration,
  parseIsoDuration,
  subtractDuration,
} from "../util/iso-duration.js";
import { parseTimeSpec, TIME_SPEC_FORMS, type TimeSpec } from "../util/utc-time.js";

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
 * A comma-separated list of IANA time zones (`UTC,Europe/Berlin`), each one Intl knows; kept as
 * text, the list in the order given, without repeats ({@link timeZonesOf}).
 */
export const timeZoneList = z
  .string()
  .trim()
  .superRefine((s, ctx) => {
    const zones = timeZonesOf(s);
    if (zones.length === 0) ctx.addIssue({ code: "custom", message: "must name a time zone" });
    for (const zone of zones) {
      if (!isTimeZone(zone)) {
        ctx.addIssue({
          code: "custom",
          message: `${zone} is not a time zone (such as Europe/Berlin)`,
        });
      }
    }
  });

/** The time zones of a {@link timeZoneList}. */
export function timeZonesOf(list: string): string[] {
  return [
    ...new Set(
      list
        .split(",")
        .map((z) => z.trim())
        .filter((z) => z !== ""),
    ),
  ];
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
