import { z } from "zod";
import { checked, urlProblem } from "../../config/values.js";
import { registerSecret } from "../../logger.js";
import type { CommandContext } from "../context.js";
import { type CliIo, UsageError, writeLine } from "../io.js";
import { askHidden, askLine } from "../prompt.js";

const PROMPT_TRIES = 3;

/** A value `init` asks for: its flag (none for a secret, asked without echo), variable, label. */
export interface Field {
  readonly flag?: string;
  readonly env: string;
  readonly label: string;
  readonly schema: z.ZodType<string, string>;
}

/** Not empty, and on one line: no line breaks nor other control characters. */
const oneLine = (schema: z.ZodString) =>
  schema
    .min(1, "must not be empty")
    .refine((s) => !/\p{Cc}/u.test(s), "must not hold line breaks or other control characters");

/** A .env value: one line, no ' nor \ (compose reads '…' up to the first ' not after a \). */
export const envValue = (schema: z.ZodString): z.ZodType<string, string> =>
  oneLine(schema).refine(
    (s) => !/['\\]/.test(s),
    "must not hold ' or \\ (a .env file cannot hold them reliably; write it by hand)",
  );

const apiUrlSchema = checked(envValue(z.string().trim()), (s) =>
  urlProblem(
    s,
    "put the user into ENERGY_API_USER (or --user) and the password into ENERGY_API_PASSWORD",
  ),
);

export const FIELDS = {
  apiUrl: {
    flag: "--api-url",
    env: "ENERGY_API_URL",
    label: "API URL",
    schema: apiUrlSchema,
  },
  apiKey: {
    env: "ENERGY_API_KEY",
    label: "API key",
    // an HTTP header value: surrounding blanks would not reach the API anyway
    schema: envValue(z.string().trim()),
  },
  user: {
    flag: "--user",
    env: "ENERGY_API_USER",
    label: "API user",
    schema: envValue(z.string().trim()),
  },
  password: {
    env: "ENERGY_API_PASSWORD",
    label: "API password",
    schema: envValue(z.string()),
  },
  otp: {
    env: "ENERGY_API_OTP",
    label: "one-time password",
    schema: oneLine(z.string()),
  },
} satisfies Record<string, Field>;

type Origin = "flag" | "setting" | "prompt";

/** `value` checked by the field's schema, or a UsageError naming where it came from. */
export function checkValue(field: Field, value: string, origin: Origin): string {
  const parsed = field.schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const message = parsed.error.issues[0]?.message ?? "is not valid";
  const where =
    origin === "flag"
      ? (field.flag ?? field.env)
      : origin === "setting"
        ? field.env
        : `the ${field.label}`;
  throw new UsageError(`${where} ${message}`);
}

export async function askFor(
  io: CliIo,
  field: Field,
  question = `${field.label.charAt(0).toUpperCase()}${field.label.slice(1)}: `,
): Promise<string> {
  for (let tries = 1; ; tries++) {
    const secret = field.flag === undefined;
    const answer = secret ? await askHidden(io, question) : await askLine(io, question);
    if (secret) registerSecret(answer);
    try {
      return checkValue(field, answer, "prompt");
    } catch (error) {
      if (tries >= PROMPT_TRIES || !(error instanceof UsageError)) throw error;
      writeLine(io.stderr, `  ${error.message}; try again.`);
    }
  }
}

/** The flag's value, else the setting's (environment or --config), else the answer to a prompt. */
export async function resolveField(
  io: CliIo,
  field: Field,
  flagValue: string | undefined,
  settingValue: string,
): Promise<string> {
  if (flagValue !== undefined) return checkValue(field, flagValue, "flag");
  if (settingValue !== "") return checkValue(field, settingValue, "setting");
  if (!io.stdin.isTTY) throw notOnTerminal(field);
  return askFor(io, field);
}

export function notOnTerminal(field: Field, extra = ""): UsageError {
  const how = field.flag ? `pass ${field.flag} or set ${field.env}` : `set ${field.env}`;
  return new UsageError(
    `no ${field.label}: ${how}${extra} (stdin is not a terminal, so init cannot ask)`,
  );
}

export type InitInput = Awaited<ReturnType<typeof gatherInput>>;

/** The API password: the setting's, else asked on a terminal (twice for a new one). */
async function gatherPassword(
  io: CliIo,
  givenPassword: string | undefined,
  otp: string | undefined,
): Promise<string> {
  if (givenPassword !== undefined) return givenPassword;
  if (io.stdin.isTTY) {
    if (otp === undefined) return askFor(io, FIELDS.password);
    const first = await askFor(io, FIELDS.password, "New API password: ");
    const again = await askHidden(io, "Repeat the new password: ");
    if (first !== again) throw new UsageError("the two passwords differ; nothing was changed");
    return first;
  }
  throw notOnTerminal(
    FIELDS.password,
    otp !== undefined
      ? " (with ENERGY_API_OTP: the new password to set)"
      : "; on a first start also ENERGY_API_OTP with the one-time password",
  );
}

/** A flag's value, else the setting's, else asked on a terminal; secrets registered at once. */
export async function gatherInput(
  io: CliIo,
  flags: { readonly apiUrl?: string; readonly user?: string },
  { config, env }: CommandContext,
) {
  const apiUrl = await resolveField(io, FIELDS.apiUrl, flags.apiUrl, config.api.url);
  const apiKey = await resolveField(io, FIELDS.apiKey, undefined, config.api.key);
  registerSecret(apiKey);
  const user = await resolveField(io, FIELDS.user, flags.user, config.api.user);
  const otpSetting = env.ENERGY_API_OTP ?? "";
  if (otpSetting !== "") registerSecret(otpSetting);
  let otp = otpSetting === "" ? undefined : checkValue(FIELDS.otp, otpSetting, "setting");
  const givenPassword =
    config.api.password === ""
      ? undefined
      : checkValue(FIELDS.password, config.api.password, "setting");
  if (otp === undefined && givenPassword === undefined && io.stdin.isTTY) {
    const question = "First start, with a one-time password to set the API password? [y/N] ";
    if (/^\s*y(es)?\s*$/i.test(await askLine(io, question))) otp = await askFor(io, FIELDS.otp);
  }
  const password = await gatherPassword(io, givenPassword, otp);
  if (otp !== undefined) registerSecret(otp);
  registerSecret(password);
  registerSecret(`${user}:${password}`);
  return { apiUrl, apiKey, user, password, otp };
}
