import { z } from "zod";
import { parseUtcInstant } from "../util/utc-time.js";

/** A CLI time option: an ISO date or date-time (UTC unless a zone is given) or `now`. */
export function instantOption(flag: string) {
  return z.string().transform((text, ctx) => {
    if (text.trim().toLowerCase() === "now") return new Date();
    const at = parseUtcInstant(text);
    if (!at) {
      ctx.addIssue({
        code: "custom",
        message: `${flag}: expected an ISO date or date-time (UTC) or "now", got ${JSON.stringify(text)}`,
      });
      return z.NEVER;
    }
    return at;
  });
}
