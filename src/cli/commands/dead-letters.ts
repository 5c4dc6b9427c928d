import type { Command } from "commander";
import { z } from "zod";
import { deadLetterTimeS } from "../../pipeline/audit-counts.js";
import { type RetryOutcome, RetryStopped, retryDeadLetters } from "../../pipeline/dead-letters.js";
import type { Pipeline } from "../../pipeline/pipeline.js";
import { type RollupResult, rollupsAfterRun } from "../../rollups/rollup-run.js";
import type { RetryLetter } from "../../state/dead-letter-store.js";
import type { StateStore } from "../../state/state-store.js";
import { type DeadLetter, MAX_DEAD_LETTER_CHARS } from "../../state/types.js";
import { counted } from "../../util/text.js";
import { isoSeconds } from "../../util/utc-time.js";
import type { CommandContext } from "../context.js";
import {
  type CliIo,
  examples,
  parsedAction,
  parseOptions,
  UsageError,
  writeJson,
  writeLine,
  writeText,
} from "../io.js";
import { countOption, nameOption } from "../options.js";
import { StepProgress } from "../progress.js";
import { fitText, renderItems, renderTable, type TableStream, widthOf } from "../table.js";
import { withPipeline } from "../with-pipeline.js";
import { withStateStore } from "../with-state-store.js";
import { rollupsNote, throwIfRollupsFailed } from "./rollups.js";

const optionsSchema = z
  .object({
    device: nameOption("--device", "a device id").optional(),
    limit: countOption("--limit", 1, 1_000_000).optional(),
    list: z.boolean().optional(),
    json: z.boolean().optional(),
    retry: z.boolean().optional(),
    clear: z.boolean().optional(),
  })
  .refine((o) => !(o.retry && o.clear), "--retry and --clear exclude each other");

/** Dead letters read at once by --retry. */
const RETRY_PAGE = 1000;

/** Dead letters `--list` shows without `--limit`. */
const LIST_LIMIT = 50;

const when = (s: number) => isoSeconds(s).slice(0, 16);
const instant = (s: number) => isoSeconds(s).replace(".000Z", "Z");

/** What the summary of a run adds about the dead letters it made ("" when it made none). */
export function newDeadLettersNote(count: number): string {
  return count === 0
    ? ""
    : `; ${count} new dead letter${count === 1 ? "" : "s"} (see energy-etl dead-letters)`;
}

/** An error's gist: the member or line and what is wrong, without the request and the payload. */
function errorGist(error: string): string {
  const text = error
    .replace(/^[A-Z]+ \S+ answered HTTP \d+ with /, "")
    .replace(/;\s*\w+ starts: [\s\S]*$/, "");
  const detail = /^(?:an )?unexpected \w+ \(([\s\S]*)\)$/.exec(text)?.[1];
  return (detail ?? text).replace(/\bpartial write: /, "").replace(/\s+dropped=\d+\s*$/, "");
}

/** The dead letters as a table: on a terminal fitted (the error's gist), piped whole. */
function lettersTable(letters: readonly DeadLetter[], stream: TableStream): string {
  const tty = stream.isTTY === true;
  const time = tty
    ? timeColumn(letters)
    : (l: DeadLetter) => `${when(l.windowFromS)} .. ${when(l.windowToS)}`;
  // the narrowing of each column applies on a terminal only
  return renderItems(
    [
      [{ head: "id", narrow: "keep" }, (l) => String(l.id)],
      [{ head: "kind", narrow: "keep", optional: true }, (l) => l.kind],
      [{ head: "device", narrow: "cut" }, (l) => l.deviceId],
      [{ head: "resource", narrow: "cut", min: 8 }, (l) => l.resourceId],
      [{ head: tty ? "time (UTC)" : "window (UTC)", narrow: "keep" }, time],
      [{ head: "seen", narrow: "keep", optional: true }, (l) => String(l.occurrences)],
      // a value id and its colon on one line (e_00_00_03_001_operating_mode: 30)
      [{ head: "error", min: 32 }, (l) => (tty ? errorGist(l.error) : l.error)],
      ...(tty ? [] : [["payload", (l: DeadLetter) => l.payload] as const]),
    ],
    letters,
    stream,
  );
}

