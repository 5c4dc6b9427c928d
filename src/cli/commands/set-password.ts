import type { Command } from "commander";
import { z } from "zod";
import { ApiError } from "../../api/errors.js";
import { registerSecret } from "../../logger.js";
import { textProblem } from "../../util/input-text.js";
import { asksForSecrets, createApiClient, createContext } from "../context.js";
import { type CliIo, parsedAction, UsageError, writeLine } from "../io.js";
import { nameOption } from "../options.js";
import { askHidden } from "../prompt.js";

const optionsSchema = z.object({
  user: nameOption("--user", "the API username").optional(),
});

export function registerSetPasswordCommand(program: Command, io: CliIo): void {
  const setPassword = program
    .command("set-password")
    .description(
      "set the API password with a one-time password (POST /set_password); reads " +
        "ENERGY_API_OTP and ENERGY_API_PASSWORD (the new one) from the environment or the .env " +
        "file, else asks for them without echo on a terminal",
    )
    .option("-u, --user <user>", "API username (default: ENERGY_API_USER)")
    .action(
      parsedAction(optionsSchema, async (opts, command) => {
        const context = createContext(command, io);
        const user = opts.user ?? context.config.api.user;
        if (!user) throw new UsageError("no user: pass --user or set ENERGY_API_USER");
        const otp =
          nonEmpty(context.env.ENERGY_API_OTP) ??
          (await ask(io, "One-time password: ", "ENERGY_API_OTP"));
        registerSecret(otp);
        const otpProblem = textProblem(otp);
        if (otpProblem) throw new UsageError(`ENERGY_API_OTP ${otpProblem}`);
        const configured = nonEmpty(context.config.api.password);
        const password = configured ?? (await askNew(io));
        registerSecret(password);
        const client = await createApiClient(context, { user, password });
        try {
          await client.setPassword(user, otp, password);
        } catch (error) {
          throw error instanceof ApiError ? adviseOnFailure(error) : error;
        }
        writeLine(
          io.stdout,
          `Password set for ${user}: ${passwordSource(configured && context.origins.get("api.password"))}.`,
        );
      }),
    );
  asksForSecrets(setPassword, ["ENERGY_API_OTP", "ENERGY_API_PASSWORD"]);
}

/** A failed POST /set_password with what to do next (to run `command` again: check `url`). */
export function adviseOnFailure(
  error: ApiError,
  command = "set-password",
  url = "ENERGY_API_URL",
): ApiError {
  if (error.code === "auth_failed" && error.status === 403) {
    return error.withMessage(
      `${error.message}. The API refused the request: check the API key (ENERGY_API_KEY); if ` +
        "it is right, the one-time password is wrong, expired or already used: ask for a new one.",
    );
  }
  if (error.code === "auth_failed") {
    return error.withMessage(
      `${error.message}. The API refused the one-time password: it is wrong, expired or ` +
        `already used (it works once). Ask for a new one and run ${command} again with it ` +
        "(ENERGY_API_OTP or the prompt).",
    );
  }
  if (error.neverSent) {
    return error.withMessage(
      `${error.message}. Nothing reached the API, so the one-time password is still unused: ` +
        `check ${url} and run ${command} again.`,
    );
  }
  if (["request_rejected", "not_found"].includes(error.code)) return error;
  return error.withMessage(
    `${error.message}. The one-time password may already be used: try the new password ` +
      "(ENERGY_API_PASSWORD=<new password> energy-etl devices); if it is refused, ask for a " +
      "new one-time password.",
  );
}

const nonEmpty = (s: string | undefined): string | undefined => (s === "" ? undefined : s);

/**
 * Where the new password came from, never the password: the prompt (`origin` undefined), or the
 * configuration's origin of ENERGY_API_PASSWORD (`.env file ./.env`, `environment …`).
 */
function passwordSource(origin: string | undefined): string {
  if (origin === undefined) {
    return "the new password is the one typed at the prompt; put it in ENERGY_API_PASSWORD for energy-etl";
  }
  const where = origin.startsWith("environment ") ? "the environment" : origin;
  return `the new password is ENERGY_API_PASSWORD of ${where} (not asked for), which energy-etl goes on reading`;
}

/** Asks for a secret without echo; off a terminal a usage error naming `env`, its variable. */
async function ask(io: CliIo, question: string, env: string): Promise<string> {
  if (!io.stdin.isTTY) {
    throw new UsageError(
      `${question.replace(/: $/, "").toLowerCase()} needed: not on a terminal, so set ${env} ` +
        "in the environment or the .env file",
    );
  }
  const answer = await askHidden(io, question);
  if (answer === "") throw new UsageError(`${question.replace(/: $/, "")} must not be empty`);
  return answer;
}

async function askNew(io: CliIo): Promise<string> {
  const first = await ask(io, "New password: ", "ENERGY_API_PASSWORD");
  registerSecret(first);
  const again = await ask(io, "Repeat new password: ", "ENERGY_API_PASSWORD");
  if (first !== again) throw new UsageError("the two passwords differ; nothing was changed");
  return first;
}
