import { sortedIds } from "./rows.js";
import type { BackfillJob, BackfillSpec } from "./types.js";

/** What a backfill request comes to, given the jobs not done yet ({@link matchRequest}). */
export interface JobMatch {
  /**
   * Unfinished jobs of the request's device, resource and value set whose range overlaps it,
   * by start: continued whole, with the chunk boundaries they have.
   */
  readonly continued: readonly BackfillJob[];
  /** The parts of the request none of them covers, by start: the new jobs (the request's reason). */
  readonly created: readonly BackfillSpec[];
}

/**
 * The rule that makes the same request continue instead of starting over, whatever moved its
 * ends (a relative `--from`, a `--to` of now, a wider range asked for): an unfinished job of the
 * same device, resource and set of value ids (in any status, any reason) that overlaps
 * `[spec.fromS, spec.toS]` is continued, and new jobs cover only what no such job covers. Done
 * jobs are not matched: a finished backfill asked for again runs again. Pure.
 */
export function matchRequest(spec: BackfillSpec, unfinished: readonly BackfillJob[]): JobMatch {
  const values = sortedIds(spec.valueIds);
  const sameValues = (job: BackfillJob) => {
    const ids = sortedIds(job.valueIds);
    return ids.length === values.length && ids.every((id, i) => id === values[i]);
  };
  const continued = unfinished
    .filter(
      (job) =>
        job.deviceId === spec.deviceId &&
        job.resourceId === spec.resourceId &&
        job.fromS <= spec.toS &&
        job.toS >= spec.fromS &&
        sameValues(job),
    )
    .sort((a, b) => a.fromS - b.fromS || a.id - b.id);
  const created: BackfillSpec[] = [];
  let next = spec.fromS;
  for (const job of continued) {
    if (job.fromS > next)
      created.push({ ...spec, valueIds: values, fromS: next, toS: job.fromS - 1 });
    next = Math.max(next, job.toS + 1);
  }
  if (next <= spec.toS) created.push({ ...spec, valueIds: values, fromS: next });
  return { continued, created };
}
