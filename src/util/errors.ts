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
