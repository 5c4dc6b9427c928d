/**
 * The reference path of reading a GET /data answer: one element's text parsed with JSON.parse and
 * cut to what was asked for ({@link keepRequested}). The fast path (record-scanner.ts) hands it
 * every element it does not read itself; the records view (record-pages.ts) reads every element
 * with it.
 */

import {
  type AnswerSource,
  answeredWith,
  notJson,
  unexpectedShape,
} from "../records/answer-source.js";
import { type DataRecord, dataRecordSchema } from "../records/data-record.js";
import { excerpt } from "../util/text.js";
import { type BadMember, badMemberMessage, keepRequested } from "./screen-answer.js";

/** A member of a record that was set aside, and why. */
export interface SetAsideMember {
  readonly valueId: string;
  readonly error: string;
}

/** What one element of an answer is: a record (with the members set aside), or why not. */
export type DecodedElement =
  | { readonly record: DataRecord; readonly badMembers: readonly SetAsideMember[] }
  | { readonly invalid: string };

const NONE: readonly SetAsideMember[] = Object.freeze([]);

/**
 * One element of a GET /data answer, cut to what was requested (see {@link keepRequested}): the
 * record and its members that were not valid, or what is wrong with it. Names of members not
 * requested are appended to `extras`.
 */
export function decodeElement(
  text: string,
  requested: ReadonlySet<string>,
  extras: string[],
  source: AnswerSource,
): DecodedElement {
  let json: unknown;
  try {
    json = text.trim() === "" ? undefined : JSON.parse(text);
  } catch {
    return { invalid: answeredWith(source, notJson("record", text)) };
  }
  const bad: BadMember[] = [];
  if (keepRequested(json, requested, extras, bad)) {
    return {
      record: json,
      badMembers:
        bad.length === 0
          ? NONE
          : bad.map((member) => ({
              valueId: member.valueId,
              error: badMemberError(member, text, source),
            })),
    };
  }
  const issue = dataRecordSchema.safeParse(json).error?.issues[0];
  return { invalid: answeredWith(source, unexpectedShape(issue, "record", text)) };
}

/** Why a member of a record was set aside, in the words of an invalid record's error. */
function badMemberError(member: BadMember, text: string, source: AnswerSource): string {
  return answeredWith(
    source,
    `an invalid member (${badMemberMessage(member)}); record starts: ${excerpt(text)}`,
  );
}
