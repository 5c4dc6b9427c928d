/**
 * The table of bad kinds of the bad-input tests: for each, its name, the outcome its body must
 * have (a bad row, a bad member, a body that is not a JSON array, rows or members to drop, odd but
 * valid data), what its errors must say, and its maker (./bad-makers.ts).
 */
import type { Chunk } from "../../../src/pipeline/plan-chunks.js";
import type { DataRecord } from "../../../src/records/data-record.js";
import {
  badMember,
  badTimestamp,
  bareToken,
  bareTokenText,
  firstTime,
  firstValue,
  type Made,
  MEGABYTE_TEXT,
  middle,
  names,
  namesFirstValue,
  oneBadMember,
  oneBadRow,
  withExtraRows,
} from "./bad-makers.js";
import { arrayText, at, recordTime } from "./scenario.js";

/**
 * What must come of a chunk's body. `dead-letter`: one element is not a record; it becomes a
 * dead letter, the rest is written, the chunk is done. `member-letter`: one record has a bad
 * requested member; it becomes a dead letter, the rest (its record's other members too) is
 * written, the chunk is done. The chunk fails (ApiError invalid_response,
 * not done) for a body that is not a JSON array: `chunk-fails-retried` (not JSON: it may be a cut
 * transfer, so 1 + API_RETRIES requests), `chunk-fails-final` (JSON of another shape: 1 request),
 * `chunk-fails-maybe-retried` (an empty body: 1 to 1 + API_RETRIES requests). Dropped, counted and
 * the chunk done: `dropped-rows` (outside the requested window, valid or not: an invalid row with a
 * readable timestamp outside the window is dropped, not a dead letter), `duplicate-rows` (a
 * repeated (timestamp, values_id tag); the first is kept), `dropped-members` (not requested,
 * whatever their value). `accepted`: odd but valid, written.
 */
export type Outcome =
  | "dead-letter"
  | "member-letter"
  | "chunk-fails-retried"
  | "chunk-fails-final"
  | "chunk-fails-maybe-retried"
  | "dropped-rows"
  | "duplicate-rows"
  | "dropped-members"
  | "accepted";

export const FAILING: ReadonlySet<Outcome> = new Set<Outcome>([
  "chunk-fails-retried",
  "chunk-fails-final",
  "chunk-fails-maybe-retried",
]);
export const fails = (kind: BadKind | undefined): boolean =>
  kind !== undefined && FAILING.has(kind.outcome);

export interface BadKind {
  readonly name: string;
  readonly outcome: Outcome;
  /** What a dead letter's error (or the chunk's error) must say about this chunk's body. */
  readonly says?: (chunk: Chunk) => string;
  /** The body for a chunk's good records. */
  make(records: DataRecord[], chunk: Chunk): Made;
}