/** Each letter's time; the year only when one is of another year than this one (as ls -l). */
function timeColumn(letters: readonly DeadLetter[]): (letter: DeadLetter) => string {
  const timeOf = (l: DeadLetter) => deadLetterTimeS(l) ?? l.windowFromS;
  const time = shortTime(letters.map(timeOf));
  return (l) => time(timeOf(l));
}

/** One dead letter whole, a field a line (each a line of writeLine, whatever it holds). */
function letterLines(l: DeadLetter): string[] {
  const at = deadLetterTimeS(l);
  return [
    `dead letter ${l.id}: ${l.kind} of ${l.deviceId} / ${l.resourceId}`,
    `time:     ${at === undefined ? "unknown" : instant(at)} (window ${instant(l.windowFromS)} .. ${instant(l.windowToS)})`,
    `values:   ${l.valueIds.length} requested: ${l.valueIds.join(", ")}`,
    `seen:     ${counted(l.occurrences, "time")}, first ${l.firstSeen}, last ${l.lastSeen}; ${counted(l.retries, "retry", "retries")} failed`,
    `error:    ${l.error}`,
    `payload:  ${l.payload}`,
    ...(l.truncated
      ? [`          (cut at ${MAX_DEAD_LETTER_CHARS} characters when kept: --retry skips it)`]
      : []),
  ];
}

export function registerDeadLettersCommand(program: Command, io: CliIo): void {
  const deadLetters = program
    .command("dead-letters")
    .description(
      "list the rows and members that failed validation and the lines InfluxDB refused (kept " +
        "instead of freezing their device); --retry writes again what can now be written",
    )
    .option("-d, --device <id>", "only this device's")
    .option(
      "--list",
      `one row per dead letter, oldest first (at most ${LIST_LIMIT} unless --limit)`,
    )
    .option("--limit <n>", "at most n (oldest first); without --retry, --clear or --json: --list")
    .option("--json", "print them as JSON, payloads whole")
    .option("--retry", "write them again; what InfluxDB stores is forgotten")
    .option("--clear", "forget them (after reading them)")
    .addHelpText(
      "after",
      examples(
        "energy-etl dead-letters",
        "energy-etl dead-letters --list --limit 200",
        "energy-etl dead-letters --device hybrid-site-01 --json",
        "energy-etl dead-letters show 12",
        "energy-etl dead-letters --retry",
      ),
    )
    .action(
      parsedAction(optionsSchema, (opts, command) => {
        const only = { deviceId: opts.device, limit: opts.limit };
        // the retry writes as a backfill does: its sinks, its rollups, its SIGINT/SIGTERM
        if (opts.retry) {
          const target = { stateMustExist: true };
          return withPipeline(command, io, target, (pipeline, context) =>
            retryLetters(pipeline, only, context),
          );
        }
        return withStateStore(command, io, (store) => {
          if (opts.list || (opts.limit !== undefined && !opts.clear && !opts.json)) {
            const limit = opts.limit ?? LIST_LIMIT;
            listLetters(io, store, store.deadLetters.list({ ...only, limit }), opts.device);
            return;
          }
          const letters = store.deadLetters.list(only);
          if (opts.clear) {
            store.deadLetters.forget(letters.map((l) => l.id));
            writeLine(io.stdout, `forgot ${counted(letters.length, "dead letter")}`);
          } else if (opts.json) writeJson(io.stdout, letters);
          else summarizeLetters(io, letters);
        });
      }),
    );

  deadLetters
    .command("show")
    .description("one dead letter whole: its error, its row or line, the values requested")
    .argument("<id>", "its id (first column of energy-etl dead-letters)")
    .option("--json", "print it as JSON")
    .action(async (rawId: string, _opts: unknown, command: Command) =>
      showLetter(io, rawId, command),
    );
}

