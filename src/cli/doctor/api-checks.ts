import type { Logger } from "pino";
import type { ApiClient } from "../../api/api-client.js";
import { parseDateHeader } from "../../api/api-clock.js";
import { ApiError } from "../../api/errors.js";
import { apiClientSettings, type Config, ConfigError } from "../../config.js";
import { messageOf } from "../../util/errors.js";
import { formatSpan } from "../commands/status.js";
import { blocking, type CheckResult, failure, ok, warning } from "./check.js";
import { type HttpAnswer, httpRequest, tlsFix } from "./http.js";

const REACHABLE = "API reachable";
const CREDENTIALS = "API credentials";
const DEVICES = "API devices";
const CLOCK = "clock offset";

const CLOCK_WARN_S = 60;
const CLOCK_FAIL_S = 600;

/** The API answers, the credentials get a token, devices are visible, and the clock agrees. */
export async function apiChecks(config: Config, logger: Logger): Promise<CheckResult[]> {
  const { url, timeoutMs } = config.api;
  if (url === "") {
    const why = "ENERGY_API_URL is not set";
    const fix = "set ENERGY_API_URL (or --api-url) to the base URL of the API";
    return blocking(failure(REACHABLE, why, fix), why, CREDENTIALS, DEVICES, CLOCK);
  }
  const answer = await httpRequest(url, { method: "GET" }, timeoutMs);
  if (answer.kind === "problem") {
    const fix =
      answer.reason === "tls"
        ? tlsFix("ENERGY_API_URL")
        : answer.reason === "timeout"
          ? "check ENERGY_API_URL and the network (firewall, proxy) between here and the API; " +
            "raise API_TIMEOUT_MS if the API is only slow"
          : "check ENERGY_API_URL (scheme, host, port) and that the API is up";
    const failed = failure(REACHABLE, `${url} is not reachable (${answer.message})`, fix);
    return blocking(failed, "the API is not reachable", CREDENTIALS, DEVICES, CLOCK);
  }
  const reachable =
    answer.status >= 502 && answer.status <= 504
      ? failure(
          REACHABLE,
          `${url} answers HTTP ${answer.status}: a gateway in front of the API cannot reach it`,
          "check that the API is up, or ask its provider",
        )
      : ok(REACHABLE, `${url} answers`);
  return [reachable, ...(await accountChecks(config, logger)), clockCheck(answer)];
}

/** Credentials (POST /create_token) and devices (GET /devices), one attempt each. */
async function accountChecks(config: Config, logger: Logger): Promise<CheckResult[]> {
  // the client (and got) load here, for doctor's API checks only
  const api = await import("../../api/api-client.js");
  let client: ApiClient;
  try {
    client = new api.ApiClient({
      ...apiClientSettings(config),
      retry: { retries: 0, baseDelayMs: 1, maxDelayMs: 1 },
      deadlineMs: config.api.timeoutMs * 2,
      logger,
    });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const fix =
      "set them in the environment or --config FILE; on a first start with a one-time " +
      "password, set the password with `energy-etl set-password`";
    return blocking(failure(CREDENTIALS, error.message, fix), "no credentials", DEVICES);
  }
  try {
    await client.accessToken();
  } catch (error) {
    const failed = failure(CREDENTIALS, messageOf(error), credentialsFix(error));
    return blocking(failed, "no access token", DEVICES);
  }
  const credentials = ok(CREDENTIALS, `user ${config.api.user} got an access token`);
  try {
    const devices = (await client.listDevices()).value.device_ids;
    if (devices.length === 0) {
      return [
        credentials,
        warning(
          DEVICES,
          `GET /devices lists no device for user ${config.api.user}: there is nothing to sync`,
          `ask the API's provider to give user ${config.api.user} access to your devices`,
        ),
      ];
    }
    const count = `${devices.length} device${devices.length === 1 ? "" : "s"}`;
    return [credentials, ok(DEVICES, `GET /devices lists ${count}`)];
  } catch (error) {
    return [
      credentials,
      failure(
        DEVICES,
        messageOf(error),
        error instanceof ApiError && error.code === "auth_failed"
          ? `the token was refused: check the rights of user ${config.api.user} with the API's provider`
          : "check that the API is up (energy-etl devices shows the answer)",
      ),
    ];
  }
}

function credentialsFix(error: unknown): string {
  switch (error instanceof ApiError ? error.code : "auth_failed") {
    case "auth_failed":
      return (
        "check ENERGY_API_KEY, ENERGY_API_USER and ENERGY_API_PASSWORD; on a first start with a " +
        "one-time password, set the password with `energy-etl set-password`"
      );
    case "timeout":
      return "raise API_TIMEOUT_MS if the API is only slow, or check it is up";
    case "not_found":
      return "check ENERGY_API_URL: it must be the base URL the endpoints are under";
    default:
      return "check that the API is up and ENERGY_API_URL is its base URL";
  }
}

/** The clock against the API's `Date` (taken as its second's middle, ours as the exchange's). */
function clockCheck(answer: HttpAnswer): CheckResult {
  const serverMs = parseDateHeader(answer.header("date"));
  if (serverMs === undefined) return ok(CLOCK, "not measured: the API sends no Date header");
  const localMs = (answer.sentAtMs + answer.answeredAtMs) / 2;
  const offsetS = Math.round((serverMs + 500 - localMs) / 1000);
  const size = Math.abs(offsetS);
  if (size <= 1) return ok(CLOCK, "the local clock is within 1 s of the API's");
  const detail = `the local clock is ${formatSpan(size)} ${offsetS > 0 ? "behind" : "ahead of"} the API's`;
  if (size <= CLOCK_WARN_S) return ok(CLOCK, detail);
  const fix =
    "sync this machine's clock with NTP (e.g. `timedatectl set-ntp true`); if it is right, " +
    "tell the API's provider theirs is off: sync windows are computed by the local clock";
  return size > CLOCK_FAIL_S
    ? failure(CLOCK, `${detail} (more than ${CLOCK_FAIL_S / 60} min)`, fix)
    : warning(CLOCK, `${detail} (more than ${CLOCK_WARN_S} s)`, fix);
}
