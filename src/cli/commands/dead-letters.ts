import type { Command } from "commander";
import { z } from "zod";
import { createPointSink } from "../../influx/create-sink.js";
import { retryDeadLetters } from "../../pipeline/dead-letters.js";
import { StateStore } from "../../state/state-store.js";
import { ValueIdDecoder } from "../../transform/value-id.js";
import { excerpt } from "../../util/text.js";
import { createContext, requireStateFile } from "../context.js";
import { type CliIo, UsageError, writeLine } from "../io.js";
import { renderTable } from "../table.js";

const optionsSchema = z
  .object({
    device: z.string().min(1).optional(),
    limit: z.coerce.number().int().min(1).optional(),
    json: z.boolean().optional(),
    retry: z.boolean().optional(),
    clear: z.boolean().optional(),
  })
  .refine((o) => !(o.retry && o.clear), "--retry and --clear exclude each other");

const when = (s: number) => new Date(s * 1000).toISOString().slice(0, 16);

/** `dead-letters`: the rows, members and lines kept instead of freezing a device; retry or clear them. */
export function registerDeadLettersCommand(program: Command, io: CliIo): void {
  program
    .command("dead-letters")
    .description(
      "list the rows and members that failed validation and the lines InfluxDB refused (kept " +
        "instead of freezing their device); --retry writes again what can now be written",
    )
    .option("-d, --device <id>", "only this device's")
    .option("--limit <n>", "at most n (oldest first)")
    .option("--json", "print them as JSON, payloads whole")
    .option("--retry", "write them again; what InfluxDB stores is forgotten")
    .option("--clear", "forget them (after reading them)")
    .addHelpText(
      "after",
      "\nExamples:\n  energy-etl dead-letters\n  energy-etl dead-letters --device hybrid-site-01 --json\n" +
        "  energy-etl dead-letters --retry",
    )
    .action(async (rawOpts: unknown, command: Command) => {
      const parsed = optionsSchema.safeParse(rawOpts);
      if (!parsed.success) {
        throw new UsageError(parsed.error.issues[0]?.message ?? "invalid options");
      }
      const opts = parsed.data;
      const { config, logger } = createContext(command, io);
      requireStateFile(config);
      const store = StateStore.open(config.state.db, { logger });
      try {
        const letters = store.deadLetters.list({ deviceId: opts.device, limit: opts.limit });
        if (opts.clear) {
          for (const letter of letters) store.deadLetters.remove(letter.id);
          writeLine(io.stdout, `forgot ${letters.length} dead letters`);
          return;
        }
        if (opts.retry) {
          const sink = await createPointSink(config, logger);
          try {
            const outcome = await retryDeadLetters(
              {
                deadLetters: store.deadLetters,
                sink,
                decoder: new ValueIdDecoder(logger),
                now: () => new Date(),
              },
              letters,
            );
            writeLine(
              io.stdout,
              `retried ${letters.length} dead letters: ${outcome.written} written` +
                (outcome.setAside > 0
                  ? ` (${outcome.setAside} of their members still invalid: kept as member dead letters)`
                  : "") +
                `, ${outcome.refused} still refused, ${outcome.skipped} cut when kept (not retried)` +
                ` -> ${sink.target}`,
            );
          } finally {
            await sink.close();
          }
          return;
        }
        if (opts.json) {
          writeLine(io.stdout, JSON.stringify(letters, null, 2));
          return;
        }
        if (letters.length === 0) {
          writeLine(io.stdout, "no dead letters");
          return;
        }
        writeLine(
          io.stdout,
          renderTable(
            ["id", "kind", "device", "resource", "window (UTC)", "seen", "error", "payload"],
            letters.map((l) => [
              String(l.id),
              l.kind,
              l.deviceId,
              l.resourceId,
              `${when(l.windowFromS)} .. ${when(l.windowToS)}`,
              String(l.occurrences),
              excerpt(l.error, 80),
              excerpt(l.payload, 60),
            ]),
            io.stdout,
          ),
        );
        const total = store.deadLetters.count();
        writeLine(
          io.stdout,
          `${letters.length} of ${total} dead letters (--json for whole payloads, --retry to write them again)`,
        );
      } finally {
        store.close();
      }
    });
}