/** `--retry`, then the rollups of what it wrote; a write failing as a whole stops it (exit 1). */
async function retryLetters(
  pipeline: Pipeline,
  only: { readonly deviceId?: string; readonly limit?: number },
  context: CommandContext,
): Promise<void> {
  const { io, logger, terminal } = context;
  const { store } = pipeline;
  const { count, lastId } = store.deadLetters.span(only);
  const progress = new StepProgress("dead-letters --retry", "dead letters", logger, terminal);
  progress.start(count);
  let outcome: RetryOutcome;
  try {
    outcome = await retryDeadLetters(
      {
        deadLetters: store.deadLetters,
        rollups: pipeline.rollups?.marks,
        transaction: (work) => store.transaction(work),
        sink: pipeline.sink,
        decoder: pipeline.decoder,
        batchLines: context.config.influx.batchSize,
        now: pipeline.now,
        isStopping: () => pipeline.isStopping,
        progress: (n) => progress.step(n),
      },
      pagesOf(store, only.deviceId, lastId ?? 0),
    );
  } catch (error) {
    if (!(error instanceof RetryStopped)) throw error;
    progress.stop();
    writeLine(io.stdout, retrySummary(count, error.outcome, pipeline.sink.target));
    throw new Error(
      `dead-letters --retry stopped: ${error.message}; the ${count - error.outcome.written - error.outcome.recomputed} dead letters not written are kept (run the same command again)`,
    );
  } finally {
    progress.stop();
  }
  const devices = [...outcome.devices];
  const rollups = await rollupsAfterRun(
    pipeline.rollups,
    { logger },
    devices,
    () => pipeline.isStopping,
  );
  writeLine(io.stdout, retrySummary(count, outcome, pipeline.sink.target, rollups));
  throwIfRollupsFailed(rollups);
}

/** The dead letters up to `upToId` (the last when the retry started), a page at a time. */
function* pagesOf(
  store: Pick<StateStore, "deadLetters">,
  deviceId: string | undefined,
  upToId: number,
): Generator<RetryLetter[]> {
  for (let afterId = 0; ; ) {
    const page = store.deadLetters.retryPage({ deviceId, afterId, upToId, limit: RETRY_PAGE });
    const last = page.at(-1);
    if (last === undefined) return;
    yield page;
    afterId = last.id;
  }
}

function retrySummary(
  total: number,
  outcome: RetryOutcome,
  target: string,
  rollups?: RollupResult,
): string {
  const { written, setAside, refused, skipped, recomputed, rollupsOff, tried } = outcome;
  const left = total - tried;
  return (
    `retried ${counted(tried, "dead letter")}: ${written} written` +
    (setAside > 0
      ? ` (${setAside} of their members still invalid: kept as member dead letters)`
      : "") +
    `, ${refused} still refused, ${skipped} cut when kept (not retried)` +
    (recomputed > 0 ? `, ${recomputed} rollup points recomputed from the raw data instead` : "") +
    (rollupsOff > 0
      ? `, ${rollupsOff} rollup points kept (not written as they are; this retry writes no rollups)`
      : "") +
    (left > 0 ? `, ${left} not tried` : "") +
    ` -> ${target}${rollupsNote(rollups)}`
  );
}

function listLetters(
  io: CliIo,
  store: StateStore,
  letters: readonly DeadLetter[],
  deviceId: string | undefined,
): void {
  if (letters.length === 0) {
    writeLine(io.stdout, "no dead letters");
    return;
  }
  writeText(io.stdout, lettersTable(letters, io.stdout));
  const total = store.deadLetters.span({ deviceId }).count;
  const footer = [
    `${letters.length} of ${counted(total, "dead letter")} (--json for whole payloads, --retry to write them again)`,
    ...(total > letters.length ? [`${total - letters.length} more: --limit ${total}`] : []),
    "one whole: energy-etl dead-letters show ID",
  ];
  for (const line of footer) writeText(io.stdout, fitText(line, io.stdout));
}

/** Dead letters of one device, value id and reason. */
interface LetterGroup {
  readonly deviceId: string;
  readonly valueId: string;
  readonly reason: string;
  count: number;
  firstS: number;
  lastS: number;
}

/** The value id a dead letter is about: a member's own (or a row's only one), else how many. */
const letterValueId = (l: DeadLetter): string =>
  l.valueIds.length === 1 ? (l.valueIds[0] ?? "") : `(${counted(l.valueIds.length, "value")})`;

