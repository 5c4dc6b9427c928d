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

/** Parses a 2xx body with `schema`: not JSON may be cut off (retryable); another shape is final. */
export function parseJson<S extends z.ZodType>(
  text: string,
  schema: S,
  source: AnswerSource,
): z.infer<S> | ApiError {
  let json: unknown;
  try {
    json = text.trim() === "" ? undefined : JSON.parse(text);
  } catch {
    return invalidResponse(notJson("body", text), true, text, source);
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return parsed.data;
  return invalidResponse(
    unexpectedShape(parsed.error.issues[0], "body", text),
    false,
    text,
    source,
  );
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