/** The chunk-failing kinds come first: the first lands on battery_bank, the second on all_data. */
export const BAD_KINDS: readonly BadKind[] = [
  {
    name: "a 1 MB HTML page",
    outcome: "chunk-fails-retried",
    says: () => "not a JSON array of records (not JSON)",
    make: () => ({
      text: `<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1><!-- ${MEGABYTE_TEXT} --></body></html>`,
      contentType: "text/html",
      written: [],
    }),
  },
  {
    name: "a 1 MB object instead of an array",
    outcome: "chunk-fails-final",
    says: () => "a JSON value that is not an array",
    make: (r) => ({ text: JSON.stringify({ records: r, note: MEGABYTE_TEXT }), written: [] }),
  },
  {
    name: "null",
    outcome: "chunk-fails-final",
    says: () => "a JSON value that is not an array",
    make: () => ({ text: "null", written: [] }),
  },
  {
    name: "an empty body",
    outcome: "chunk-fails-maybe-retried",
    says: () => "empty body",
    make: () => ({ text: "", written: [] }),
  },
  {
    name: "truncated JSON",
    outcome: "chunk-fails-retried",
    says: () => "the array is not closed",
    make: (r) => {
      const text = JSON.stringify(r);
      return { text: text.slice(0, Math.floor(text.length / 2)), written: [] };
    },
  },
  {
    name: "a value as an object",
    outcome: "member-letter",
    says: namesFirstValue,
    make: (r, c) => badMember(r, c, { v: 1 }),
  },
  {
    name: "a value as an array",
    outcome: "member-letter",
    says: namesFirstValue,
    make: (r, c) => badMember(r, c, [1, 2]),
  },
  {
    name: "a record without timestamp",
    outcome: "dead-letter",
    says: names("timestamp"),
    make: (r) => {
      const i = middle(r);
      const bad: Record<string, unknown> = { ...at(r, i) };
      delete bad.timestamp;
      return oneBadRow(r, i, JSON.stringify(bad));
    },
  },
  {
    // readable text, later than any window of the backfill (April to June 2026): dropped
    name: "timestamp 2026-13-45T99:00:00 (readable, outside the window)",
    outcome: "dropped-rows",
    make: (r, c) => badTimestamp(r, c, "2026-13-45T99:00:00"),
  },
  {
    // the next midnight after the first record, written as 24:00 of its day: inside the 7-day window
    name: "timestamp <date of the first record>T24:00:00 (no such hour, inside the window)",
    outcome: "dead-letter",
    says: () => "(timestamp: timestamp is not a real date and time",
    make: (r, c) => badTimestamp(r, c, `${firstTime(r).date}T24:00:00`),
  },
  {
    name: "timestamp <date>T<hh>:<mm>:60 of the first record (no such second, inside the window)",
    outcome: "dead-letter",
    says: () => "(timestamp: timestamp is not a real date and time",
    make: (r, c) => {
      const { date, hhmm } = firstTime(r);
      return badTimestamp(r, c, `${date}T${hhmm}:60`);
    },
  },
  {
    name: 'timestamp "yesterday"',
    outcome: "dead-letter",
    says: names("timestamp"),
    make: (r, c) => badTimestamp(r, c, "yesterday"),
  },
  {
    name: "timestamp as a number",
    outcome: "dead-letter",
    says: names("timestamp"),
    make: (r, c) => badTimestamp(r, c, 1_780_000_000),
  },
  {
    name: "timestamp with a zone",
    outcome: "dead-letter",
    says: names("timestamp"),
    make: (r, c) => badTimestamp(r, c, "2026-05-01T00:00:00Z"),
  },
  {
    name: "timestamp with a space",
    outcome: "dead-letter",
    says: names("timestamp"),
    make: (r, c) => badTimestamp(r, c, "2026-05-01 00:00:00"),
  },
  {
    name: "a 1 MB row without timestamp",
    outcome: "dead-letter",
    says: names("timestamp"),
    make: (r, c) => {
      const i = middle(r);
      const bad: Record<string, unknown> = { ...at(r, i), [firstValue(c)]: MEGABYTE_TEXT };
      delete bad.timestamp;
      return oneBadRow(r, i, JSON.stringify(bad));
    },
  },
  {
    name: "a number too large for a double (1e999)",
    outcome: "member-letter",
    says: namesFirstValue,
    make: (r, c) => oneBadMember(r, middle(r), bareTokenText(r, c, "1e999"), firstValue(c)),
  },
  {
    name: "NaN as a bare token",
    outcome: "dead-letter",
    says: () => "a record that is not JSON",
    make: (r, c) => bareToken(r, c, "NaN"),
  },
  {
    name: "-Infinity as a bare token",
    outcome: "dead-letter",
    says: () => "a record that is not JSON",
    make: (r, c) => bareToken(r, c, "-Infinity"),
  },
  {
    // not JSON at all, so not cut to the requested members: the whole element is a bad row
    name: "NaN as a bare token in an unrequested member",
    outcome: "dead-letter",
    says: () => "a record that is not JSON",
    make: (r) => {
      const i = middle(r);
      return oneBadRow(r, i, `${JSON.stringify(at(r, i)).slice(0, -1)},"surprise_member":NaN}`);
    },
  },
  {
    name: "a timestamp before InfluxDB's time range (1500-01-01T00:00:00)",
    outcome: "dropped-rows",
    make: (r, c) => ({
      text: withExtraRows(r, [
        { ...at(r, 0), timestamp: "1500-01-01T00:00:00", [firstValue(c)]: 123_456.5 },
      ]),
      written: r,
      outOfWindow: 1,
    }),
  },
  {
    name: "rows one second before and after the window",
    outcome: "dropped-rows",
    make: (r, c) => ({
      text: withExtraRows(r, [
        { ...at(r, 0), timestamp: recordTime(c.fromS - 1), [firstValue(c)]: 123_456.5 },
        { ...at(r, r.length - 1), timestamp: recordTime(c.toS + 1), [firstValue(c)]: 654_321.5 },
      ]),
      written: r,
      outOfWindow: 2,
    }),
  },
  {
    name: "repeated (timestamp, values_id) rows",
    outcome: "duplicate-rows",
    make: (r, c) => {
      // a changed copy right after the middle record, an identical copy of the last one at the end
      const i = middle(r);
      const texts = r.map((rec) => JSON.stringify(rec));
      texts.splice(i + 1, 0, JSON.stringify({ ...at(r, i), [firstValue(c)]: -777.25 }));
      texts.push(JSON.stringify(at(r, r.length - 1)));
      return { text: arrayText(texts), written: r, duplicates: 2 };
    },
  },
  {
    name: "unknown members",
    outcome: "dropped-members",
    make: (r) => ({
      text: JSON.stringify(
        r.map((rec) => ({
          ...rec,
          e_03_01_00_099_mystery_power: 1.5,
          e_03_99_42_001_unknown_codes: 7,
          surprise_member: "hello",
        })),
      ),
      written: r,
      extraMembers: 3 * r.length,
    }),
  },
  {
    // an unrequested member is removed whatever its value: it never makes the row invalid
    name: "unrequested members that are an object, an array and 1e999",
    outcome: "dropped-members",
    make: (r) => {
      const i = middle(r);
      const texts = r.map((rec) => JSON.stringify(rec));
      texts[i] =
        `${JSON.stringify({ ...at(r, i), e_03_99_42_001_unknown_codes: { v: 1 }, surprise_member: [1, 2] }).slice(0, -1)}` +
        ',"e_03_01_00_099_mystery_power":1e999}';
      return { text: arrayText(texts), written: r, extraMembers: 3 };
    },
  },
  {
    name: "a 1 MB text value",
    outcome: "accepted",
    make: (r, c) => {
      const i = middle(r);
      const written = r.map((rec, k) =>
        k === i ? { ...rec, [firstValue(c)]: MEGABYTE_TEXT } : rec,
      );
      return { text: JSON.stringify(written), written };
    },
  },
  {
    name: '"NaN" and "Infinity" as strings',
    outcome: "accepted",
    make: (r, c) => {
      const v0 = firstValue(c);
      const v1 = c.values[1] ?? v0;
      const last = r.length - 1;
      const i = middle(r);
      const written = r.map((rec, k) =>
        k === 0
          ? { ...rec, [v1]: "Infinity" }
          : k === i
            ? { ...rec, [v0]: "NaN" }
            : k === last
              ? { ...rec, [v0]: "-Infinity" }
              : rec,
      );
      return { text: JSON.stringify(written), written };
    },
  },
  {
    name: "numbers as strings",
    outcome: "accepted",
    make: (r, c) => {
      const v0 = firstValue(c);
      const i = middle(r);
      const written = r.map((rec, k) =>
        k === 0 ? { ...rec, [v0]: "1e3" } : k === i ? { ...rec, [v0]: " 42.5 " } : rec,
      );
      return { text: JSON.stringify(written), written };
    },
  },
];
export const FAILING_KINDS = BAD_KINDS.filter(fails).length;
export const DEAD_LETTER_KINDS = BAD_KINDS.filter((k) => k.outcome === "dead-letter").length;
export const MEMBER_LETTER_KINDS = BAD_KINDS.filter((k) => k.outcome === "member-letter").length;

/** True when what a kind made for a chunk is what its outcome says (decided per chunk window). */
export function madeAsDeclared(outcome: Outcome, made: Made): boolean {
  const letters = made.deadLetters?.length ?? 0;
  const members = made.memberLetters?.length ?? 0;
  switch (outcome) {
    case "dead-letter":
      return letters === 1 && members === 0 && (made.outOfWindow ?? 0) === 0;
    case "member-letter":
      return letters === 0 && members === 1;
    case "dropped-rows":
      return letters === 0 && (made.outOfWindow ?? 0) > 0;
    case "duplicate-rows":
      return letters === 0 && (made.duplicates ?? 0) > 0;
    case "dropped-members":
      return letters === 0 && (made.extraMembers ?? 0) > 0;
    default:
      return letters === 0 && members === 0;
  }
}
