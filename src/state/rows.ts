/** Checks shared by the stores: rows read from SQLite are validated, arguments are checked. */
import { z } from "zod";
import { scrubText } from "../logger.js";

/** Longest error or detail text stored. */
const MAX_STORED_TEXT = 2000;

/** A text as the state database keeps it: secrets redacted (bodies echo headers), cut at `max`. */
export function storedText(text: string, max = MAX_STORED_TEXT): string {
  return scrubText(text, max);
}

export const integer = z.number().int();

/** A nullable whole number column, read as `number | undefined`. */
export const optionalInteger = integer.nullable().transform((v) => v ?? undefined);

/** A nullable TEXT column, read as `string | undefined`. */
export const optionalText = z.nullable(z.string()).transform((v) => v ?? undefined);

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

/** A property of {@link columns}: the schema of its column, or the column's name and schema. */
type Column = z.ZodType | readonly [column: string, schema: z.ZodType];
type ColumnOutput<C> = C extends readonly [string, infer S extends z.ZodType]
  ? z.output<S>
  : C extends z.ZodType
    ? z.output<C>
    : never;

/**
 * The schema of a row read as an object with these properties, in this order, each from its
 * column: the one named, else the property in snake_case (`deviceId` from `device_id`). A column
 * read as undefined (a NULL through {@link optionalInteger}) leaves its property out.
 */
export function columns<F extends Readonly<Record<string, Column>>>(
  fields: F,
): z.ZodType<{ [K in keyof F]: ColumnOutput<F[K]> }> {
  const named = Object.entries(fields).map(([key, field]): [string, string, z.ZodType] =>
    Array.isArray(field)
      ? [key, field[0], field[1]]
      : [key, key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), field as z.ZodType],
  );
  const shape = Object.fromEntries(named.map(([, column, schema]) => [column, schema]));
  return z.object(shape).transform((row) => {
    const read: Record<string, unknown> = {};
    for (const [key, column] of named) {
      if (row[column] !== undefined) read[key] = row[column];
    }
    return read as { [K in keyof F]: ColumnOutput<F[K]> };
  });
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
