import type { Command } from "commander";
import { configJsonSchema, describeConfig, describeSources } from "../../config.js";
import { createContext } from "../context.js";
import { type CliIo, writeJson, writeText } from "../io.js";
import { renderTable } from "../table.js";

export function registerConfigCommand(program: Command, io: CliIo): void {
  program
    .command("config")
    .description("print the effective configuration as JSON (secrets shown as [set])")
    .option(
      "--sources",
      "print each setting with its value and where it came from (flag, environment, .env file, " +
        "config file, default)",
    )
    .option("--json", "with --sources: print them as a JSON array")
    .option("--schema", "print the JSON Schema of the config file instead (config/schema.json)")
    .action((opts: { schema?: boolean; sources?: boolean; json?: boolean }, command: Command) => {
      if (opts.schema) {
        writeJson(io.stdout, configJsonSchema());
        return;
      }
      const { config, origins } = createContext(command, io);
      const rows = describeSources({ config, origins });
      if (!opts.sources) writeJson(io.stdout, describeConfig(config));
      else if (opts.json) writeJson(io.stdout, rows);
      else {
        const cells = rows.map((r) => [r.setting, r.value, r.from]);
        writeText(io.stdout, renderTable(["setting", "value", "from"], cells, io.stdout));
      }
    });
}
