import { dataRecordSchema, keepRequested } from "../api/schemas.js";
import type { PointSink } from "../influx/point-sink.js";
import { scrubSecrets } from "../logger.js";
import type { DeadLetterStore } from "../state/dead-letter-store.js";
import type { DeadLetter } from "../state/types.js";
import { RecordEncoder } from "../transform/record-encoder.js";
import type { ValueIdDecoder } from "../transform/value-id.js";
import { messageOf } from "../util/errors.js";
import { excerpt } from "../util/text.js";
import { AnswerScreen } from "./screen-records.js";

/** What `dead-letters --retry` did. */
export interface RetryOutcome {
  /** Dead letters written now (and forgotten). */
  readonly written: number;
  /** Still refused (kept, with the new error and one more retry counted). */
  readonly refused: number;
  /** Cut when stored, so they cannot be written again (kept as they are). */
  readonly skipped: number;
}

/** What retrying needs. */
export interface RetryDeps {
  readonly deadLetters: DeadLetterStore;
  readonly sink: Pick<PointSink, "write">;
  readonly decoder: ValueIdDecoder;
  readonly now: () => Date;
}

/**
 * Writes dead letters again, as the pipeline would now: a row is validated again (a newer version
 * may accept it), cut to what was asked for and encoded; a line is sent as it is. What InfluxDB
 * stores is forgotten; what is still refused stays, with its new error. Throws when the sink
 * fails as a whole (InfluxDB unreachable, token refused): nothing is lost then.
 */
export async function retryDeadLetters(
  deps: RetryDeps,
  letters: readonly DeadLetter[],
): Promise<RetryOutcome> {
  let written = 0;
  let refused = 0;
  let skipped = 0;
  for (const letter of letters) {
    if (letter.truncated) {
      skipped++;
      continue;
    }
    const lines = letter.kind === "line" ? [letter.payload] : linesOfRow(deps.decoder, letter);
    if (typeof lines === "string") {
      deps.deadLetters.recordRetryFailure(letter.id, scrubSecrets(lines), deps.now());
      refused++;
      continue;
    }
    const outcome = await deps.sink.write(lines);
    const [rejected] = outcome.rejected;
    if (rejected === undefined) {
      deps.deadLetters.remove(letter.id);
      written++;
    } else {
      const error = `HTTP ${rejected.status}: ${rejected.error}`;
      deps.deadLetters.recordRetryFailure(letter.id, scrubSecrets(error), deps.now());
      refused++;
    }
  }
  return { written, refused, skipped };
}

/** The lines of a dead-lettered row, or why it is still not a record. */
function linesOfRow(decoder: ValueIdDecoder, letter: DeadLetter): string[] | string {
  let json: unknown;
  try {
    json = JSON.parse(letter.payload);
  } catch (error) {
    return `not JSON: ${messageOf(error)}`;
  }
  // as the client reads a row now: cut to the requested values first, then judged
  if (!keepRequested(json, new Set(letter.valueIds), [])) {
    const issue = dataRecordSchema.safeParse(json).error?.issues[0];
    const where = issue ? `${issue.path.join(".") || "(record)"}: ${issue.message}` : "invalid";
    return `still not a valid record (${where}); record starts: ${excerpt(letter.payload)}`;
  }
  const screen = new AnswerScreen(letter.windowFromS, letter.windowToS);
  const kept = screen.keep([json]);
  const lines: string[] = [];
  new RecordEncoder(decoder, letter.deviceId, letter.resourceId).encode(kept, lines);
  return lines;
}
