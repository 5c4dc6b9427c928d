import type { Command } from "commander";
import type { Config } from "../../config.js";
import { silentSince, syncRules } from "../../pipeline/cursor.js";
import { LOCK_TTL_MS, SERVICE_LOCK } from "../../state/service-lock.js";
import type { StateStore } from "../../state/state-store.js";
import type { Cursor } from "../../state/types.js";
import { epochSeconds, isoSeconds } from "../../util/utc-time.js";
import { type CliIo, writeJson, writeLine, writeText } from "../io.js";
import { renderTable, type TableStream } from "../table.js";
import { withStateStore } from "../with-state-store.js";

/** A span of seconds as `90 s`, `3 min`, `2.5 h`, `4.1 d` (in hours at most unless `days`). */
export function formatSpan(seconds: number, days = true): string {
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800 || !days) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86_400).toFixed(1)} d`;
}

const iso = (s: number | undefined): string | null => (s === undefined ? null : isoSeconds(s));

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
        const status = readStatus(store, config, epochSeconds(new Date()));
        if (opts.json) writeJson(io.stdout, status);
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
      ? `last run: ${lastRun.kind} #${lastRun.id} ${lastRun.status}, started ${lastRun.startedAt}` +
          (lastRun.endedAt
            ? `, ${lastRun.devices ?? 0} devices, ${lastRun.points ?? 0} points, ${lastRun.requests ?? 0} requests, ${lastRun.errors ?? 0} errors`
            : "")
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
