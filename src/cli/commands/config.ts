import type { Command } from "commander";
import { configJsonSchema, describeConfig } from "../../config.js";
import { createContext } from "../context.js";
import { type CliIo, writeLine } from "../io.js";

/** `config`: the effective configuration (secrets masked), or the config file's JSON Schema. */
export function registerConfigCommand(program: Command, io: CliIo): void {
  program
    .command("config")
    .description("print the effective configuration as JSON (secrets shown as [set])")
    .option("--schema", "print the JSON Schema of the config file instead (config/schema.json)")
    .action((opts: { schema?: boolean }, command: Command) => {
      const body = opts.schema
        ? configJsonSchema()
        : describeConfig(createContext(command, io).config);
      writeLine(io.stdout, JSON.stringify(body, null, 2));
    });
}
