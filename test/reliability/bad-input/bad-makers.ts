/**
 * The makers of bad answers of the bad-input tests: a chunk's good records as a body with one bad
 * row, one bad member, a bad timestamp, a bare token that is not JSON or extra rows; each with what
 * must come of it.
 */
import type { Chunk } from "../../../src/pipeline/plan-chunks.js";
import type { DataRecord } from "../../../src/records/data-record.js";
import { droppedInvalid } from "./oracle.js";
import { arrayText, at } from "./scenario.js";

/** A chunk's body and what it must give. */
export interface Made {
  readonly text: string;
  readonly contentType?: string;
  /** The records InfluxDB must hold once the chunk is done (none for a failing body). */
  readonly written: DataRecord[];
  /** The texts of the elements that must become dead letters. */
  readonly deadLetters?: readonly string[];
  /** The members that must become dead letters, each with its row's text. */
  readonly memberLetters?: readonly { readonly text: string; readonly valueId: string }[];
  /** Rows outside the window, repeated rows and members not requested: dropped and counted. */
  readonly outOfWindow?: number;
  readonly duplicates?: number;
  readonly extraMembers?: number;
}

export const firstValue = (chunk: Chunk): string => chunk.values[0] ?? "missing";
export const middle = (items: readonly unknown[]): number => Math.floor(items.length / 2);

/** The records as a body, the one at `index` replaced by the element text `bad`. */
export function oneBadRow(records: DataRecord[], index: number, bad: string): Made {
  const texts = records.map((r) => JSON.stringify(r));
  texts[index] = bad;
  return {
    text: arrayText(texts),
    written: records.filter((_, i) => i !== index),
    deadLetters: [bad],
  };
}
/** The records as a body, the one at `index` sent as `text` with its member `valueId` bad. */
export function oneBadMember(
  records: DataRecord[],
  index: number,
  text: string,
  valueId: string,
): Made {
  const texts = records.map((r) => JSON.stringify(r));
  texts[index] = text;
  return {
    text: arrayText(texts),
    written: records.map((r, i) =>
      i === index
        ? (Object.fromEntries(Object.entries(r).filter(([k]) => k !== valueId)) as DataRecord)
        : r,
    ),
    memberLetters: [{ text, valueId }],
  };
}
/** One bad member: the middle record with its first requested member set to `value`. */
export const badMember = (records: DataRecord[], chunk: Chunk, value: unknown): Made => {
  const i = middle(records);
  const id = firstValue(chunk);
  return oneBadMember(records, i, JSON.stringify({ ...at(records, i), [id]: value }), id);
};

/**
 * One bad row: the first record with `timestamp`. Decided from the chunk's window text, as the
 * pipeline does: a dead letter, or dropped and counted when the timestamp is readable text outside
 * the window.
 */
export const badTimestamp = (records: DataRecord[], chunk: Chunk, timestamp: unknown): Made => {
  const made = oneBadRow(records, 0, JSON.stringify({ ...at(records, 0), timestamp }));
  const [text = ""] = made.deadLetters ?? [];
  if (!droppedInvalid(text, chunk.fromS, chunk.toS)) return made;
  return { text: made.text, written: made.written, outOfWindow: 1 };
};
/** The date and the hour and minute of the chunk's first record (inside its window). */
export const firstTime = (records: DataRecord[]) => {
  const [date = "", time = ""] = at(records, 0).timestamp.split("T");
  return { date, hhmm: time.slice(0, 5) };
};
/** The middle record's text with its first requested member written as a bare token. */
export const bareTokenText = (records: DataRecord[], chunk: Chunk, token: string): string => {
  const rest: Record<string, unknown> = { ...at(records, middle(records)) };
  delete rest[firstValue(chunk)];
  return `${JSON.stringify(rest).slice(0, -1)},${JSON.stringify(firstValue(chunk))}:${token}}`;
};
/** One bad row: the middle record with its first requested member a token that is not JSON. */
export const bareToken = (records: DataRecord[], chunk: Chunk, token: string): Made =>
  oneBadRow(records, middle(records), bareTokenText(records, chunk, token));
/** The records as a body with `extra` rows appended. */
export const withExtraRows = (records: DataRecord[], extra: readonly unknown[]): string =>
  arrayText([...records, ...extra].map((r) => JSON.stringify(r)));

/** About a million characters ("1 MB"), under the default API_MAX_RECORD_BYTES with its record. */
export const MEGABYTE_TEXT = `ü${"energy ".repeat(142_857)}ß`;
/** A record's error names the member: `(member: what is wrong)`. */
export const names = (member: string) => () => `(${member}: `;
export const namesFirstValue = (chunk: Chunk) => `(${firstValue(chunk)}: `;
