import { z } from "zod";
import { subtractDuration } from "../util/iso-duration.js";
import { parseTimeSpec, TIME_SPEC_FORMS } from "../util/utc-time.js";

/**
 * A CLI time option: an ISO date or date-time (UTC unless a zone is given), `now`, or a time
 * before now as a duration (`P30D`, `PT6H`) or as `-30d` / `-12h` / `-90m`: the grammar of
 * SYNC_START too ({@link parseTimeSpec}).
 */
export function instantOption(flag: string) {
  return z.string().transform((text, ctx) => {
    const spec = parseTimeSpec(text);
    if (!spec) {
      ctx.addIssue({
        code: "custom",
        message: `${flag}: expected ${TIME_SPEC_FORMS}, got ${JSON.stringify(text)}`,
      });
      return z.NEVER;
    }
    return spec.kind === "at" ? spec.at : subtractDuration(new Date(), spec.duration);
  });
}

/** `--device`, `--from` and `--to` (default now) of a command over a range of days. */
export const rangeOptions = {
  device: z.array(z.string().min(1)).optional(),
  from: instantOption("--from"),
  to: instantOption("--to").default(() => new Date()),
};

/** A range's one rule: `--from` not after `--to`. */
export function fromNotAfterTo<T extends { readonly from: Date; readonly to: Date }>(
  options: z.ZodType<T>,
) {
  return options.refine((o) => o.from.getTime() <= o.to.getTime(), "--from must not be after --to");
}
