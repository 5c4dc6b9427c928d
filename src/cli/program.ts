import { Command } from "commander";
import { registerCatalogCommands } from "./commands/catalog.js";
import { registerConfigCommand } from "./commands/config.js";
import { registerDecodeCommand } from "./commands/decode.js";
import { registerSetPasswordCommand } from "./commands/set-password.js";
import { registerSimulateCommand } from "./commands/simulate.js";
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
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
    });
  addGlobalOptions(program);
  registerSetPasswordCommand(program, io);
  registerCatalogCommands(program, io);
  registerSimulateCommand(program, io);
  registerConfigCommand(program, io);
  registerDecodeCommand(program, io);
  return program;
}
