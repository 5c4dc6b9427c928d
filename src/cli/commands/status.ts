import type { Command } from "commander";
import { StateStore } from "../../state/state-store.js";
import { createContext } from "../context.js";
import { type CliIo, writeLine } from "../io.js";
import { renderTable } from "../table.js";

/** A lag in seconds as `3 min`, `2.5 h`, `4.1 d`. */
export function formatLag(seconds: number): string {
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86_400).toFixed(1)} d`;
}

/** `status`: watermarks and lag per device, the last run, unfinished backfill jobs. */
export function registerStatusCommand(program: Command, io: CliIo): void {
  program
    .command("status")
    .description(
      "per device: the watermark and its lag behind now, the last run, pending backfill jobs",
    )
    .option("--json", "print the status as JSON")
    .action((opts: { json?: boolean }, command: Command) => {
      const { config, logger } = createContext(command, io);
      const store = StateStore.open(config.state.db, { logger });
      try {
        const nowS = Math.floor(Date.now() / 1000);
        const watermarks = store.listWatermarks().map((w) => ({
          deviceId: w.deviceId,
          resourceId: w.resourceId,
          syncedUntil: new Date(w.syncedUntilS * 1000).toISOString(),
          lagSeconds: Math.max(0, nowS - w.syncedUntilS),
          updatedAt: w.updatedAt,
        }));
        const lastRun = store.lastRun() ?? null;
        const jobs = store.unfinishedBackfillJobs().map((j) => ({
          id: j.id,
          deviceId: j.deviceId,
          resourceId: j.resourceId,
          reason: j.reason,
          status: j.status,
          from: new Date(j.fromS * 1000).toISOString(),
          to: new Date(j.toS * 1000).toISOString(),
          values: j.valueIds.length,
          chunksDone: j.chunksDone,
          chunksTotal: j.chunksTotal,
          points: j.points,
          lastError: j.lastError,
        }));
        if (opts.json) {
          writeLine(
            io.stdout,
            JSON.stringify({ watermarks, lastRun, backfillJobs: jobs }, null, 2),
          );
          return;
        }
        writeLine(
          io.stdout,
          watermarks.length === 0
            ? "no device synced yet (run energy-etl sync or energy-etl run)"
            : renderTable(
                ["device", "resource", "synced until (UTC)", "lag"],
                watermarks.map((w) => [
                  w.deviceId,
                  w.resourceId,
                  w.syncedUntil,
                  formatLag(w.lagSeconds),
                ]),
              ),
        );
        writeLine(
          io.stdout,
          lastRun
            ? `last run: ${lastRun.kind} #${lastRun.id} ${lastRun.status}, started ${lastRun.startedAt}` +
                (lastRun.endedAt
                  ? `, ${lastRun.devices ?? 0} devices, ${lastRun.points ?? 0} points, ${lastRun.requests ?? 0} requests, ${lastRun.errors ?? 0} errors`
                  : "")
            : "last run: none",
        );
        if (jobs.length === 0) {
          writeLine(io.stdout, "backfill jobs: none pending");
          return;
        }
        writeLine(
          io.stdout,
          renderTable(
            [
              "job",
              "device",
              "resource",
              "reason",
              "status",
              "interval (UTC)",
              "progress",
              "last error",
            ],
            jobs.map((j) => [
              String(j.id),
              j.deviceId,
              j.resourceId,
              j.reason,
              j.status,
              `${j.from.slice(0, 16)} .. ${j.to.slice(0, 16)}`,
              `${j.chunksDone}/${j.chunksTotal} (${j.chunksTotal ? Math.floor((100 * j.chunksDone) / j.chunksTotal) : 100}%)`,
              j.lastError ?? "",
            ]),
          ),
        );
      } finally {
        store.close();
      }
    });
}
