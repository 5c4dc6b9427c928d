import type { Command } from "commander";
import { listMigrations, MIGRATIONS_DIR, migrationLabel } from "../../state/migrator.js";
import type { StateStore } from "../../state/state-store.js";
import { type CliIo, writeLine } from "../io.js";
import { withStateStore } from "../with-state-store.js";

export function registerMigrateCommand(program: Command, io: CliIo): void {
  program
    .command("migrate")
    .description("create or upgrade the state database (STATE_DB) to the current schema")
    .addHelpText(
      "after",
      "\nOther commands apply pending migrations themselves; this one does only that.\n" +
        "Example:\n" +
        "  $ energy-etl migrate --state-db ./data/state.db\n" +
        "  applied 001_initial\n",
    )
    .action((_opts: unknown, command: Command) =>
      withStateStore(command, io, (store) => printMigrations(io, store), true),
    );
}

function printMigrations(io: CliIo, store: StateStore): void {
  const version = store.schemaVersion();
  if (store.appliedOnOpen.length === 0) {
    writeLine(io.stdout, `state database ${store.path} is up to date (schema version ${version})`);
    return;
  }
  const labels = new Map(listMigrations(MIGRATIONS_DIR).map((m) => [m.version, m]));
  for (const applied of store.appliedOnOpen) {
    const migration = labels.get(applied);
    writeLine(io.stdout, `applied ${migration ? migrationLabel(migration) : applied}`);
  }
  writeLine(io.stdout, `state database ${store.path} is at schema version ${version}`);
}
