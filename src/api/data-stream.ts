import type { AnswerSource } from "../records/answer-source.js";
import type { Answered, ApiRequester, CallOptions } from "./api-request.js";
import { ApiError, classifyTransportError } from "./errors.js";
import { HeldBody } from "./held-body.js";
import { invalidResponse } from "./parse-answer.js";
import { encodeSegment } from "./path-segment.js";
import { formatQueryTime } from "./time-format.js";
import type { Exchange } from "./transport.js";

/** A GET /data request (spec 4.4), within spec 8's limits as the planner cut it. */
export interface DataQuery {
  readonly deviceId: string;
  readonly resourceId: string;
  readonly values: readonly string[];
  /** The interval, both ends inclusive (second precision). */
  readonly from: Date;
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

/** How a GET /data request is made: its signal, and who is told the bytes its body holds. */
export interface DataCallOptions extends CallOptions {
  /** Told the body's bytes so far and the memory they hold, as each piece arrives. */
  readonly onHeld?: (body: HeldSize) => void;
}

/** A body's bytes so far and the memory they hold ({@link HeldBody}). */
export type HeldSize = Pick<HeldBody, "bytes" | "heldBytes">;

/** One whole answer to a GET /data request, as transform/record-pages.ts's AnswerBody reads it. */
export interface DataAnswer {
  readonly source: AnswerSource;
  /** Longest element to accept (API_MAX_RECORD_BYTES). */
  readonly maxRecordBytes: number;
  /** The body's bytes in order (a JSON array of records, spec 2.4). */
  readonly pieces: Iterable<Buffer>;
}

/**
 * GET /data/<device_id>/<resource_id> (spec 4.4): the whole answer, read to its end inside the
 * request, so that a failure midway (a reset, a stall, a body cut off) is retried here and the
 * caller only gets answers that came whole. An answer over `maxAnswerBytes` fails for good.
 */
export async function fetchData(
  requester: ApiRequester,
  limits: DataLimits,
  query: DataQuery,
  options: DataCallOptions = {},
): Promise<Answered<DataAnswer>> {
  const path = `data/${encodeSegment(query.deviceId)}/${encodeSegment(query.resourceId)}`;
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
    async (exchange, context) => {
      const source: AnswerSource = { endpoint: context.endpoint, status: context.head.statusCode };
      const body = await readWhole(exchange, source, limits, options.onHeld);
      checkEnds(body, source);
      return { source, maxRecordBytes: limits.maxRecordBytes, pieces: body };
    },
    options,
  );
}

/** The body, read to its end; its failures thrown as ApiErrors. */
async function readWhole(
  exchange: Exchange,
  source: AnswerSource,
  limits: DataLimits,
  onHeld?: (body: HeldSize) => void,
): Promise<HeldBody> {
  const body = new HeldBody();
  try {
    for await (const piece of exchange.body()) {
      if (body.bytes + piece.length > limits.maxAnswerBytes) {
        const why = `more than ${limits.maxAnswerBytes} bytes (API_MAX_ANSWER_BYTES)`;
        throw invalidResponse(`${why}; ask for shorter windows or raise it`, false, "", source);
      }
      body.push(piece);
      onHeld?.(body);
    }
  } catch (error) {
    // the stream broke midway (a reset, a stall of API_TIMEOUT_MS)
    throw error instanceof ApiError ? error : classifyTransportError(source.endpoint, error);
  }
  return body;
}

/**
 * Another JSON value is final; an empty body, not JSON (a gateway's page) or unclosed is retried.
 */
function checkEnds({ firstByte: first, lastByte: last }: HeldBody, source: AnswerSource): void {
  if (first === OPEN && last === CLOSE) return;
  const [why, retryable] =
    first === -1
      ? ["empty body", true]
      : first === OPEN
        ? ["the array is not closed", true]
        : JSON_VALUE_START.includes(String.fromCharCode(first))
          ? ["a JSON value that is not an array", false]
          : ["not JSON", true];
  throw invalidResponse(
    `a body that is not a JSON array of records (${why})`,
    retryable,
    "",
    source,
  );
}

/** The first byte of a JSON value other than an array. */
const JSON_VALUE_START = '{"tfn-0123456789';
const OPEN = 0x5b;
const CLOSE = 0x5d;
