import type { Command } from "commander";
import { z } from "zod";
import { runSync } from "../../pipeline/sync.js";
import { counted } from "../../util/text.js";
import { type CliIo, parseOptions, writeLine } from "../io.js";
import { devicesOption, outputOption } from "../options.js";
import { withPipeline } from "../with-pipeline.js";
import { newDeadLettersNote } from "./dead-letters.js";
import { rollupsNote } from "./rollups.js";

const optionsSchema = z.object({ device: devicesOption, output: outputOption });

export function registerSyncCommand(program: Command, io: CliIo): void {
  program
    .command("sync")
    .description(
      "run one incremental sync cycle and exit: every device's new data since its watermark " +
        "(minus SYNC_LOOKBACK; from SYNC_START for a new device); exit 1 if a device failed",
    )
    .option("-d, --device <id...>", "only these devices")
    .option("-o, --output <file>", "write line protocol to FILE (- for stdout) instead of InfluxDB")
    .addHelpText("after", "\nExample:\n  energy-etl sync --device hybrid-site-01")
    .action(async (rawOpts: unknown, command: Command) => {
      const opts = parseOptions(optionsSchema, rawOpts);
      const result = await withPipeline(
        command,
        io,
        { output: opts.output, lock: true },
        (pipeline) => runSync(pipeline, { deviceIds: opts.device }),
      );
      for (const d of result.devices) {
        const what = d.error ? `FAILED: ${d.error}` : `${d.points} points in ${d.chunks} requests`;
        writeLine(io.stdout, `${d.deviceId}: ${what}`);
      }
      writeLine(
        io.stdout,
        `sync ${result.status}: ${counted(result.devices.length, "device")}, ${counted(result.points, "point")}, ` +
          `${counted(result.requests, "request")}, ${(result.durationMs / 1000).toFixed(1)} s` +
          newDeadLettersNote(result.deadLetters) +
          rollupsNote(result.rollups),
      );
      if (result.status !== "ok") {
        const failed = result.devices.filter((d) => d.error).length;
        const why = [
          failed > 0 ? `${failed} of ${result.devices.length} devices failed` : undefined,
          result.rollups?.failed ? "rollups not written" : undefined,
        ].filter((w) => w !== undefined);
        throw new Error(`${why.join("; ") || "sync failed"} (see the log)`);
      }
    });
}
