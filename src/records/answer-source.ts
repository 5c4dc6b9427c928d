import type { z } from "zod";
import { scrubSecrets } from "../logger.js";
import { excerpt } from "../util/text.js";

/** Where a text of a 2xx answer came from, for messages. */
export interface AnswerSource {
  readonly endpoint: string;
  readonly status: number;
}

/** `GET /data/d/r answered HTTP 200 with <what>`, secrets removed. */
export function answeredWith({ endpoint, status }: AnswerSource, what: string): string {
  return scrubSecrets(`${endpoint} answered HTTP ${status} with ${what}`);
}

/** What a text that is not JSON is, for {@link answeredWith}. */
export function notJson(what: "body" | "record", text: string): string {
  return `a ${what} that is not JSON: ${excerpt(text)}`;
}

/** JSON of another shape, naming the first issue and the start of the text. */
export function unexpectedShape(
  issue: z.core.$ZodIssue | undefined,
  what: "body" | "record",
  text: string,
): string {
  const where = issue ? `${issue.path.join(".") || `(${what})`}: ${issue.message}` : "invalid";
  return `an unexpected ${what} (${where}); ${what} starts: ${excerpt(text)}`;
}
