import { Command, Help } from "commander";
import { addGlobalOptions, refuseSecretFlags } from "./global-options.js";
import { type CliIo, ERROR_PREFIX } from "./io.js";
import { version } from "./version.js";

type Register = (program: Command, io: CliIo) => void;

/** A command as the program's help lists it: its name, what follows the name there, its summary. */
type Listed = readonly [name: string, usage: string, summary: string];

/**
 * Each command module, in `--help` order, with the commands it registers as `--help` lists them:
 * a module is loaded only when one of its commands runs or shows its help, so `--help` loads
 * none (#41). test/cli/help-listing.test.ts checks each listing against its module's command.
 */
const COMMANDS: readonly {
  readonly listed: readonly Listed[];
  readonly load: () => Promise<Register>;
}[] = [
  {
    listed: [
      [
        "set-password",
        "[options]",
        "set the API password with a one-time password (POST /set_password); reads ENERGY_API_OTP and ENERGY_API_PASSWORD (the new one) from the environment or the .env file, else asks for them without echo on a terminal",
      ],
    ],
    load: async () => (await import("./commands/set-password.js")).registerSetPasswordCommand,
  },
  {
    listed: [
      ["devices", "[options]", "list the devices the API user may read (GET /devices)"],
      [
        "resources",
        "[options] <device>",
        "list the resources of a device (GET /<device_id>/resources)",
      ],
      [
        "values",
        "[options] <device> [resource]",
        "list the value ids of a resource (GET /<device_id>/<resource_id>/values)",
      ],
    ],
    load: async () => (await import("./commands/catalog.js")).registerCatalogCommands,
  },
  {
    listed: [
      [
        "sync",
        "[options]",
        "run one incremental sync cycle and exit: every device's new data since its watermark (minus SYNC_LOOKBACK; from SYNC_START for a new device); exit 1 if a device failed",
      ],
    ],
    load: async () => (await import("./commands/sync.js")).registerSyncCommand,
  },
  {
    listed: [
      [
        "backfill",
        "[options]",
        "fetch the history of devices over an interval; stored as a job, so running the same command again (or `run`) continues it instead of starting over",
      ],
    ],
    load: async () => (await import("./commands/backfill.js")).registerBackfillCommand,
  },
  {
    listed: [
      [
        "status",
        "[options]",
        "per device and resource: the newest record, its lag, silent or failing state; the last run, unfinished and parked backfill jobs, dead letters",
      ],
    ],
    load: async () => (await import("./commands/status.js")).registerStatusCommand,
  },
  {
    listed: [
      [
        "dead-letters",
        "[options]",
        "list the rows and members that failed validation and the lines InfluxDB refused (kept instead of freezing their device); --retry writes again what can now be written",
      ],
    ],
    load: async () => (await import("./commands/dead-letters.js")).registerDeadLettersCommand,
  },
  {
    listed: [
      [
        "audit",
        "[options]",
        "compare what InfluxDB holds with what the API has, per device resource and UTC day, up to each resource's last sync (newer data is counted as not synced yet, not as holes; one sample value per group of 20, not every value), and list the holes; --fix backfills exactly those days. Exit 1 when holes remain",
      ],
    ],
    load: async () => (await import("./commands/audit.js")).registerAuditCommand,
  },
  {
    listed: [
      [
        "rollups",
        "[options]",
        "write the hourly and daily rollups (energy per hour and per day) of the counters already in InfluxDB over --from/--to, e.g. for data written before rollups existed; the same command again continues where it stopped",
      ],
    ],
    load: async () => (await import("./commands/rollups.js")).registerRollupsCommand,
  },
  {
    listed: [
      [
        "report",
        "[options]",
        "energy per site and for the fleet per day, week or month from the daily rollups: produced, consumed, imported, exported, battery in and out, specific yield (kWh/kWp) and its ranking; bar charts on a terminal, TSV when piped, --json",
      ],
    ],
    load: async () => (await import("./commands/report.js")).registerReportCommand,
  },
  {
    listed: [
      [
        "run",
        "",
        "run the service: a sync now and on every SYNC_CRON tick, due backfill jobs in the background, /healthz, /readyz and /metrics on HTTP_HOST:HTTP_PORT; SIGTERM/SIGINT stop it within SHUTDOWN_TIMEOUT_MS (exit 0)",
      ],
    ],
    load: async () => (await import("./commands/run.js")).registerRunCommand,
  },
  {
    listed: [
      [
        "simulate",
        "[options]",
        "run the Energy Monitoring Data API simulator (deterministic data from a seed)",
      ],
    ],
    load: async () => (await import("./commands/simulate.js")).registerSimulateCommand,
  },
  {
    listed: [
      ["config", "[options]", "print the effective configuration as JSON (secrets shown as [set])"],
    ],
    load: async () => (await import("./commands/config.js")).registerConfigCommand,
  },
  {
    listed: [
      [
        "decode",
        "[options] <ids...>",
        "show what value ids become in InfluxDB: measurement, field, tags (spec 2.3)",
      ],
    ],
    load: async () => (await import("./commands/decode.js")).registerDecodeCommand,
  },
  {
    listed: [
      [
        "demo",
        "",
        "start the embedded simulator, then migrate, backfill the last 2 days of every device and run one sync: into InfluxDB when INFLUX_URL is set, otherwise into line protocol; state and files under demo/ next to STATE_DB (./data/demo/ by default, /data/demo/ in the image)",
      ],
    ],
    load: async () => (await import("./commands/demo.js")).registerDemoCommand,
  },
  {
    listed: [
      ["migrate", "", "create or upgrade the state database (STATE_DB) to the current schema"],
    ],
    load: async () => (await import("./commands/migrate.js")).registerMigrateCommand,
  },
  {
    listed: [
      [
        "doctor",
        "[options]",
        "check the setup: the API (reachable, credentials, devices), InfluxDB (reachable, write, retention, where the rollups live), the state database, the clock, free disk, demo defaults still in use",
      ],
    ],
    load: async () => (await import("./commands/doctor.js")).registerDoctorCommand,
  },
  {
    listed: [
      [
        "init",
        "[options]",
        "first setup: checks the API credentials (setting the password with a one-time password on a first start), lists the devices, and writes the env file (--env-path, default ./.env): with random InfluxDB and Grafana secrets for the compose stack, or (--influx existing) for an InfluxDB you have, which it checks (1.x: makes the database and the rollups' policy); asks on a terminal, else reads ENERGY_API_URL, ENERGY_API_KEY, ENERGY_API_USER, ENERGY_API_PASSWORD, ENERGY_API_OTP, INFLUX_TOKEN and INFLUX_PASSWORD",
      ],
    ],
    load: async () => (await import("./commands/init.js")).registerInitCommand,
  },
];