/** The letters grouped by device, value id and reason (the error's gist), the biggest first. */
function groupLetters(letters: readonly DeadLetter[]): LetterGroup[] {
  const groups = new Map<string, LetterGroup>();
  for (const letter of letters) {
    const [deviceId, valueId, reason] = [
      letter.deviceId,
      letterValueId(letter),
      errorGist(letter.error),
    ];
    const atS = deadLetterTimeS(letter) ?? letter.windowFromS;
    const key = JSON.stringify([deviceId, valueId, reason]);
    const group = groups.get(key);
    if (group === undefined) {
      groups.set(key, { deviceId, valueId, reason, count: 1, firstS: atS, lastS: atS });
      continue;
    }
    group.count++;
    group.firstS = Math.min(group.firstS, atS);
    group.lastS = Math.max(group.lastS, atS);
  }
  return [...groups.values()].sort(
    (a, b) =>
      b.count - a.count ||
      a.deviceId.localeCompare(b.deviceId) ||
      a.valueId.localeCompare(b.valueId),
  );
}

/**
 * The default view (#42): a group a line (count, device, value id), then its data's time span and
 * reason wrapped below it on a terminal; piped, a tab-separated row per group, times whole.
 */
function summarizeLetters(io: CliIo, letters: readonly DeadLetter[]): void {
  if (letters.length === 0) {
    writeLine(io.stdout, "no dead letters");
    return;
  }
  const groups = groupLetters(letters);
  const { stdout } = io;
  if (stdout.isTTY !== true) {
    writeText(
      stdout,
      renderTable(
        ["count", "device", "value id", "reason", "first (UTC)", "last (UTC)"],
        groups.map((g) => [
          String(g.count),
          g.deviceId,
          g.valueId,
          g.reason,
          instant(g.firstS),
          instant(g.lastS),
        ]),
        stdout,
      ),
    );
  } else {
    const time = shortTime(groups.flatMap((g) => [g.firstS, g.lastS]));
    const pad = String(groups[0]?.count ?? 0).length;
    const indent = " ".repeat(pad + 2);
    const narrower = { isTTY: true, columns: Math.max(20, widthOf(stdout) - indent.length) };
    for (const g of groups) {
      writeLine(stdout, `${String(g.count).padStart(pad)}  ${g.deviceId}  ${g.valueId}`);
      const span = g.firstS === g.lastS ? time(g.firstS) : `${time(g.firstS)} .. ${time(g.lastS)}`;
      const text = fitText(`${span} UTC: ${g.reason}`, narrower);
      writeText(stdout, text.replace(/^/gm, indent));
    }
  }
  const footer = [
    `${counted(letters.length, "dead letter")} in ${counted(groups.length, "group")} of device, value id and reason, the biggest first`,
    `each one: energy-etl dead-letters --list (at most ${LIST_LIMIT}: --limit N); --json for all whole`,
  ];
  for (const line of footer) writeText(stdout, fitText(line, stdout));
}

/** Times as `06-15 12:00`; with the year when one of `all` is of another year than this one. */
function shortTime(all: readonly number[]): (s: number) => string {
  const year = new Date().getUTCFullYear();
  const sameYear = all.every((s) => new Date(s * 1000).getUTCFullYear() === year);
  return (s) =>
    when(s)
      .slice(sameYear ? 5 : 0)
      .replace("T", " ");
}

function showLetter(io: CliIo, rawId: string, command: Command): Promise<void> {
  const notAnId = `not a dead letter id: ${JSON.stringify(rawId)}`;
  const id = parseOptions(z.coerce.number({ error: notAnId }).int(notAnId).min(1, notAnId), rawId);
  // `show 12 --json`: commander hands --json to dead-letters, whose options are also ours
  const opts = z.object({ json: z.boolean().optional() }).safeParse(command.optsWithGlobals());
  const json = opts.success && opts.data.json === true;
  return withStateStore(command, io, (store) => {
    const letter = store.deadLetters.get(id);
    if (letter === undefined) {
      throw new UsageError(`no dead letter ${id} (energy-etl dead-letters lists them)`);
    }
    if (json) writeJson(io.stdout, letter);
    else for (const line of letterLines(letter)) writeLine(io.stdout, line);
  });
}
