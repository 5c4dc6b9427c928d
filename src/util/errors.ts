/**
 * The message of an error, for logs, messages and the state database. Also reads errors of another
 * realm (better-sqlite3's under jest), which fail `instanceof Error`.
 */
export function messageOf(error: unknown): string {
  if (typeof error === "object" && error !== null && "message" in error) {
    if (typeof error.message === "string") return error.message;
  }
  return String(error);
}

/** The `code` of a system or library error (`ENOENT`, `SQLITE_BUSY`), when it has one. */
export function errnoOf(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null || !("code" in error)) return undefined;
  return typeof error.code === "string" ? error.code : undefined;
}
