import type { Command } from "commander";
import type { Config } from "../../config.js";
import { silentSince, syncRules } from "../../pipeline/cursor.js";
import { LOCK_TTL_MS, SERVICE_LOCK } from "../../state/service-lock.js";
import type { StateStore } from "../../state/state-store.js";
import type { Cursor } from "../../state/types.js";
import { counted } from "../../util/text.js";
import { epochSeconds, isoSeconds } from "../../util/utc-time.js";
import { type CliIo, writeJson, writeLine, writeText } from "../io.js";
import { fitText, renderTable, type TableStream } from "../table.js";
import { withStateStore } from "../with-state-store.js";

/** A span of seconds as `90 s`, `3 min`, `2.5 h`, `4.1 d` (in hours at most unless `days`). */
export function formatSpan(seconds: number, days = true): string {
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800 || !days) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86_400).toFixed(1)} d`;
}

const iso = (s: number | undefined): string | null => (s === undefined ? null : isoSeconds(s));

/** A time as people read it beside `nowS`: `40 s ago`, `3 min ago`, `2 h ago`, `in 5 d`. */
export function formatAge(atS: number, nowS: number): string {
  const s = Math.round(Math.abs(nowS - atS));
  const span =
    s < 120
      ? `${s} s`
      : s < 7200
        ? `${Math.floor(s / 60)} min`
        : s < 172_800
          ? `${Math.floor(s / 3600)} h`
          : `${Math.floor(s / 86_400)} d`;
  return atS > nowS ? `in ${span}` : `${span} ago`;
}

/** An ISO time (as --json has it) in seconds. */
const secondsOf = (text: string): number => Date.parse(text) / 1000;

export function registerStatusCommand(program: Command, io: CliIo): void {
  program
    .command("status")
    .description(
      "per device and resource: the newest record, its lag, silent or failing state; the last " +
        "run, unfinished and parked backfill jobs, dead letters",
    )
    .option("--json", "print the status as JSON")
    .action((opts: { json?: boolean }, command: Command) =>
      withStateStore(command, io, (store, { config }) => {
        const nowS = epochSeconds(new Date());
        const status = readStatus(store, config, nowS);
        if (opts.json) writeJson(io.stdout, status);
        else if (io.stdout.isTTY === true) printStatusOnTerminal(io.stdout, status, nowS);
        else printStatus(io.stdout, status);
      }),
    );
}

/** What status shows, as `--json` prints it. */
type Status = ReturnType<typeof readStatus>;

function readStatus(store: StateStore, config: Config, nowS: number) {
  const rules = syncRules(config, nowS);
  const letters = new Map(
    store.deadLetters.countByResource().map((c) => [`${c.deviceId}\u0000${c.resourceId}`, c.count]),
  );
  const backfillJobs = store.jobs.unfinished().map((j) => ({
    id: j.id,
    deviceId: j.deviceId,
    resourceId: j.resourceId,
    reason: j.reason,
    status: j.status,
    from: isoSeconds(j.fromS),
    to: isoSeconds(j.toS),
    values: j.valueIds.length,
    chunksDone: j.chunksDone,
    chunksTotal: j.chunksTotal,
    points: j.points,
    attempts: j.attempts,
    nextAttemptAt: iso(j.nextAttemptS),
    lastError: j.lastError,
  }));
  return {
    service: serviceHolder(store, nowS),
    cursors: store.cursors.list().map((c) => describeCursor(c, nowS, rules, letters)),
    lastRun: store.runs.last() ?? null,
    backfillJobs,
    deadLetters: store.deadLetters.count(),
  };
}

/** The `run` holding the service lock, with its heartbeat's age; null when none or expired. */
function serviceHolder(store: StateStore, nowS: number) {
  const lock = store.locks.peek(SERVICE_LOCK);
  if (lock === undefined || lock.lease.untilMs / 1000 <= nowS) return null;
  const heartbeatS = (lock.lease.untilMs - LOCK_TTL_MS) / 1000;
  const { pid, host, command, since } = lock.holder;
  return { pid, host, command, since, heartbeatAgeS: Math.max(0, Math.round(nowS - heartbeatS)) };
}

function printStatus(stdout: CliIo["stdout"], status: Status): void {
  const { service, cursors, lastRun, backfillJobs: jobs, deadLetters } = status;
  writeText(
    stdout,
    cursors.length === 0
      ? "no device synced yet (run energy-etl sync or energy-etl run)"
      : renderTable(
          ["device", "resource", "newest record (UTC)", "lag", "state", "dead letters"],
          cursors.map((c) => [
            c.deviceId,
            c.resourceId,
            c.newestRecordAt ?? "none yet",
            formatSpan(c.lagSeconds),
            c.state,
            String(c.deadLetters),
          ]),
          stdout,
        ),
  );
  writeLine(
    stdout,
    lastRun
      ? `last run: ${lastRun.kind} #${lastRun.id} ${lastRun.status}, started ${lastRun.startedAt}${runCounts(lastRun)}`
      : "last run: none",
  );
  const letters = deadLetters === 0 ? "none" : `${deadLetters} (energy-etl dead-letters)`;
  writeLine(stdout, `dead letters: ${letters}`);
  writeText(stdout, jobs.length === 0 ? "backfill jobs: none pending" : jobsTable(jobs, stdout));
  writeLine(
    stdout,
    service
      ? `service: energy-etl ${service.command} holds the state (pid ${service.pid} on ` +
          `${service.host}, since ${service.since}, heartbeat ${service.heartbeatAgeS} s ago)`
      : "service: none running on this state file",
  );
}

