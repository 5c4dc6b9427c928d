import { Command } from "commander";
import { registerAuditCommand } from "./commands/audit.js";
import { registerBackfillCommand } from "./commands/backfill.js";
import { registerCatalogCommands } from "./commands/catalog.js";
import { registerConfigCommand } from "./commands/config.js";
import { registerDeadLettersCommand } from "./commands/dead-letters.js";
import { registerDecodeCommand } from "./commands/decode.js";
import { registerDemoCommand } from "./commands/demo.js";
import { registerDoctorCommand } from "./commands/doctor.js";
import { registerInitCommand } from "./commands/init.js";
import { registerMigrateCommand } from "./commands/migrate.js";
import { registerRunCommand } from "./commands/run.js";
import { registerSetPasswordCommand } from "./commands/set-password.js";
import { registerSimulateCommand } from "./commands/simulate.js";
import { registerStatusCommand } from "./commands/status.js";
import { registerSyncCommand } from "./commands/sync.js";
import { addGlobalOptions } from "./context.js";
import type { CliIo } from "./io.js";

/** The `energy-etl` command line with every command registered. */
export function createProgram(io: CliIo): Command {
  const program = new Command("energy-etl")
    .description(
      "Moves data from the Energy Monitoring Data API into InfluxDB.\n" +
        "Settings come from flags, then the environment, then --config FILE, then defaults.",
    )
    .version("0.1.0")
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
    });
  addGlobalOptions(program);
  registerSetPasswordCommand(program, io);
  registerCatalogCommands(program, io);
  registerSyncCommand(program, io);
  registerBackfillCommand(program, io);
  registerStatusCommand(program, io);
  registerDeadLettersCommand(program, io);
  registerAuditCommand(program, io);
  registerRunCommand(program, io);
  registerSimulateCommand(program, io);
  registerConfigCommand(program, io);
  registerDecodeCommand(program, io);
  registerDemoCommand(program, io);
  registerMigrateCommand(program, io);
  registerDoctorCommand(program, io);
  registerInitCommand(program, io);
  pointAtHelp(program);
  return program;
}

/** `energy-etl dead-letters show`: the names from the program down to `command`. */
export function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name());
  return names.join(" ");
}

/**
 * A usage error prints its one line and where to read more (`see energy-etl sync --help`), not
 * the whole help that would scroll the line away.
 */
function pointAtHelp(command: Command): void {
  const path = commandPath(command);
  command.configureOutput({
    ...command.configureOutput(),
    outputError: (text, write) => write(`${text.trimEnd()}\n(see ${path} --help)\n`),
  });
  for (const sub of command.commands) pointAtHelp(sub);
}
