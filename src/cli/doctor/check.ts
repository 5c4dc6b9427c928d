import { formatSeconds } from "../../influx/write-errors.js";
import { scrubSecrets } from "../../logger.js";
import { messageOf } from "../../util/errors.js";
import { sleep } from "../../util/timers.js";

/** The outcome of one check: what was found and, unless ok, what to do about it. */
export interface CheckResult {
  readonly check: string;
  /** `warning` is worth a look, `failure` makes doctor exit 1. */
  readonly status: "ok" | "warning" | "failure";
  readonly detail: string;
  /** A concrete next step (a setting to change, a command to run); warnings and failures only. */
  readonly fix?: string;
}

export const ok = (check: string, detail: string): CheckResult => ({ check, status: "ok", detail });

const withFix =
  (status: "warning" | "failure") =>
  (check: string, detail: string, fix: string): CheckResult => ({ check, status, detail, fix });

export const warning = withFix("warning");
export const failure = withFix("failure");

/** A check that could not be made because an earlier one failed (`cause`: that check). */
export const notChecked = (check: string, why: string, cause: string): CheckResult =>
  warning(check, `not checked: ${why}`, `fix "${cause}" first`);

/** `failed`, then each of `after` not checked because of it (`why`). */
export const blocking = (failed: CheckResult, why: string, ...after: string[]): CheckResult[] => [
  failed,
  ...after.map((check) => notChecked(check, why, failed.check)),
];

export function scrubbed(result: CheckResult): CheckResult {
  const detail = scrubSecrets(result.detail);
  return result.fix === undefined
    ? { ...result, detail }
    : { ...result, detail, fix: scrubSecrets(result.fix) };
}

/** The results of `run`, or a failure of `check` when they take over `ms` (doctor never hangs). */
export async function bounded(
  check: string,
  ms: number,
  run: () => Promise<CheckResult[]>,
): Promise<CheckResult[]> {
  const settled = new AbortController();
  const fix = "check that the service it talks to answers";
  const late = sleep(ms, { signal: settled.signal, unref: true }).then(
    () => [failure(check, `no result within ${formatSeconds(ms)} s`, fix)],
    () => [],
  );
  try {
    return await Promise.race([run(), late]);
  } catch (error) {
    return [failure(check, `the check itself failed: ${messageOf(error)}`, "report this as a bug")];
  } finally {
    settled.abort();
  }
}

/** A byte count as `1.5 GiB`, `300 MiB`, `12 KiB`. */
export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  const unit = Math.max(0, Math.min(units.length - 1, Math.floor(Math.log2(bytes) / 10)));
  const value = bytes / 1024 ** unit;
  return `${value.toFixed(value >= 100 || unit === 0 ? 0 : 1)} ${units[unit]}`;
}
