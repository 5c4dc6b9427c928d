import type { Answered, ApiRequester, AttemptContext, CallOptions } from "./api-request.js";
import { encodeSegment } from "./endpoints.js";
import { ApiError, classifyTransportError } from "./errors.js";
import type { Exchange } from "./http-transport.js";
import { JsonArrayError } from "./json-array-scanner.js";
import { MAX_VALUES_PER_REQUEST, MAX_WINDOW_MS, VALUES_ID } from "./limits.js";
import { type AnswerSource, invalidResponse } from "./parse-answer.js";
import { formatQueryTime } from "./time-format.js";

/** A GET /data request (spec 4.4): at most 20 values over at most 7 days (spec 8). */
export interface DataQuery {
  readonly deviceId: string;
  readonly resourceId: string;
  readonly values: readonly string[];
  /** Start of the interval (inclusive, second precision). */
  readonly from: Date;
  /** End of the interval (inclusive, second precision). */
  readonly to: Date;
}

/** Caps that keep one hostile answer from using gigabytes. */
export interface DataLimits {
  /** Longest record of a GET /data answer, in bytes (API_MAX_RECORD_BYTES). */
  readonly maxRecordBytes: number;
  /** Largest GET /data answer in bytes (API_MAX_ANSWER_BYTES). */
  readonly maxAnswerBytes: number;
}

/** 1 MiB per record (a record of 20 values is under 2 KB), 512 MiB per answer. */
export const DEFAULT_DATA_LIMITS: DataLimits = {
  maxRecordBytes: 1024 * 1024,
  maxAnswerBytes: 512 * 1024 * 1024,
};

/** One whole answer to a GET /data request, read as it arrives. */
export interface DataAnswer {
  /** The API's clock when it answered (its `Date` header), epoch ms; undefined without one. */
  readonly serverTimeMs?: number;
  /** The request and its status, for messages. */
  readonly source: AnswerSource;
  /** Longest element to accept (API_MAX_RECORD_BYTES): what a reader of `bytes` frames with. */
  readonly maxRecordBytes: number;
  /**
   * The body's bytes as they arrive (a JSON array of records, spec 2.4), up to
   * API_MAX_ANSWER_BYTES; a failure of the transfer is thrown from here as an ApiError.
   */
  readonly bytes: AsyncIterable<Buffer>;
}

/** Reads one whole answer: what the caller makes of it (what it wrote, counted). */
export type ConsumeAnswer<T> = (answer: DataAnswer) => Promise<T>;

/**
 * GET /data/<device_id>/<resource_id> (spec 4.4), streamed: `consume` reads the body as it
 * arrives, while the download waits, so memory does not grow with the answer (see
 * answer-transcoder.ts and record-pages.ts for the two readers). Refuses queries over spec 8's
 * limits; an answer of more than `maxAnswerBytes` fails (not retried).
 *
 * `consume` reads one whole answer and returns what it made of it. When an answer fails midway
 * and is retried, `consume` is called again with the new answer from its start: it never sees an
 * attempt, only answers (its writes are idempotent: a point rewritten is the same point). A
 * {@link JsonArrayError} it throws says the body is not a JSON array of records: an
 * `invalid_response` (retried when the body looks cut off); any other error it throws itself ends
 * the request at once. Neither API_TIMEOUT_MS nor the deadline counts the time `consume` spends
 * between two pieces of the body.
 */
export async function fetchData<T>(
  requester: ApiRequester,
  limits: DataLimits,
  query: DataQuery,
  consume: ConsumeAnswer<T>,
  options: CallOptions = {},
): Promise<Answered<T>> {
  const path = `data/${encodeSegment(query.deviceId)}/${encodeSegment(query.resourceId)}`;
  assertWithinLimits(query, path);
  return requester.run(
    {
      method: "GET",
      path,
      route: "/data/{device}/{resource}",
      auth: "bearer",
      searchParams: {
        values: query.values.join(","),
        from: formatQueryTime(query.from),
        to: formatQueryTime(query.to),
      },
    },
    (exchange, context) => {
      const source: AnswerSource = { endpoint: context.endpoint, status: context.head.statusCode };
      const answer: DataAnswer = {
        serverTimeMs: context.head.serverTimeMs,
        source,
        maxRecordBytes: limits.maxRecordBytes,
        bytes: readBytes(exchange, context, source, limits),
      };
      return consume(answer).catch((error: unknown) => {
        throw error instanceof JsonArrayError ? answerFailure(error, source, limits) : error;
      });
    },
    options,
  );
}

/** The bytes of one answer as they arrive; its failures thrown as ApiErrors. */
async function* readBytes(
  exchange: Exchange,
  context: AttemptContext,
  source: AnswerSource,
  limits: DataLimits,
): AsyncGenerator<Buffer, void, undefined> {
  const { idle } = exchange;
  const { deadline } = context;
  let bytes = 0;
  idle.arm();
  try {
    for await (const buffer of exchange.body()) {
      bytes += buffer.length;
      if (bytes > limits.maxAnswerBytes) {
        throw invalidResponse(
          `more than ${limits.maxAnswerBytes} bytes (API_MAX_ANSWER_BYTES); ask for shorter windows or raise it`,
          false,
          "",
          source,
        );
      }
      // neither API_TIMEOUT_MS nor the deadline runs while the consumer holds a piece
      idle.disarm();
      deadline.suspend();
      yield buffer;
      deadline.resume();
      idle.arm();
    }
  } catch (error) {
    throw answerFailure(error, source, limits);
  } finally {
    idle.disarm();
  }
}

/** A failure while an answer was read, classified: a malformed body, or the transport's. */
function answerFailure(error: unknown, source: AnswerSource, limits: DataLimits): ApiError {
  if (error instanceof ApiError) return error;
  // the stream broke midway (reset, idle timeout)
  if (!(error instanceof JsonArrayError)) return classifyTransportError(source.endpoint, error);
  const what = error.tooLong
    ? `a record over ${limits.maxRecordBytes} bytes (API_MAX_RECORD_BYTES)`
    : `a body that is not a JSON array of records (${error.message})`;
  return new ApiError(`${source.endpoint} answered HTTP ${source.status} with ${what}`, {
    code: "invalid_response",
    endpoint: source.endpoint,
    status: source.status,
    retryable: error.truncated,
  });
}

/** Refuses a data query that the API would reject (spec 8): a programming error upstream. */
function assertWithinLimits(query: DataQuery, path: string): void {
  const endpoint = `GET /${path}`;
  const refuse = (why: string): never => {
    throw new ApiError(`refusing to send ${endpoint}: ${why}`, {
      code: "request_over_limit",
      endpoint,
      retryable: false,
    });
  };
  if (query.values.length === 0) refuse("no values requested");
  if (query.values.length > MAX_VALUES_PER_REQUEST) {
    refuse(`${query.values.length} values requested, the API allows ${MAX_VALUES_PER_REQUEST}`);
  }
  if (query.values.includes(VALUES_ID)) refuse(`${VALUES_ID} must not be requested (spec 4.4)`);
  const fromS = Math.floor(query.from.getTime() / 1000);
  const toS = Math.floor(query.to.getTime() / 1000);
  if (Number.isNaN(fromS) || Number.isNaN(toS)) refuse("from/to is not a valid date");
  if (toS < fromS) refuse("to is before from");
  if ((toS - fromS) * 1000 > MAX_WINDOW_MS) {
    refuse(`the window is ${((toS - fromS) / 86400).toFixed(2)} days, the API allows 7`);
  }
}
