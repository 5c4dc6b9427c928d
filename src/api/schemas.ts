import { z } from "zod";

/** A member of a data record: spec 2.4 says number; text, null (other readouts) and booleans are accepted too. */
export type RecordMember = number | string | boolean | null;

const isRecordMember = (v: unknown): v is RecordMember =>
  v === null ||
  (typeof v === "number" && Number.isFinite(v)) ||
  typeof v === "string" ||
  typeof v === "boolean";

/** What is wrong with a member that is not a {@link RecordMember}. */
export const RECORD_MEMBER_MESSAGE = "must be a finite number, a string, a boolean or null";

/**
 * A record member. One type test instead of a four-way union: records are validated one by one
 * for every value of every answer, so this is the hot path of the boundary.
 */
export const recordMemberSchema = z.custom<RecordMember>(isRecordMember, {
  message: RECORD_MEMBER_MESSAGE,
});

/** `YYYY-MM-DDTHH:MM:SS`, UTC without zone designator (spec 2.4). */
export const RECORD_TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/;

let lastRealTime = "";

/** True when `YYYY-MM-DDTHH:MM:SS` names a real UTC second (not 30 February, not 24:00). */
function isRealRecordTime(text: string): boolean {
  // the rows of one timestamp follow each other: the last answer is usually the answer
  if (text === lastRealTime) return true;
  const ms = Date.parse(`${text}Z`);
  const real = !Number.isNaN(ms) && new Date(ms).toISOString().slice(0, 19) === text;
  if (real) lastRealTime = text;
  return real;
}

/** One data record (spec 2.4): a timestamp, the readout's values_id and one member per value. */
export const dataRecordSchema = z
  .object({
    timestamp: z
      .string()
      .regex(RECORD_TIMESTAMP_RE, "timestamp must be YYYY-MM-DDTHH:MM:SS")
      .refine(isRealRecordTime, "timestamp is not a real date and time"),
    values_id: recordMemberSchema.optional(),
  })
  .catchall(recordMemberSchema);
export type DataRecord = z.infer<typeof dataRecordSchema>;

/** A requested member that is not a {@link RecordMember}, as {@link keepRequested} set it aside. */
export interface BadMember {
  readonly valueId: string;
  /** What JSON.parse gave for it (Infinity for 1e400, an object, an array). */
  readonly value: unknown;
}

/**
 * Checks a parsed element of a GET /data answer against what was asked for, in place: members
 * that were not requested are removed whatever their value (they are not ours to judge) and their
 * names appended to `extras`. It is a record when it is an object with a real timestamp and a
 * `values_id` that is a member (or none); nothing of it can be written otherwise (false, and the
 * element is left as it is but for the cut). A record's requested members that are not of the
 * allowed types are removed from it and appended to `bad`, so that its good members can be
 * written. The hot path of the boundary: one pass, no copy, no allocation for a good record.
 * When it refuses, {@link dataRecordSchema} on the same (cut) object says why.
 */
export function keepRequested(
  value: unknown,
  requested: ReadonlySet<string>,
  extras: string[],
  bad: BadMember[],
): value is DataRecord {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const record = value as Record<string, unknown>;
  const before = bad.length;
  let valid = true;
  for (const key in record) {
    if (key === "timestamp") continue;
    if (key === "values_id") {
      if (!isRecordMember(record[key])) valid = false;
    } else if (!requested.has(key)) {
      delete record[key];
      extras.push(key);
    } else if (!isRecordMember(record[key])) bad.push({ valueId: key, value: record[key] });
  }
  const { timestamp } = record;
  if (
    !valid ||
    typeof timestamp !== "string" ||
    !RECORD_TIMESTAMP_RE.test(timestamp) ||
    !isRealRecordTime(timestamp)
  ) {
    bad.length = before;
    return false;
  }
  if (bad.length > before) for (const { valueId } of bad.slice(before)) delete record[valueId];
  return true;
}

/** What is wrong with a member {@link keepRequested} set aside: names it and what it was. */
export function badMemberMessage(member: BadMember): string {
  const { value } = member;
  const got =
    typeof value === "number"
      ? `${value}, out of a double's range`
      : Array.isArray(value)
        ? "an array"
        : typeof value === "object"
          ? "an object"
          : typeof value;
  return `${member.valueId}: ${RECORD_MEMBER_MESSAGE}; got ${got}`;
}

/** GET /data/<device_id>/<resource_id> (spec 4.4). */
export const dataResponseSchema = z.array(dataRecordSchema);

/** GET /devices (spec 4.1). Catalog objects keep unknown members, so `--json` shows them. */
export const devicesResponseSchema = z.looseObject({ device_ids: z.array(z.string()) });
export type DevicesResponse = z.infer<typeof devicesResponseSchema>;

/** GET /<device_id>/resources (spec 4.2). */
export const resourcesResponseSchema = z.looseObject({
  device_id: z.string(),
  resource_ids: z.array(z.string()),
});
export type ResourcesResponse = z.infer<typeof resourcesResponseSchema>;

/** GET /<device_id>/<resource_id>/values (spec 4.3). */
export const valuesResponseSchema = z.looseObject({
  device_id: z.string(),
  resource_id: z.string(),
  values: z.array(z.string()),
});
export type ValuesResponse = z.infer<typeof valuesResponseSchema>;

/** POST /create_token (spec 5.2). */
export const tokenResponseSchema = z.object({
  token: z.string().min(1),
  expires_in: z.number().int().positive(),
});
export type TokenResponse = z.infer<typeof tokenResponseSchema>;

/** POST /set_password (spec 5.1): the response is not documented, so anything is accepted. */
export const setPasswordResponseSchema = z.unknown();
