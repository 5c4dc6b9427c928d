import { z } from "zod";
import { parseIsoDuration, subtractDuration } from "../util/iso-duration.js";
import { parseUtcInstant } from "../util/utc-time.js";

/** `-30d`, `-12h`, `-90m`: a shorthand for P30D, PT12H, PT90M before now. */
const SHORT_AGO = /^-(\d+)([dhm])$/i;

/**
 * A CLI time option: an ISO date or date-time (UTC unless a zone is given), `now`, or a time
 * before now as a duration (`P30D`, `PT6H`, as SYNC_START takes them) or as `-30d` / `-12h` /
 * `-90m`.
 */
export function instantOption(flag: string) {
  return z.string().transform((text, ctx) => {
    const trimmed = text.trim();
    if (trimmed.toLowerCase() === "now") return new Date();
    const short = SHORT_AGO.exec(trimmed);
    const iso = short
      ? `P${short[2]?.toLowerCase() === "d" ? "" : "T"}${short[1]}${short[2]?.toUpperCase()}`
      : trimmed.toUpperCase();
    const duration = iso.startsWith("P") ? parseIsoDuration(iso) : undefined;
    if (duration) return subtractDuration(new Date(), duration);
    const at = parseUtcInstant(trimmed);
    if (!at) {
      ctx.addIssue({
        code: "custom",
        message:
          `${flag}: expected an ISO date or date-time (UTC), "now", or a time before now ` +
          `(P30D, PT6H, -30d, -12h), got ${JSON.stringify(text)}`,
      });
      return z.NEVER;
    }
    return at;
  });
}
