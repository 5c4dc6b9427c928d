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
 * The reference path for one element (what the fast path leaves, and record-pages.ts): JSON.parse,
 * cut to what was requested ({@link keepRequested}); unrequested members' names go to `extras`.
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
          : bad.map((member) => {
              const what = `an invalid member (${badMemberMessage(member)}); record starts: `;
              return { valueId: member.valueId, error: answeredWith(source, what + excerpt(text)) };
            }),
    };
  }
  const issue = dataRecordSchema.safeParse(json).error?.issues[0];
  return { invalid: answeredWith(source, unexpectedShape(issue, "record", text)) };
}
