import type { z } from "zod";
import { registerSecret, scrubSecrets } from "../logger.js";
import {
  type AnswerSource,
  answeredWith,
  notJson,
  unexpectedShape,
} from "../records/answer-source.js";
import { excerpt } from "../util/text.js";
import { ApiError } from "./errors.js";

export type { AnswerSource } from "../records/answer-source.js";

/**
 * Parses and validates one JSON text of a 2xx answer (a whole body) with `schema`. Text that is
 * not JSON may be a cut-off transfer, so that error is retryable; JSON of another shape is final.
 */
export function parseJson<S extends z.ZodType>(
  text: string,
  schema: S,
  source: AnswerSource,
): z.infer<S> | ApiError {
  const json = parseText(text, "body", source);
  if (json instanceof ApiError) return json;
  const parsed = schema.safeParse(json);
  if (parsed.success) return parsed.data;
  return unexpected(parsed.error.issues[0], "body", text, source);
}

/** JSON.parse of a 2xx body or element; text that is not JSON may be cut off: retryable. */
export function parseText(text: string, what: "body" | "record", source: AnswerSource): unknown {
  try {
    return text.trim() === "" ? undefined : JSON.parse(text);
  } catch {
    return invalidResponse(notJson(what, text), true, text, source);
  }
}

/** JSON of another shape: final, naming the first issue and the start of the text. */
export function unexpected(
  issue: z.core.$ZodIssue | undefined,
  what: "body" | "record",
  text: string,
  source: AnswerSource,
): ApiError {
  return invalidResponse(unexpectedShape(issue, what, text), false, text, source);
}

/** A 2xx answer energy-etl cannot use, as an `invalid_response` error (secrets removed). */
export function invalidResponse(
  message: string,
  retryable: boolean,
  text: string,
  source: AnswerSource,
): ApiError {
  const { endpoint, status } = source;
  return new ApiError(answeredWith(source, message), {
    code: "invalid_response",
    endpoint,
    status,
    retryable,
    bodyExcerpt: scrubSecrets(excerpt(text)),
  });
}

/** Registers the string members `names` of a JSON object text as secrets (whatever else it is). */
export function registerSecretMembers(text: string, names: readonly string[]): void {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return;
  }
  if (typeof json !== "object" || json === null) return;
  for (const name of names) {
    const value: unknown = (json as Record<string, unknown>)[name];
    if (typeof value === "string" && value !== "") registerSecret(value);
  }
}
