/**
 * The reference path of reading a GET /data answer: one element's text parsed with JSON.parse and
 * cut to what was asked for ({@link keepRequested}). The fast path (record-scanner.ts) hands it
 * every element it does not read itself; the records view (record-pages.ts) reads every element
 * with it.
 */

import { ApiError } from "../api/errors.js";
import { type AnswerSource, parseText, unexpected } from "../api/parse-answer.js";
import { type DataRecord, dataRecordSchema } from "../api/schemas.js";
import { scrubSecrets } from "../logger.js";
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
  const json = parseText(text, "record", source);
  if (json instanceof ApiError) return { invalid: json.message };
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
  return { invalid: unexpected(issue, "record", text, source).message };
}

/** Why a member of a record was set aside, in the words of an invalid record's error. */
function badMemberError(member: BadMember, text: string, source: AnswerSource): string {
  const message = `an invalid member (${badMemberMessage(member)}); record starts: ${excerpt(text)}`;
  return scrubSecrets(`${source.endpoint} answered HTTP ${source.status} with ${message}`);
}
