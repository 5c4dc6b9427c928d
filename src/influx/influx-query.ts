import type { InfluxDB } from "@influxdata/influxdb-client";
import { z } from "zod";
import { errnoOf } from "../util/errors.js";
import { excerpt } from "../util/text.js";
import { credentialSettings, type InfluxConnection, influxClient } from "./influx-connection.js";
import { readInfluxFailure } from "./write-errors.js";

/** A query InfluxDB refused or answered in another shape. */
export class InfluxQueryError extends Error {
  override readonly name = "InfluxQueryError";
}

/** Where InfluxQL queries go (the writer's settings; on 2.x/3.x the bucket's v1 database). */
export interface InfluxQueryTarget extends InfluxConnection {
  /** `database[/retention-policy]`, or a 2.x/3.x bucket. */
  readonly bucket: string;
}

const seriesSchema = z.object({
  // 1.x names no series of SHOW RETENTION POLICIES
  name: z.string().default(""),
  tags: z.record(z.string(), z.string()).optional(),
  columns: z.array(z.string()),
  // rows checked in one loop: a rollup pass reads hundreds of thousands of them
  values: z.custom<unknown[][]>(
    (v) => Array.isArray(v) && v.every((row) => Array.isArray(row)),
    "values must be an array of rows",
  ),
  partial: z.boolean().optional(),
});
const resultSchema = z.object({
  results: z.array(
    z.object({
      statement_id: z.number().optional(),
      series: z.array(seriesSchema).optional(),
      error: z.string().optional(),
      partial: z.boolean().optional(),
    }),
  ),
});

/** One series of an InfluxQL answer (times in epoch seconds). */
export type InfluxqlSeries = z.infer<typeof seriesSchema>;

/**
 * Reads InfluxDB with InfluxQL over `/query`: what 1.x serves natively and 2.x/3.x through their
 * v1 compatibility API (a bucket is the database of its v1 mapping). Used by `energy-etl audit`.
 */
export class InfluxQuery {
  private readonly influx: InfluxDB;
  private readonly db: string;
  private readonly rp: string | undefined;

  constructor(private readonly target: InfluxQueryTarget) {
    this.influx = influxClient(target);
    const [db = "", rp] = target.bucket.split("/");
    this.db = db;
    this.rp = rp;
  }

  /**
   * Runs statements in one request: the series of each, in order; an error throws InfluxDB's text.
   * `change` sends them as POST, which 1.x wants for statements that change it (CREATE ...).
   */
  async query(
    statements: readonly string[],
    { change = false }: { readonly change?: boolean } = {},
  ): Promise<InfluxqlSeries[][]> {
    if (statements.length === 0) return [];
    const params = new URLSearchParams({ db: this.db, epoch: "s", q: statements.join(";") });
    if (this.rp) params.set("rp", this.rp);
    let answer: unknown;
    try {
      answer = await this.request(`/query?${params}`, change);
    } catch (error) {
      const { status, message } = readInfluxFailure(error);
      const auth = status === 401 || status === 403 ? `: ${this.readAdvice()}` : "";
      const http = status ? `HTTP ${status}: ` : "";
      throw new InfluxQueryError(
        `InfluxDB at ${this.target.url} refused the query (${http}${message})${auth}`,
      );
    }
    const parsed = resultSchema.safeParse(answer);
    if (!parsed.success) {
      throw new InfluxQueryError(
        `InfluxDB answered a query with something else than InfluxQL results: ${excerpt(JSON.stringify(answer) ?? "")}`,
      );
    }
    const { results } = parsed.data;
    for (const result of results) {
      if (result.error) throw new InfluxQueryError(`InfluxQL failed: ${result.error}`);
      // cut short by the server (max-row-limit, a capped endpoint): never taken for all of it
      if (result.partial || result.series?.some((s) => s.partial)) {
        throw new InfluxQueryError(
          "InfluxDB cut its answer short (partial: its max-row-limit?): raise the limit",
        );
      }
    }
    // callers match results to statements by position: a missing or reordered one must not shift
    const inOrder = results.every((r, i) => r.statement_id === undefined || r.statement_id === i);
    if (results.length !== statements.length || !inOrder) {
      throw new InfluxQueryError(
        `InfluxDB answered ${results.length} results for ${statements.length} statements` +
          (inOrder ? "" : " (out of order)"),
      );
    }
    return results.map((result) => result.series ?? []);
  }

  /** Whose read access a 401/403 is about: the token, the 1.x user, or credentials not given. */
  private readAdvice(): string {
    const { token, username = "" } = this.target;
    if (token !== "")
      return `the token (${credentialSettings("v2", this.target)}) needs read access to the bucket`;
    if (username !== "") {
      return `the user ${username} (${credentialSettings("v1", this.target)}) needs read access to the database`;
    }
    return "InfluxDB wants credentials: set INFLUX_TOKEN, or on 1.x INFLUX_USERNAME and INFLUX_PASSWORD";
  }

  /**
   * One request; a read whose kept-alive connection the server had closed while idle (a reset
   * before any answer) is sent once more on a new one. A change (POST) is never sent twice.
   */
  private async request(path: string, change: boolean): Promise<unknown> {
    const method = change ? "POST" : "GET";
    try {
      return await this.influx.transport.request(path, "", { method });
    } catch (error) {
      if (change || !resetBeforeAnswer(error)) throw error;
      return this.influx.transport.request(path, "", { method });
    }
  }
}

/** The connection was reset or hung up before any answer (no HTTP status). */
function resetBeforeAnswer(error: unknown): boolean {
  const { status, message } = readInfluxFailure(error);
  return status === undefined && /ECONNRESET|socket hang up/i.test(`${errnoOf(error)} ${message}`);
}
