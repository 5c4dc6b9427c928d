/** Checks shared by the stores: rows read from SQLite are validated, arguments are checked. */
import { z } from "zod";
import { scrubText } from "../logger.js";

/** Longest error or detail text stored. */
const MAX_STORED_TEXT = 2000;

/**
 * A text as the state database keeps it: every registered secret redacted (error bodies may echo
 * request headers) and cut at `max` characters. The database holds no secret.
 */
export function storedText(text: string, max = MAX_STORED_TEXT): string {
  return scrubText(text, max);
}

/** A whole number column. */
export const integer = z.number().int();

/** A nullable whole number column, read as `number | undefined`. */
export const optionalInteger = integer.nullable().transform((v) => v ?? undefined);

/** A TEXT column holding a JSON array of strings. */
export const jsonStringArray = z
  .string()
  .transform((text, ctx): unknown => {
    try {
      return JSON.parse(text);
    } catch {
      ctx.addIssue({ code: "custom", message: "not a JSON array" });
      return z.NEVER;
    }
  })
  .pipe(z.array(z.string()));

/**
 * The fields whose value is neither null nor undefined: how a row's NULL columns become absent
 * optional properties.
 */
export function presentFields<T extends Record<string, unknown>>(
  fields: T,
): { [K in keyof T]?: Exclude<T[K], null | undefined> } {
  const present: Record<string, unknown> = {};
  for (const key in fields) {
    const value = fields[key];
    if (value !== null && value !== undefined) present[key] = value;
  }
  return present as { [K in keyof T]?: Exclude<T[K], null | undefined> };
}

/** Validates a row (or a single plucked value) read from the database. */
export function parseRow<T>(schema: z.ZodType<T>, row: unknown, what: string): T {
  const result = schema.safeParse(row);
  if (!result.success) {
    throw new Error(
      `state database: unexpected ${what}: ${z.prettifyError(result.error)} in ${JSON.stringify(row)}`,
    );
  }
  return result.data;
}

/** Validates rows read from the database ({@link parseRow}). */
export function parseRows<T>(schema: z.ZodType<T>, rows: readonly unknown[], what: string): T[] {
  return rows.map((row) => parseRow(schema, row, what));
}

/** Throws a RangeError naming `name` unless `value` is a safe integer >= `min`. */
export function requireInteger(name: string, value: number, min = 0): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new RangeError(`${name} must be an integer >= ${min}, got ${value}`);
  }
}

/** Throws a RangeError naming `name` unless `value` is a non-empty string. */
export function requireText(name: string, value: string): void {
  if (typeof value !== "string" || value.length === 0) {
    throw new RangeError(`${name} must be a non-empty string`);
  }
}

/** Value ids without duplicates, in a stable (code unit) order. */
export function sortedIds(ids: readonly string[]): string[] {
  return [...new Set(ids)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
