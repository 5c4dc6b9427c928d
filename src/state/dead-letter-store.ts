import { createHash } from "node:crypto";
import type Database from "better-sqlite3";
import { z } from "zod";
import {
  columns,
  integer,
  jsonStringArray,
  parseRow,
  parseRows,
  requireInteger,
  requireText,
  sortedIds,
  storedText,
} from "./rows.js";
import {
  DEAD_LETTER_KINDS,
  type DeadLetter,
  MAX_DEAD_LETTER_CHARS,
  type NewDeadLetter,
} from "./types.js";

/** The columns a dead letter and a retry's letter share. */
const letterColumns = {
  id: integer,
  kind: z.enum(DEAD_LETTER_KINDS),
  deviceId: z.string(),
  resourceId: z.string(),
  windowFromS: ["window_from", integer],
  windowToS: ["window_to", integer],
  payload: z.string(),
  truncated: z.union([z.literal(0), z.literal(1)]).transform((v) => v === 1),
} as const;

const deadLetterRow: z.ZodType<DeadLetter> = columns({
  ...letterColumns,
  valueIds: jsonStringArray,
  error: z.string(),
  occurrences: integer,
  retries: integer,
  firstSeen: z.string(),
  lastSeen: z.string(),
});

const countRow = columns({ deviceId: z.string(), resourceId: z.string(), count: ["n", integer] });

const lineRow = z.object({ id: integer, payload: z.string() });

/** A dead letter as a retry reads it: what writing it again takes, its value ids as stored. */
export interface RetryLetter extends Omit<DeadLetter, RetryLeftOut | "valueIds"> {
  /** The value ids as stored (a JSON array): read when needed, many letters share them. */
  readonly valueIdsJson: string;
}
type RetryLeftOut = "error" | "occurrences" | "retries" | "firstSeen" | "lastSeen";

const retryRow: z.ZodType<RetryLetter> = columns({
  ...letterColumns,
  valueIdsJson: ["value_ids", z.string()],
});

const spanRow = z.object({ count: integer, lastId: integer.nullable() });

/** Which dead letters: of one device, at most `limit`, ids in (afterId, upToId]. */
export interface DeadLetterQuery {
  readonly deviceId?: string;
  readonly limit?: number;
  readonly afterId?: number;
  readonly upToId?: number;
}
type PageQuery = { deviceId: string | null; limit: number; afterId: number; upToId: number };

/** A page of dead letters, oldest first: see {@link PageQuery}. */
const PAGE = `FROM dead_letters WHERE (@deviceId IS NULL OR device_id = @deviceId)
  AND id > @afterId AND id <= @upToId ORDER BY id LIMIT @limit`;

/**
 * Rows and members that failed validation and lines InfluxDB refused for good, one per distinct
 * payload (and member): the same bad row read again counts as an occurrence, not a new letter.
 */
export class DeadLetterStore {
  private readonly sql;

  constructor(db: Database.Database) {
    this.sql = {
      upsert: db
        .prepare<
          Omit<NewDeadLetter, "valueIds"> & {
            valueIds: string;
            truncated: 0 | 1;
            fingerprint: string;
            now: string;
          }
        >(
          `INSERT INTO dead_letters (kind, device_id, resource_id, window_from, window_to, value_ids,
             payload, truncated, error, fingerprint, first_seen, last_seen)
           VALUES (@kind, @deviceId, @resourceId, @windowFromS, @windowToS, @valueIds, @payload,
             @truncated, @error, @fingerprint, @now, @now)
           ON CONFLICT (fingerprint) DO UPDATE SET
             occurrences = occurrences + 1, last_seen = excluded.last_seen
           RETURNING occurrences`,
        )
        .pluck(),
      list: db.prepare<PageQuery>(`SELECT * ${PAGE}`),
      retryPage: db.prepare<PageQuery>(
        `SELECT id, kind, device_id, resource_id, window_from, window_to, value_ids, payload,
           truncated ${PAGE}`,
      ),
      span: db.prepare<{ deviceId: string | null; limit: number }>(
        `SELECT count(*) AS count, max(id) AS lastId FROM (SELECT id FROM dead_letters
           WHERE @deviceId IS NULL OR device_id = @deviceId ORDER BY id LIMIT @limit)`,
      ),
      get: db.prepare<[number]>("SELECT * FROM dead_letters WHERE id = ?"),
      count: db.prepare<[]>("SELECT COUNT(*) FROM dead_letters").pluck(),
      countByDevice: db.prepare<[]>(
        "SELECT device_id, resource_id, COUNT(*) AS n FROM dead_letters GROUP BY device_id, resource_id",
      ),
      forget: db.prepare<[string]>(
        "DELETE FROM dead_letters WHERE id IN (SELECT value FROM json_each(?))",
      ),
      lines: db.prepare<[string, string]>(
        `SELECT id, payload FROM dead_letters
         WHERE device_id = ? AND resource_id = ? AND kind = 'line' AND truncated = 0`,
      ),
      retryFailed: db.prepare<{ id: number; error: string; now: string }>(
        `UPDATE dead_letters SET retries = retries + 1, error = @error, last_seen = @now
         WHERE id = @id`,
      ),
    };
  }

