/** The message of an error, also of another realm (not `instanceof Error`: SQLite's under jest). */
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
