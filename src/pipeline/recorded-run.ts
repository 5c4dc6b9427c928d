import type { Logger } from "pino";
import type { Owner } from "../state/owner.js";
import type { StateStore } from "../state/state-store.js";
import type { RunKind, RunSummary } from "../state/types.js";
import { messageOf } from "../util/errors.js";
import { cutByShutdown, isFatal } from "./errors.js";
import { RunContext, type RunCounters } from "./run-context.js";
import { type ReportParts, reportRun } from "./run-report.js";

/** What a run's work came to, for its status, its row in the runs table and its report. */
export interface RunTally {
  /** Parts worked on (devices, jobs). */
  readonly parts: number;
  /** The parts that failed, with why. */
  readonly failures: readonly { readonly part: Record<string, unknown>; readonly error: string }[];
  /** Devices the run touched, for the summary. */
  readonly devices: number;
  /** Devices whose cursors the report's `etl_lag` points cover (undefined: every cursor). */
  readonly reportDevices?: ReadonlySet<string>;
}

export interface RecordedRunParts extends ReportParts {
  readonly store: Pick<StateStore, "runs"> & ReportParts["store"];
  readonly logger: Logger;
  readonly owner: Owner;
  readonly now: () => Date;
  readonly isStopping: boolean;
}

export interface RunResult {
  readonly runId: number;
  /** `interrupted`: stopped by a signal; what was not done is done next time. */
  readonly status: RunSummary["status"];
  readonly requests: number;
  readonly points: number;
  readonly deadLetters: number;
  readonly counters: Readonly<RunCounters>;
}

export function runResult({ run, status }: RecordedRun): RunResult {
  const { counters } = run;
  return {
    runId: run.id,
    status,
    requests: counters.requests,
    points: counters.points,
    deadLetters: counters.deadLetters,
    counters: { ...counters },
  };
}

/** A recorded run, ended. */
export interface RecordedRun {
  readonly run: RunContext;
  readonly status: RunSummary["status"];
  /** Failed parts, plus one for a fatal error. */
  readonly errors: number;
  readonly durationMs: number;
}

/** A run's row, {@link RunContext}, status and report; a fatal error is rethrown once recorded. */
export async function recordedRun(
  parts: RecordedRunParts,
  kind: RunKind,
  work: (run: RunContext) => Promise<void>,
  tally: () => RunTally,
): Promise<RecordedRun> {
  const { store } = parts;
  const started = parts.now();
  const run = RunContext.create(store.runs.start(kind, started, parts.owner), kind, parts.logger);
  let fatal: unknown;
  try {
    await work(run);
  } catch (error) {
    // cut short by our own shutdown: the run is interrupted, not failed
    if (!cutByShutdown(error, parts.isStopping)) fatal = error;
  }
  const counted = tally();
  const failures: Record<string, unknown>[] = counted.failures.map((f) => ({
    ...f.part,
    error: f.error,
  }));
  if (fatal !== undefined) failures.push({ device: "*", error: messageOf(fatal) });
  const errors = failures.length;
  const status = statusOf(fatal !== undefined, parts.isStopping, counted);
  const { counters } = run;
  const summary: RunSummary = {
    status,
    devices: counted.devices,
    requests: counters.requests,
    points: counters.points,
    errors,
    detail: failures.length > 0 ? JSON.stringify(failures) : null,
  };
  run.reportFailures();
  const durationMs = parts.now().getTime() - started.getTime();
  if (!isFatal(fatal)) await reportRun(parts, run, summary, durationMs, counted.reportDevices);
  // the run ends last, once all of it (its report included) is done
  store.runs.finish(run.id, summary, parts.now());
  if (fatal !== undefined) throw fatal;
  return { run, status, errors, durationMs };
}

/** A finished run's status: `failed` (fatal, or every part failed), `interrupted`, `partial`. */
function statusOf(fatal: boolean, stopping: boolean, tally: RunTally): RunSummary["status"] {
  if (fatal) return "failed";
  if (stopping) return "interrupted";
  const failed = tally.failures.length;
  if (tally.parts > 0 && failed >= tally.parts) return "failed";
  return failed > 0 ? "partial" : "ok";
}