  /** What makes a dead letter unique: kind, device, resource, payload (and a member's value id). */
  static fingerprint(
    letter: Pick<NewDeadLetter, "kind" | "deviceId" | "resourceId" | "payload" | "valueIds">,
  ) {
    const identity = [letter.kind, letter.deviceId, letter.resourceId, letter.payload];
    if (letter.kind === "member") identity.push(...sortedIds(letter.valueIds));
    return createHash("sha256").update(JSON.stringify(identity)).digest("hex");
  }

  /** Keeps a dead letter; returns true when it is new (false: seen before, one more occurrence). */
  add(letter: NewDeadLetter, now: Date): boolean {
    requireText("deviceId", letter.deviceId);
    requireText("resourceId", letter.resourceId);
    requireInteger("windowFromS", letter.windowFromS);
    requireInteger("windowToS", letter.windowToS);
    const payload = storedText(letter.payload, Number.POSITIVE_INFINITY);
    const truncated = payload.length > MAX_DEAD_LETTER_CHARS;
    const occurrences = this.sql.upsert.get({
      ...letter,
      valueIds: JSON.stringify(sortedIds(letter.valueIds)),
      payload: truncated ? payload.slice(0, MAX_DEAD_LETTER_CHARS) : payload,
      truncated: truncated ? 1 : 0,
      error: storedText(letter.error),
      fingerprint: DeadLetterStore.fingerprint(letter),
      now: now.toISOString(),
    });
    return parseRow(integer, occurrences, "occurrences") === 1;
  }

  /** Dead letters, oldest first (of one device, if given; with ids in (afterId, upToId]). */
  list({ deviceId, limit, afterId, upToId }: DeadLetterQuery = {}): DeadLetter[] {
    const rows = this.sql.list.all({
      deviceId: deviceId ?? null,
      limit: limit ?? -1,
      afterId: afterId ?? 0,
      upToId: upToId ?? Number.MAX_SAFE_INTEGER,
    });
    return parseRows(deadLetterRow, rows, "dead letter");
  }

  /** How many {@link list} would list, and the last one's id (undefined: none). */
  span({ deviceId, limit }: Pick<DeadLetterQuery, "deviceId" | "limit"> = {}): {
    count: number;
    lastId: number | undefined;
  } {
    const row = this.sql.span.get({ deviceId: deviceId ?? null, limit: limit ?? -1 });
    const { count, lastId } = parseRow(spanRow, row, "dead letter span");
    return { count, lastId: lastId ?? undefined };
  }

  /**
   * A page of dead letters as a retry reads them (ids in (afterId, upToId], oldest first): only the
   * columns that writing them again takes.
   */
  retryPage(query: {
    readonly deviceId?: string;
    readonly afterId: number;
    readonly upToId: number;
    readonly limit: number;
  }): RetryLetter[] {
    const { deviceId, limit, afterId, upToId } = query;
    const rows = this.sql.retryPage.all({ deviceId: deviceId ?? null, limit, afterId, upToId });
    return parseRows(retryRow, rows, "dead letter");
  }

  get(id: number): DeadLetter | undefined {
    const row = this.sql.get.get(id);
    return row === undefined ? undefined : parseRow(deadLetterRow, row, "dead letter");
  }

  count(): number {
    return parseRow(integer, this.sql.count.get(), "count");
  }

  /** Dead letters per device resource, for metrics. */
  countByResource(): { deviceId: string; resourceId: string; count: number }[] {
    return parseRows(countRow, this.sql.countByDevice.all(), "dead letter count");
  }

  /** The refused lines of a device resource by text, so that a line written later can be forgotten. */
  lineLetters(deviceId: string, resourceId: string): Map<string, number> {
    const lines = parseRows(lineRow, this.sql.lines.all(deviceId, resourceId), "line");
    return new Map(lines.map(({ id, payload }) => [payload, id]));
  }

  /** Forgets a dead letter (it was written after all). */
  remove(id: number): void {
    this.forget([id]);
  }

  /** Forgets dead letters, in one statement (they were written after all, or cleared). */
  forget(ids: readonly number[]): void {
    if (ids.length > 0) this.sql.forget.run(JSON.stringify(ids));
  }

  /** A retry failed again: counted, with its new error. */
  recordRetryFailure(id: number, error: string, now: Date): void {
    this.sql.retryFailed.run({ id, error: storedText(error), now: now.toISOString() });
  }
}
