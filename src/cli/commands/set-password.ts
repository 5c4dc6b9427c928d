import type { Command } from "commander";
import { z } from "zod";
import { registerSecret } from "../../logger.js";
import { createApiClient, createContext } from "../context.js";
import { type CliIo, UsageError, writeLine } from "../io.js";
import { askHidden } from "../prompt.js";

const optionsSchema = z.object({
  user: z.string().min(1).optional(),
  otp: z.string().min(1, "--otp must not be empty").optional(),
  password: z.string().min(1, "--password must not be empty").optional(),
});

/** `set-password`: spec 5.1, once per user, with the one-time password the operator received. */
export function registerSetPasswordCommand(program: Command, io: CliIo): void {
  program
    .command("set-password")
    .description(
      "set the API password with a one-time password (POST /set_password); asks for both " +
        "without echo on a terminal, or reads --otp/--password or ENERGY_API_OTP/ENERGY_API_PASSWORD",
    )
    .option("-u, --user <user>", "API username (default: ENERGY_API_USER)")
    .option("--otp <otp>", "one-time password (prefer the prompt or ENERGY_API_OTP)")
    .option("--password <password>", "new password (prefer the prompt or ENERGY_API_PASSWORD)")
    .action(async (rawOpts: unknown, command: Command) => {
      const parsed = optionsSchema.safeParse(rawOpts);
      if (!parsed.success) throw new UsageError(parsed.error.issues[0]?.message ?? "bad options");
      const opts = parsed.data;
      const context = createContext(command, io);
      const user = opts.user ?? context.config.api.user;
      if (!user) throw new UsageError("no user: pass --user or set ENERGY_API_USER");
      const otp =
        opts.otp ?? nonEmpty(io.env.ENERGY_API_OTP) ?? (await ask(io, "One-time password: "));
      registerSecret(otp);
      const password = opts.password ?? nonEmpty(io.env.ENERGY_API_PASSWORD) ?? (await askNew(io));
      registerSecret(password);
      const client = createApiClient(context, { user, password });
      await client.setPassword(user, otp, password);
      writeLine(
        io.stdout,
        `Password set for ${user}. Put it in ENERGY_API_PASSWORD for energy-etl.`,
      );
    });
}

const nonEmpty = (s: string | undefined): string | undefined => (s === "" ? undefined : s);

async function ask(io: CliIo, question: string): Promise<string> {
  if (!io.stdin.isTTY) {
    throw new UsageError(
      `${question.replace(/: $/, "").toLowerCase()} needed: not on a terminal, so pass it ` +
        "with --otp/--password or ENERGY_API_OTP/ENERGY_API_PASSWORD",
    );
  }
  const answer = await askHidden(io, question);
  if (answer === "") throw new UsageError(`${question.replace(/: $/, "")} must not be empty`);
  return answer;
}

async function askNew(io: CliIo): Promise<string> {
  const first = await ask(io, "New password: ");
  registerSecret(first);
  const again = await ask(io, "Repeat new password: ");
  if (first !== again) throw new UsageError("the two passwords differ; nothing was changed");
  return first;
}
