/**
 * `energy-etl --help` lists the commands from program.ts's table and the setting flags from
 * setting-names.ts, loading neither a command's module nor zod (#41; what loads:
 * lazy-imports.test.ts). These tests hold the listing to what the modules and the schema say.
 */
import { readdirSync, readFileSync } from "node:fs";
import { Command } from "commander";
import type { CliIo } from "../../src/cli/io.js";
import { createProgram } from "../../src/cli/program.js";
import { runCli } from "../../src/cli.js";
import { SETTINGS } from "../../src/config.js";
import { bufferIo } from "../support/cli-io.js";

/** Each command of `program` as its help lists it: name, term (name and usage), summary. */
function listing(program: Command): string[][] {
  const help = program.createHelp();
  return help
    .visibleCommands(program)
    .filter((command) => command.name() !== "help")
    .map((command) => [
      command.name(),
      help.subcommandTerm(command),
      help.subcommandDescription(command),
    ]);
}

/** The oracle: a program with every `register…` of every module of src/cli/commands run on it. */
async function everyCommand(io: CliIo): Promise<Command> {
  const program = new Command("energy-etl");
  for (const file of readdirSync("src/cli/commands").filter((f) => f.endsWith(".ts"))) {
    const module: Record<string, unknown> = await import(
      `../../src/cli/commands/${file.replace(/\.ts$/, ".js")}`
    );
    for (const [name, register] of Object.entries(module)) {
      if (name.startsWith("register") && typeof register === "function") register(program, io);
    }
  }
  return program;
}

async function run(...argv: string[]) {
  const io = bufferIo();
  const code = await runCli(argv, io);
  return { code, out: io.out(), err: io.err() };
}

describe("the program's help, its modules not loaded (#41)", () => {
  it("lists every command as its module registers it: name, arguments, options, description", async () => {
    const io = bufferIo();
    const expected = listing(await everyCommand(io)).sort();
    expect(expected.length).toBeGreaterThan(15);
    expect(listing(await createProgram(io, ["--help"])).sort()).toEqual(expected);
  });

  it("lists every setting flag of the schema, and no other", async () => {
    const { code, out } = await run("--help");
    expect(code).toBe(0);
    const flagged = SETTINGS.filter((setting) => setting.flag);
    expect(flagged.length).toBeGreaterThan(10);
    for (const { flag, env } of flagged) {
      expect(out).toMatch(new RegExp(`^  ${flag} <value> +overrides ${env}\\b`, "m"));
    }
    expect(out.match(/^ {2}--[a-z-]+ <value>/gm)).toHaveLength(flagged.length);
  });

  it("lists the commands first, then the setting flags (#42)", async () => {
    const { code, out } = await run("--help");
    expect(code).toBe(0);
    const commands = out.indexOf("\nCommands:\n");
    const options = out.indexOf("\nOptions:\n");
    expect([commands > 0, options > 0]).toEqual([true, true]);
    expect(commands).toBeLessThan(options);
    // the first command and the last listed both come before the first setting flag
    expect(out.indexOf("\n  set-password ")).toBeLessThan(options);
    expect(out.indexOf("\n  init ")).toBeLessThan(options);
    expect(out.indexOf("\n  --api-url <value>")).toBeGreaterThan(options);
    expect(out.endsWith("\n")).toBe(true);
  });

  it("shows a command's own help when help names it, or a flag hides it from the first look", async () => {
    // `-cFILE` is one word: the first look takes the next word (sync) for its value
    for (const argv of [
      ["help", "backfill"],
      ["-cnone.json", "backfill", "--help"],
    ]) {
      const { code, out, err } = await run(...argv);
      expect({ code, err }).toEqual({ code: 0, err: "" });
      expect(out).toMatch(/^Usage: energy-etl backfill \[options\]/);
      expect(out).toContain("--dry-run");
    }
  });

  it("prints package.json's version, asked first or after other flags", async () => {
    const pkg: unknown = JSON.parse(readFileSync("package.json", "utf8"));
    const version = typeof pkg === "object" && pkg !== null && "version" in pkg && pkg.version;
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
    for (const argv of [["--version"], ["-V", "sync"], ["--log-level", "warn", "-V"]]) {
      expect(await run(...argv)).toEqual({ code: 0, out: `${version}\n`, err: "" });
    }
  });
});
