import { z } from "zod";
import { textProblem } from "../util/input-text.js";
import { UsageError } from "./io.js";

/** A flag's value that names something: `what` is what it takes (`a device id`). */
export function nameOption(flag: string, what: string) {
  return z.string().superRefine((value, ctx) => {
    const problem = value.trim() === "" ? `must not be empty: give ${what}` : textProblem(value);
    if (problem) ctx.addIssue({ code: "custom", message: `${flag} ${problem}` });
  });
}

export const devicesOption = z.array(nameOption("--device", "a device id")).optional();

/** `-o, --output <file>`: a file for line protocol, or `-` for stdout. */
export const outputOption = nameOption("--output", "a file, or - for stdout").optional();

/** A whole number of `flag` from `min` to `max`, from the flag's text. */
export function countOption(flag: string, min: number, max: number) {
  const message = `${flag} must be a whole number from ${min} to ${max}`;
  return z
    .string()
    .regex(/^\s*\d+\s*$/, message)
    .transform(Number)
    .pipe(z.number().int(message).min(min, message).max(max, message));
}

/** A command's argument that names something (`<device>`), checked as {@link nameOption} does. */
export function nameArgument(what: string, value: string): string {
  const problem = value.trim() === "" ? "must not be empty" : textProblem(value);
  if (problem) throw new UsageError(`${what} ${problem}`, { pointAtHelp: true });
  return value;
}
