import { existsSync } from "node:fs";
import type { Command } from "commander";
import { StateStore } from "../state/state-store.js";
import { type CommandContext, createContext } from "./context.js";
import { type CliIo, UsageError } from "./io.js";

/** `work` on STATE_DB (existing unless `create`); the file deleted or replaced meanwhile fails. */
export async function withStateStore<T>(
  command: Command,
  io: CliIo,
  work: (store: StateStore, context: CommandContext) => T | Promise<T>,
  create = false,
): Promise<T> {
  const context = createContext(command, io);
  const path = context.config.state.db;
  if (!create) requireStateDb(path);
  const store = StateStore.open(path, { logger: context.logger });
  try {
    const result = await Promise.resolve(work(store, context)).catch((error: unknown) => {
      throw store.fileProblem() ?? error;
    });
    store.checkFile();
    return result;
  } finally {
    store.close();
  }
}

/** A usage error unless STATE_DB `path` exists: a typo would make an empty one. */
export function requireStateDb(path: string): void {
  if (path !== ":memory:" && !existsSync(path)) {
    throw new UsageError(
      `STATE_DB ${path} does not exist (a typo?): sync, backfill, run or migrate create it`,
    );
  }
}