/** What a finished run did, after its start (`, 1 device, 40 points, …`); "" while it runs. */
function runCounts(run: NonNullable<Status["lastRun"]>): string {
  if (!run.endedAt) return "";
  const counts = [
    counted(run.devices ?? 0, "device"),
    counted(run.points ?? 0, "point"),
    counted(run.requests ?? 0, "request"),
    counted(run.errors ?? 0, "error"),
  ];
  return `, ${counts.join(", ")}`;
}

function jobsTable(jobs: Status["backfillJobs"], stdout: TableStream): string {
  return renderTable(
    ["job", "device", "resource", "reason", "status", "interval (UTC)", "progress", "last error"],
    jobs.map((j) => [
      String(j.id),
      j.deviceId,
      j.resourceId,
      j.reason,
      j.status === "failed" && j.nextAttemptAt
        ? `failed ${j.attempts}x, next ${j.nextAttemptAt.slice(0, 16)}`
        : j.status,
      `${j.from.slice(0, 16)} .. ${j.to.slice(0, 16)}`,
      `${j.chunksDone}/${j.chunksTotal} (${j.chunksTotal ? Math.floor((100 * j.chunksDone) / j.chunksTotal) : 100}%)`,
      j.lastError ?? "",
    ]),
    stdout,
  );
}

function describeCursor(
  c: Cursor,
  nowS: number,
  rules: ReturnType<typeof syncRules>,
  letters: ReadonlyMap<string, number>,
) {
  const since = silentSince(c, nowS, rules);
  const state =
    c.failures > 0
      ? `failing (${c.failures}x${c.retryAtS === undefined ? "" : `, next ${iso(c.retryAtS)?.slice(0, 16)}`}): ${c.lastError ?? ""}`
      : since !== undefined
        ? `silent since ${iso(since)?.slice(0, 16)}`
        : "ok";
  return {
    deviceId: c.deviceId,
    resourceId: c.resourceId,
    newestRecordAt: iso(c.newestRecordS),
    fetchedUntil: iso(c.fetchedUntilS),
    lagSeconds: Math.max(0, nowS - (c.newestRecordS ?? c.startedS)),
    silentSince: iso(since),
    failures: c.failures,
    retryAt: iso(c.retryAtS),
    lastError: c.lastError ?? null,
    deadLetters: letters.get(`${c.deviceId}\u0000${c.resourceId}`) ?? 0,
    state,
    updatedAt: c.updatedAt,
  };
}

/**
 * The status on a terminal, fitted to its width (80 columns too): times as ages (`3 min ago`) or
 * short dates, ids whole (never wrapped nor cut), long texts wrapped at spaces.
 */
