import { sortedIds } from "./rows.js";
import type { BackfillJob, BackfillSpec } from "./types.js";

/** What one requested job comes to, given the jobs stored ({@link matchPlan}). */
export interface JobMatch {
  readonly spec: BackfillSpec;
  /** Unfinished jobs of its values that overlap it, by start (a later `toS`: extended). */
  readonly continued: readonly BackfillJob[];
  /** Jobs of the backfill being continued that are done already: not fetched again. */
  readonly finished: readonly BackfillJob[];
  /** The parts of the request no such job covers, by start: the new jobs (the request's reason). */
  readonly created: readonly BackfillSpec[];
}

/** The stored jobs {@link matchPlan} looks at. */
export interface JobLookup {
  /** Jobs of a device resource that are not done. */
  unfinished(deviceId: string, resourceId: string): readonly BackfillJob[];
  /** Jobs of a device resource done at `since` (ISO) or later; absent: done jobs cover nothing. */
  doneSince?(deviceId: string, resourceId: string, since: string): readonly BackfillJob[];
}

/**
 * The rule that makes the same command again continue instead of starting over, whatever moved
 * its ends (a relative `--from`, a `--to` of now, a wider range). Of the jobs one command asks
 * for (`specs`): an unfinished job of a spec's device, resource and value set (any status, any
 * reason) that overlaps it is continued; when one is, the jobs of those values done since the
 * oldest continued one was created cover their range too (not fetched again); only what none of
 * these covers is new, the time right after a continued job going into it when `extendable(job,
 * toS)` says so. A command that continues nothing runs whole, even a finished backfill.
 */
export function matchPlan(
  specs: readonly BackfillSpec[],
  lookup: JobLookup,
  extendable: (job: BackfillJob, toS: number) => boolean = () => false,
): JobMatch[] {
  const unfinished = specs.map((spec) =>
    lookup.unfinished(spec.deviceId, spec.resourceId).filter((job) => covers(job, spec)),
  );
  const since = unfinished
    .flat()
    .map((job) => job.createdAt)
    .sort()
    .at(0);
  return specs.map((spec, i) => {
    const finished =
      since === undefined || lookup.doneSince === undefined
        ? []
        : lookup
            .doneSince(spec.deviceId, spec.resourceId, since)
            .filter((job) => covers(job, spec));
    return cover(spec, unfinished[i] ?? [], finished, extendable);
  });
}

/** `job` is of the spec's device, resource and value set, and overlaps its range. */
function covers(job: BackfillJob, spec: BackfillSpec): boolean {
  if (job.deviceId !== spec.deviceId || job.resourceId !== spec.resourceId) return false;
  if (job.fromS > spec.toS || job.toS < spec.fromS) return false;
  const a = sortedIds(job.valueIds);
  const b = sortedIds(spec.valueIds);
  return a.length === b.length && a.every((id, k) => id === b[k]);
}

/** The spec's range laid over the jobs that cover parts of it: what is continued, what is new. */
function cover(
  spec: BackfillSpec,
  unfinished: readonly BackfillJob[],
  finished: readonly BackfillJob[],
  extendable: (job: BackfillJob, toS: number) => boolean,
): JobMatch {
  const byStart = (a: BackfillJob, b: BackfillJob) => a.fromS - b.fromS || a.id - b.id;
  const continued: BackfillJob[] = [];
  const created: BackfillSpec[] = [];
  const values = sortedIds(spec.valueIds);
  let last: BackfillJob | undefined;
  const gap = (fromS: number, toS: number) => {
    if (last !== undefined && last.status !== "done" && last.toS + 1 === fromS) {
      if (extendable(last, toS)) {
        const extended = { ...last, toS };
        continued[continued.indexOf(last)] = extended;
        last = extended;
        return;
      }
    }
    created.push({ ...spec, valueIds: values, fromS, toS });
  };
  let next = spec.fromS;
  for (const job of [...unfinished, ...finished].sort(byStart)) {
    if (job.fromS > next) gap(next, job.fromS - 1);
    if (job.status !== "done") continued.push(job);
    if (job.toS + 1 > next) {
      next = job.toS + 1;
      last = job;
    }
  }
  if (next <= spec.toS) gap(next, spec.toS);
  return { spec, continued, finished: [...finished].sort(byStart), created };
}
