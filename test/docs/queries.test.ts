/**
 * Every InfluxQL query of the README and docs/ (#42) runs as written against a database laid out
 * as `init` and compose lay it out: the raw points in its default retention policy, the rollups in
 * policy `rollups` (ROLLUP_BUCKET=energy/rollups), the sites from the config file. Each must
 * answer rows, not merely no error: a query of the wrong policy answers nothing.
 *
 * The data are energy-etl's own: the simulator's fleet synced for 12 to 15 June 2026 (the dates
 * the docs' examples use, test/deploy/filled-influxd.ts), then one device synced for the last
 * hours of the real clock (the queries that read `now() - 1h`, and the README's days since
 * October 2026).
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../../src/cli.js";
import type { Simulator } from "../../src/simulator/server.js";
import { FILL_SITES, type FilledInfluxd, fillFromSimulator } from "../deploy/filled-influxd.js";
import { dropTestDb } from "../support/bad-data.js";
import { bufferIo } from "../support/cli-io.js";
import { influxql } from "../support/influxd.js";
import { pipelineEnv, tempStateDb } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";
import { tempDir } from "../support/temp-dir.js";

/** The rollups' retention policy of `init`'s and compose's ROLLUP_BUCKET (`energy/rollups`). */
const ROLLUP_POLICY = "rollups";

interface DocQuery {
  /** `docs/schema.md:125`: where the statement starts. */
  readonly where: string;
  readonly query: string;
}

/** The pages: the README and every page of docs/. */
const PAGES = [
  "README.md",
  ...readdirSync("docs")
    .filter((f) => f.endsWith(".md"))
    .map((f) => join("docs", f)),
];

/**
 * The SELECT statements of a page's ```sql and ```influxql blocks: a statement starts at a line
 * that starts with SELECT and runs to the next one or the block's end. Blocks of other
 * statements (CREATE USER, CREATE CONTINUOUS QUERY: the operator's commands, with placeholders)
 * are not queries.
 */
function docQueries(page: string, text: string): DocQuery[] {
  const queries: DocQuery[] = [];
  let block: { line: number; text: string }[] | undefined;
  const flush = () => {
    let current: { line: number; lines: string[] } | undefined;
    const statements: { line: number; lines: string[] }[] = [];
    for (const { line, text: row } of block ?? []) {
      if (/^SELECT\b/.test(row)) {
        current = { line, lines: [row] };
        statements.push(current);
      } else current?.lines.push(row);
    }
    for (const s of statements) {
      queries.push({ where: `${page}:${s.line}`, query: s.lines.join("\n").trim() });
    }
  };
  text.split("\n").forEach((row, i) => {
    if (block === undefined) {
      if (/^\s*```(sql|influxql)\s*$/.test(row)) block = [];
    } else if (/^\s*```\s*$/.test(row)) {
      flush();
      block = undefined;
    } else block.push({ line: i + 1, text: row });
  });
  return queries;
}

const QUERIES = PAGES.flatMap((page) => docQueries(page, readFileSync(page, "utf8")));

describe("the docs' InfluxQL queries", () => {
  it("are found: the README's and schema.md's", () => {
    const count = (page: string) => QUERIES.filter((q) => q.where.startsWith(`${page}:`)).length;
    expect(count("README.md")).toBeGreaterThanOrEqual(2);
    expect(count("docs/schema.md")).toBeGreaterThanOrEqual(10);
  });

  it("splits a block into its statements, each from its first line", () => {
    const page = ["x", "```sql", "SELECT 1", "  AND 2", "SELECT 3", "```", "```sql", "CREATE USER"];
    expect(docQueries("p.md", [...page, "```"].join("\n"))).toEqual([
      { where: "p.md:3", query: "SELECT 1\n  AND 2" },
      { where: "p.md:5", query: "SELECT 3" },
    ]);
  });
});

describe("run as written against init's and compose's layout", () => {
  let filled: FilledInfluxd;
  let now: Simulator;

  beforeAll(async () => {
    filled = await fillFromSimulator("docs_queries", { rollupPolicy: ROLLUP_POLICY });
    // the last hours, by the CLI on the real clock, into the same database
    now = await startTestSimulator({ resolutionS: 900 });
    const config = join(tempDir("energy-etl-docs-queries-"), "config.json");
    writeFileSync(config, JSON.stringify({ sites: FILL_SITES }));
    const env = pipelineEnv(now, filled.db, tempStateDb(), {
      LOG_LEVEL: "warn",
      SYNC_START: "PT3H",
      ROLLUP_BUCKET: `${filled.db.bucket}/${ROLLUP_POLICY}`,
      ROLLUP_TIME_ZONES: "UTC,Europe/Berlin",
      CONFIG_FILE: config,
    });
    const io = bufferIo(env);
    const code = await runCli(["sync", "--device", "hybrid-site-01"], io);
    if (code !== 0) throw new Error(`sync of the last hours: exit ${code}: ${io.err()}`);
  }, 300_000);
  afterAll(async () => {
    await now?.close();
    await filled?.close();
    if (filled) await dropTestDb(filled.db);
  });

  it.each(QUERIES.map((q) => [q.where, q.query]))("%s answers rows", async (_where, query) => {
    const result = await influxql(filled.db.rawUrl, filled.db.bucket, query);
    const rows = result.results?.flatMap((r) => r.series ?? []).flatMap((s) => s.values) ?? [];
    expect(rows.length).toBeGreaterThan(0);
  });
});
