import { Command } from "commander";
import { addGlobalOptions, refuseSecretFlags } from "./context.js";
import type { CliIo } from "./io.js";

type Register = (program: Command, io: CliIo) => void;

/** Each command's module, in `--help` order, loaded only when it is run (help loads all). */
const COMMANDS: readonly (readonly [readonly string[], () => Promise<Register>])[] = [
  [
    ["set-password"],
    async () => (await import("./commands/set-password.js")).registerSetPasswordCommand,
  ],
  [
    ["devices", "resources", "values"],
    async () => (await import("./commands/catalog.js")).registerCatalogCommands,
  ],
  [["sync"], async () => (await import("./commands/sync.js")).registerSyncCommand],
  [["backfill"], async () => (await import("./commands/backfill.js")).registerBackfillCommand],
  [["status"], async () => (await import("./commands/status.js")).registerStatusCommand],
  [
    ["dead-letters"],
    async () => (await import("./commands/dead-letters.js")).registerDeadLettersCommand,
  ],
  [["audit"], async () => (await import("./commands/audit.js")).registerAuditCommand],
  [["rollups"], async () => (await import("./commands/rollups.js")).registerRollupsCommand],
  [["run"], async () => (await import("./commands/run.js")).registerRunCommand],
  [["simulate"], async () => (await import("./commands/simulate.js")).registerSimulateCommand],
  [["config"], async () => (await import("./commands/config.js")).registerConfigCommand],
  [["decode"], async () => (await import("./commands/decode.js")).registerDecodeCommand],
  [["demo"], async () => (await import("./commands/demo.js")).registerDemoCommand],
  [["migrate"], async () => (await import("./commands/migrate.js")).registerMigrateCommand],
  [["doctor"], async () => (await import("./commands/doctor.js")).registerDoctorCommand],
  [["init"], async () => (await import("./commands/init.js")).registerInitCommand],
];

/** The command line with the command `argv` names (all of them for help or a typo). */
export async function createProgram(io: CliIo, argv: readonly string[] = []): Promise<Command> {
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
  const name = commandName(argv);
  const named = COMMANDS.filter(([names]) => name !== undefined && names.includes(name));
  for (const [, load] of named.length > 0 ? named : COMMANDS) (await load())(program, io);
  refuseSecretFlags(
    program,
    program.commands.find((command) => command.name() === name),
  );
  pointAtHelp(program);
  return program;
}

/** The command `argv` names: its first word not an option nor an option's value; none for help. */
function commandName(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i] ?? "";
    if (["-h", "--help", "-V", "--version"].includes(word)) return undefined;
    if (!word.startsWith("-")) return word;
    if (!word.includes("=")) i++;
  }
  return undefined;
}

/** `energy-etl dead-letters show`: the names from the program down to `command`. */
export function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name());
  return names.join(" ");
}

/** A usage error prints its line and `(see … --help)`, not the whole help that scrolls it away. */
function pointAtHelp(command: Command): void {
  const path = commandPath(command);
  command.configureOutput({
    ...command.configureOutput(),
    outputError: (text, write) => write(`${text.trimEnd()}\n(see ${path} --help)\n`),
  });
  for (const sub of command.commands) pointAtHelp(sub);
}
