/** A backfill job as the table `backfill_jobs` holds it: its row, its key, what a spec may hold. */
import { createHash } from "node:crypto";
import { z } from "zod";
import {
  integer,
  jsonStringArray,
  optionalInteger,
  presentFields,
  requireInteger,
  requireText,
  sortedIds,
} from "./rows.js";
import type { BackfillJob, BackfillSpec } from "./types.js";

/** The statuses of a job not done, as an SQL list. */
export const UNFINISHED = "('pending', 'running', 'failed', 'parked')";

/** A job's status, as the table spells it. */
export const backfillStatus = z.enum(["pending", "running", "done", "failed", "parked"]);

/** A row of `backfill_jobs`, read as a {@link BackfillJob}. */
export const jobRow = z
  .object({
    id: integer,
    key: z.string(),
    device_id: z.string(),
    resource_id: z.string(),
    value_ids: jsonStringArray,
    from_s: integer,
    to_s: integer,
    reason: z.enum(["manual", "new_value", "audit", "parked"]),
    status: backfillStatus,
    chunks_total: integer,
    chunks_done: integer,
    points: integer,
    requests: integer,
    last_error: z.string().nullable(),
    attempts: integer,
    next_attempt_at: optionalInteger,
    newest_record_at: optionalInteger,
    lease_owner: z.string().nullable(),
    lease_until: optionalInteger,
    created_at: z.string(),
    updated_at: z.string(),
  })
  .transform(
    (r): BackfillJob => ({
      id: r.id,
      key: r.key,
      deviceId: r.device_id,
      resourceId: r.resource_id,
      valueIds: r.value_ids,
      fromS: r.from_s,
      toS: r.to_s,
      reason: r.reason,
      status: r.status,
      chunksTotal: r.chunks_total,
      chunksDone: r.chunks_done,
      points: r.points,
      requests: r.requests,
      lastError: r.last_error,
      attempts: r.attempts,
      ...presentFields({
        nextAttemptS: r.next_attempt_at,
        newestRecordS: r.newest_record_at,
        leaseOwner: r.lease_owner,
        leaseUntilMs: r.lease_until,
      }),
      createdAt: r.created_at,
      updatedAt: r.updated_at,
    }),
  );

/**
 * Key of a spec: sha256 hex of JSON `[deviceId, resourceId, sorted valueIds, fromS, toS]`
 * (duplicate value ids count once; the reason is not part of it).
 */
export function jobKey(spec: BackfillSpec): string {
  const identity = [spec.deviceId, spec.resourceId, sortedIds(spec.valueIds), spec.fromS, spec.toS];
  return createHash("sha256").update(JSON.stringify(identity)).digest("hex");
}

/** A spec's fields are what a job can hold (throws a RangeError naming the first that is not). */
export function checkSpec(spec: BackfillSpec): void {
  requireText("deviceId", spec.deviceId);
  requireText("resourceId", spec.resourceId);
  for (const id of spec.valueIds) {
    requireText("value id", id);
    if (id === "values_id") throw new RangeError("values_id is a tag, not a value to backfill");
  }
  requireInteger("fromS", spec.fromS);
  requireInteger("toS", spec.toS);
  if (spec.fromS > spec.toS) {
    throw new RangeError(`backfill window is empty: fromS ${spec.fromS} > toS ${spec.toS}`);
  }
}

/** The job read for `id`; a RangeError when there is none. */
export function requireJob(job: BackfillJob | undefined, id: number): BackfillJob {
  if (job === undefined) throw new RangeError(`no backfill job ${id}`);
  return job;
}