function printStatusOnTerminal(
  stdout: TableStream & CliIo["stdout"],
  status: Status,
  nowS: number,
) {
  const { service, cursors, lastRun, backfillJobs: jobs, deadLetters } = status;
  // a past time read a little ahead of this clock (a lock taken this second) is not "in 1 s"
  const age = (text: string, past = true) =>
    formatAge(past ? Math.min(secondsOf(text), nowS) : secondsOf(text), nowS);
  const line = (text: string) => writeText(stdout, fitText(text, stdout));
  writeText(
    stdout,
    cursors.length === 0
      ? fitText("no device synced yet (run energy-etl sync or energy-etl run)", stdout)
      : renderTable(
          [
            { head: "device", narrow: "keep" },
            { head: "resource", narrow: "keep" },
            { head: "newest", narrow: "keep" },
            // one line a resource: a failure's whole error is in --json and in the log
            { head: "state", narrow: "cut", min: 16 },
            // only where there are some: the line below says "dead letters: none"
            ...(deadLetters > 0 ? [{ head: "letters", narrow: "keep" as const }] : []),
          ],
          cursors.map((c) => [
            c.deviceId,
            c.resourceId,
            c.newestRecordAt === null ? "none yet" : age(c.newestRecordAt),
            cursorState(c, age),
            ...(deadLetters > 0 ? [String(c.deadLetters)] : []),
          ]),
          stdout,
        ),
  );
  line(
    lastRun
      ? `last run: ${lastRun.kind} #${lastRun.id} ${lastRun.status} ${age(lastRun.startedAt)}${runCounts(lastRun).replace(", ", ": ")}`
      : "last run: none",
  );
  line(`dead letters: ${deadLetters === 0 ? "none" : `${deadLetters} (energy-etl dead-letters)`}`);
  if (jobs.length === 0) line("backfill jobs: none pending");
  else writeText(stdout, terminalJobsTable(jobs, stdout, age, nowS));
  line(
    service
      ? `service: ${service.command} (pid ${service.pid} on ${service.host}) since ` +
          `${age(service.since)}, heartbeat ${service.heartbeatAgeS} s ago`
      : "service: none running on this state file",
  );
}

/** A time of --json as an age beside now; a past one (default) never ahead of now. */
type Age = (text: string, past?: boolean) => string;

/** A cursor's state in words, its times as ages. */
function cursorState(c: Status["cursors"][number], age: Age): string {
  if (c.failures > 0) {
    const next = c.retryAt === null ? "" : `, next ${age(c.retryAt, false)}`;
    return `failing ${c.failures}x${next}: ${c.lastError ?? ""}`;
  }
  return c.silentSince === null ? "ok" : `silent since ${age(c.silentSince)}`;
}

/** A job's interval in short dates: `06-01..06-15` (with the year when not this one's). */
function shortInterval(from: string, to: string, nowS: number): string {
  const year = isoSeconds(nowS).slice(0, 4);
  const day = (text: string) => (text.startsWith(year) ? text.slice(5, 10) : text.slice(0, 10));
  if (day(from) !== day(to)) return `${day(from)}..${day(to)}`;
  return `${day(from)} ${from.slice(11, 16)}..${to.slice(11, 16)}`;
}

function terminalJobsTable(
  jobs: Status["backfillJobs"],
  stdout: TableStream,
  age: Age,
  nowS: number,
): string {
  return renderTable(
    [
      { head: "job", narrow: "keep" },
      { head: "device", narrow: "keep" },
      { head: "resource", narrow: "keep" },
      { head: "status", min: 8 },
      { head: "UTC", narrow: "keep" },
      { head: "chunks", narrow: "keep" },
      { head: "last error", min: 12, optional: true },
      { head: "reason", narrow: "cut", optional: true },
    ],
    jobs.map((j) => [
      String(j.id),
      j.deviceId,
      j.resourceId,
      j.status === "failed" && j.nextAttemptAt
        ? `failed ${j.attempts}x, next ${age(j.nextAttemptAt, false)}`
        : j.status,
      shortInterval(j.from, j.to, nowS),
      `${j.chunksDone}/${j.chunksTotal}`,
      j.lastError ?? "",
      j.reason,
    ]),
    stdout,
  );
}