/** A listed command that runs although its module was not loaded: runCli loads it, then again. */
export class NotLoaded extends Error {
  constructor(readonly command: string) {
    super(`energy-etl ${command} was not loaded`);
    this.name = "NotLoaded";
  }
}

/** The command line: the module of the command `argv` names loaded, every other command listed. */
export async function createProgram(io: CliIo, argv: readonly string[] = []): Promise<Command> {
  const program = new Command("energy-etl")
    .description(
      "Moves data from the Energy Monitoring Data API into InfluxDB.\n" +
        "Settings come from flags, then the environment, then --config FILE, then defaults.",
    )
    .version(version())
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
    });
  addGlobalOptions(program);
  const name = commandName(argv);
  const terms = new WeakMap<Command, string>();
  for (const { listed, load } of COMMANDS) {
    if (listed.some(([listedName]) => listedName === name)) (await load())(program, io);
    else
      for (const [listedName, usage, summary] of listed) {
        terms.set(listCommand(program, listedName, summary), `${listedName} ${usage}`.trim());
      }
  }
  const help = new Help();
  program.configureHelp({
    subcommandTerm: (command) => terms.get(command) ?? help.subcommandTerm(command),
    formatHelp: (command, helper) => commandsFirst(help.formatHelp(command, helper)),
  });
  refuseSecretFlags(
    program,
    program.commands.find((command) => command.name() === name && !terms.has(command)),
  );
  pointAtHelp(program);
  return program;
}

/** A help text with its commands before its options: the 27+ setting flags scroll them away. */
function commandsFirst(text: string): string {
  const sections = text.trimEnd().split("\n\n");
  const commands = sections.findIndex((section) => section.startsWith("Commands:"));
  const options = sections.findIndex((section) => section.startsWith("Options:"));
  if (commands < 0 || options < 0 || commands < options) return text;
  const [listed = ""] = sections.splice(commands, 1);
  sections.splice(options, 0, listed);
  return `${sections.join("\n\n")}\n`;
}

/** Lists the command `name` on `program`, its module not loaded: run, it throws {@link NotLoaded}. */
function listCommand(program: Command, name: string, summary: string): Command {
  return program
    .command(name)
    .description(summary)
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .action(() => {
      throw new NotLoaded(name);
    });
}

/**
 * The command `argv` names: its first word not an option nor an option's value (the next word
 * after `help`); none for the program's help or version.
 */
function commandName(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i] ?? "";
    if (["-h", "--help", "-V", "--version"].includes(word)) return undefined;
    if (word === "help") return argv[i + 1];
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
    outputError: (text, write) =>
      write(`${ERROR_PREFIX}${text.trimEnd().replace(/^error: /, "")}\n(see ${path} --help)\n`),
  });
  for (const sub of command.commands) pointAtHelp(sub);
}
