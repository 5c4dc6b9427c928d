import { z } from "zod";
import { resolveSyncStart } from "../config/values.js";
import { type FutureRule, instantProblem, rangeProblem } from "../util/time-bounds.js";
import { parseTimeSpec, TIME_SPEC_FORMS } from "../util/utc-time.js";
import { devicesOption } from "./options.js";

/** A time option in SYNC_START's grammar; from 1970 up to now, or as `future` says (`--to`). */
export function instantOption(flag: string, future: FutureRule = "not-after-now") {
  return z.string().transform((text, ctx) => {
    const spec = parseTimeSpec(text);
    const now = new Date();
    const at = spec && resolveSyncStart(spec, now);
    const problem = at
      ? instantProblem(flag, text, at, now, future)
      : `${flag}: expected ${TIME_SPEC_FORMS}, got ${JSON.stringify(text)}`;
    if (at && problem === undefined) return at;
    ctx.addIssue({ code: "custom", message: problem ?? "" });
    return z.NEVER;
  });
}

/** `--to`: up to a day after now is taken (and stops at now). */
export const toOption = () => instantOption("--to", "a-day-ahead");

/** `--device`, `--from`, `--to` (default now) and `--yes` of a command over a range of days. */
export const rangeOptions = {
  device: devicesOption,
  from: instantOption("--from"),
  to: toOption().default(() => new Date()),
  yes: z.boolean().optional(),
};

/** With `--from`: not after `--to` (default now), nor 10 years before it unless `--yes`. */
export function boundedRange<T extends { from?: Date; to?: Date; yes?: boolean }>(
  options: z.ZodType<T>,
) {
  return options.superRefine((o, ctx) => {
    if (o.from === undefined) return;
    const to = o.to ?? new Date();
    const problem =
      o.from.getTime() > to.getTime()
        ? "--from must not be after --to"
        : rangeProblem(o.from, to, o.yes === true);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });
}
