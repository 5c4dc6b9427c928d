/** The records of a GET /data answer (spec 2.4): their members, their timestamp, their schema. */
import { z } from "zod";

/** A member of a data record: spec 2.4 says number; text, null and booleans are accepted too. */
export type RecordMember = number | string | boolean | null;

/** True for a member of an allowed type (a finite number, a string, a boolean or null). */
export const isRecordMember = (v: unknown): v is RecordMember =>
  v === null ||
  (typeof v === "number" && Number.isFinite(v)) ||
  typeof v === "string" ||
  typeof v === "boolean";

/** What is wrong with a member that is not a {@link RecordMember}. */
export const RECORD_MEMBER_MESSAGE = "must be a finite number, a string, a boolean or null";

/** A record member: one type test, not a four-way union (the hot path of the boundary). */
const recordMemberSchema = z.custom<RecordMember>(isRecordMember, {
  message: RECORD_MEMBER_MESSAGE,
});

/** `YYYY-MM-DDTHH:MM:SS`, UTC without zone designator (spec 2.4). */
export const RECORD_TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/;

let lastRealTime = "";

/** True when `YYYY-MM-DDTHH:MM:SS` names a real UTC second (not 30 February, not 24:00). */
export function isRealRecordTime(text: string): boolean {
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

/** `YYYY-MM-DDTHH:MM:SS` in UTC, the shape of a record's timestamp (spec 2.4). */
export function formatRecordTime(date: Date): string {
  return date.toISOString().slice(0, 19);
}

/** Milliseconds since the epoch of a record timestamp `YYYY-MM-DDTHH:MM:SS` (UTC). */
export function parseRecordTime(text: string): number {
  return Date.parse(`${text}Z`);
}
