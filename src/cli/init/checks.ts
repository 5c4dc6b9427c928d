import type { ApiClient } from "../../api/api-client.js";
import { ApiError } from "../../api/errors.js";
import { messageOf } from "../../util/errors.js";
import { adviseOnFailure } from "../commands/set-password.js";
import { type CliIo, UsageError, writeLine } from "../io.js";
import type { InitInput } from "./prompts.js";

const SHOWN_DEVICES = 5;

/** What to do after the API refused to give a token, or could not be reached for one. */
export function adviseOnTokenFailure(error: ApiError): ApiError {
  if (error.code === "auth_failed") {
    return error.withMessage(
      `${error.message}. The API refused the credentials: check the API key (ENERGY_API_KEY), ` +
        "the user (--user or ENERGY_API_USER) and the password (ENERGY_API_PASSWORD). On a " +
        "first start, with the one-time password you were given, run init with ENERGY_API_OTP " +
        "set (or answer y on a terminal) to set the password first.",
    );
  }
  if (error.code === "network" || error.code === "timeout") {
    return error.withMessage(
      `${error.message}. Check the API URL (--api-url or ENERGY_API_URL) and that the API can ` +
        "be reached from here.",
    );
  }
  return error;
}

/** `error` with the news that the password is set already (the one-time password is used up). */
export function afterPasswordSet(error: unknown, user: string): Error {
  const note =
    `. The password of ${user} is set now (the one-time password is used up): run init ` +
    "again without ENERGY_API_OTP, with that password.";
  const message = messageOf(error).replace(/\.$/, "");
  if (error instanceof ApiError) return error.withMessage(`${message}${note}`);
  if (error instanceof UsageError) return new UsageError(`${message}${note}`);
  return new Error(`${message}${note}`);
}

/** With a one-time password in `input`: sets the password and says so; true when it did. */
export async function setPasswordOnFirstStart(
  io: CliIo,
  client: ApiClient,
  input: InitInput,
): Promise<boolean> {
  if (input.otp === undefined) return false;
  try {
    await client.setPassword(input.user, input.otp, input.password);
  } catch (error) {
    const url = "the API URL (--api-url or ENERGY_API_URL)";
    throw error instanceof ApiError ? adviseOnFailure(error, "init", url) : error;
  }
  writeLine(io.stdout, `Password set for ${input.user} with the one-time password.`);
  return true;
}

/** Proves the credentials by a token (with advice, unless just set) and lists the devices. */
export async function proveAccess(
  io: CliIo,
  client: ApiClient,
  passwordSet: boolean,
): Promise<void> {
  try {
    await client.accessToken();
  } catch (error) {
    throw error instanceof ApiError && !passwordSet ? adviseOnTokenFailure(error) : error;
  }
  writeLine(io.stdout, "Token: created, the credentials work.");
  const devices = (await client.listDevices()).value.device_ids;
  const shown = devices.slice(0, SHOWN_DEVICES).join(", ");
  const more = devices.length > SHOWN_DEVICES ? ", …" : "";
  writeLine(
    io.stdout,
    devices.length === 0
      ? "Devices: 0 (this user may read no device yet; ask the API's operator)"
      : `Devices: ${devices.length} (${shown}${more})`,
  );
}
