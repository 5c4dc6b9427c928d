import type { PointSink } from "../influx/point-sink.js";
import { scrubSecrets } from "../logger.js";
import { dataRecordSchema } from "../records/data-record.js";
import type { DeadLetterStore } from "../state/dead-letter-store.js";
import type { DeadLetter } from "../state/types.js";
import { lineBatch } from "../transform/line-protocol.js";
import { RecordEncoder } from "../transform/record-encoder.js";
import {
  AnswerScreen,
  type BadMember,
  badMemberMessage,
  keepRequested,
} from "../transform/screen-answer.js";
import type { ValueIdDecoder } from "../transform/value-id.js";
import { messageOf } from "../util/errors.js";
import { excerpt } from "../util/text.js";

/** What `dead-letters --retry` did. */
export interface RetryOutcome {
  /** Dead letters written now (and forgotten). */
  readonly written: number;
  /** Still refused (kept, with the new error). */
  readonly refused: number;
  /** Cut when stored, so they cannot be written again. */
  readonly skipped: number;
  /** Members of written rows still not valid, each kept as a dead letter of its own. */
  readonly setAside: number;
}

export interface RetryDeps {
  readonly deadLetters: DeadLetterStore;
  readonly sink: Pick<PointSink, "write">;
  readonly decoder: ValueIdDecoder;
  readonly now: () => Date;
}

/** The lines of a dead-lettered row or member, and the members still set aside. */
interface RowLines {
  readonly lines: string[];
  readonly bad: readonly BadMember[];
}

/** Writes dead letters again, forgetting those stored; throws when the sink fails as a whole. */
export async function retryDeadLetters(
  deps: RetryDeps,
  letters: readonly DeadLetter[],
): Promise<RetryOutcome> {
  let written = 0;
  let refused = 0;
  let skipped = 0;
  let setAside = 0;
  for (const letter of letters) {
    if (letter.truncated) {
      skipped++;
      continue;
    }
    const row: RowLines | string =
      letter.kind === "line"
        ? { lines: [letter.payload], bad: [] }
        : linesOfRow(deps.decoder, letter);
    if (typeof row === "string") {
      deps.deadLetters.recordRetryFailure(letter.id, scrubSecrets(row), deps.now());
      refused++;
      continue;
    }
    const outcome = await deps.sink.write(lineBatch(row.lines));
    const [rejected] = outcome.rejected;
    if (rejected !== undefined) {
      const error = `HTTP ${rejected.status}: ${rejected.error}`;
      deps.deadLetters.recordRetryFailure(letter.id, scrubSecrets(error), deps.now());
      refused++;
      continue;
    }
    const { deviceId, resourceId, windowFromS, windowToS, payload } = letter;
    for (const member of row.bad) {
      const error = `an invalid member (${badMemberMessage(member)}); the other members of its row were written by dead-letters --retry`;
      const where = { deviceId, resourceId, windowFromS, windowToS, valueIds: [member.valueId] };
      const kept = { kind: "member" as const, ...where, payload, error: scrubSecrets(error) };
      deps.deadLetters.add(kept, deps.now());
    }
    setAside += row.bad.length;
    deps.deadLetters.remove(letter.id);
    written++;
  }
  return { written, refused, skipped, setAside };
}

/** The lines of a dead-lettered row (its invalid members set aside) or member, or why not. */
function linesOfRow(decoder: ValueIdDecoder, letter: DeadLetter): RowLines | string {
  let json: unknown;
  try {
    json = JSON.parse(letter.payload);
  } catch (error) {
    return `not JSON: ${messageOf(error)}`;
  }
  const bad: BadMember[] = [];
  // as the client reads a row now: cut to the requested values first, then judged
  if (!keepRequested(json, new Set(letter.valueIds), [], bad)) {
    const issue = dataRecordSchema.safeParse(json).error?.issues[0];
    const where = issue ? `${issue.path.join(".") || "(record)"}: ${issue.message}` : "invalid";
    return `still not a valid record (${where}); record starts: ${excerpt(letter.payload)}`;
  }
  const [member] = bad;
  if (letter.kind === "member" && member !== undefined) {
    return `still not a valid member (${badMemberMessage(member)})`;
  }
  const screen = new AnswerScreen(letter.windowFromS, letter.windowToS);
  const kept = screen.keep([json]);
  const lines: string[] = [];
  new RecordEncoder(decoder, letter.deviceId, letter.resourceId).encode(kept, lines);
  return { lines, bad };
}
