/** A backfill job as the table `backfill_jobs` holds it: its row, its key, what a spec may hold. */
import { createHash } from "node:crypto";
import { z } from "zod";
import {
  columns,
  integer,
  jsonStringArray,
  optionalInteger,
  optionalText,
  requireInteger,
  requireText,
  sortedIds,
} from "./rows.js";
import type { BackfillJob, BackfillSpec } from "./types.js";

/** The statuses of a job not done, as an SQL list. */
export const UNFINISHED = "('pending', 'running', 'failed', 'parked')";

/** A job's status, as the table spells it. */
export const backfillStatus = z.enum(["pending", "running", "done", "failed", "parked"]);

export const jobRow: z.ZodType<BackfillJob> = columns({
  id: integer,
  key: z.string(),
  deviceId: z.string(),
  resourceId: z.string(),
  valueIds: jsonStringArray,
  fromS: integer,
  toS: integer,
  reason: z.enum(["manual", "new_value", "audit", "parked"]),
  status: backfillStatus,
  chunksTotal: integer,
  chunksDone: integer,
  points: integer,
  requests: integer,
  lastError: z.string().nullable(),
  attempts: integer,
  nextAttemptS: ["next_attempt_at", optionalInteger],
  newestRecordS: ["newest_record_at", optionalInteger],
  leaseOwner: optionalText,
  leaseUntilMs: ["lease_until", optionalInteger],
  createdAt: z.string(),
  updatedAt: z.string(),
});

/** Key of a spec: sha256 hex of JSON `[deviceId, resourceId, sortedIds(valueIds), fromS, toS]`. */
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
