/**
 * Output made for where it goes: tables compact on a terminal and tab-separated when piped; log
 * lines pretty on a terminal (LOG_FORMAT=auto) and JSON otherwise; log lines print above a
 * progress bar, never through it; no ETA before it is known.
 */
import { Writable } from "node:stream";
import { BackfillProgressReporter, formatSeconds } from "../../src/cli/progress.js";
import { fitText, renderTable } from "../../src/cli/table.js";
import { Terminal } from "../../src/cli/terminal.js";
import { createLogger } from "../../src/logger.js";
import type { ChunkResult } from "../../src/pipeline/chunk-writer.js";
import { waitUntil } from "../support/wait.js";

/** A stream that keeps what is written, a terminal or not. */
function screen(isTTY: boolean) {
  let text = "";
  const stream = Object.assign(
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        text += chunk.toString("utf8");
        cb();
      },
    }),
    { isTTY, columns: 120 },
  );
  return { stream, text: () => text };
}

/** What a chunk of one request and ten points did. */
const ONE_CHUNK: ChunkResult = {
  records: 1,
  points: 10,
  requests: 1,
  serverTimeS: 0,
  deadLetters: 0,
  newDeadLetters: 0,
  resolvedDeadLetters: 0,
  dropped: { outOfWindow: 0, duplicates: 0, extraMembers: 0 },
  extraMemberNames: [],
};

const ESC = "\u001b";
/** A carriage return, a line clear, a move to a column. */
const CARRIAGE = new RegExp(`\\r|${ESC}\\[2K|${ESC}\\[\\d*G`);
/** Other control sequences (colours, cursor on/off). */
const ESCAPES = new RegExp(`${ESC}\\[[0-9;?]*[A-Za-z]`, "g");

/**
 * The lines a terminal shows for this output: of each line, what was written after its last
 * carriage return, line clear or move to column 1, other escape sequences removed.
 */
function visibleLines(text: string): string[] {
  return text
    .split("\n")
    .map((line) => line.split(CARRIAGE).at(-1) ?? "")
    .map((line) => line.replace(ESCAPES, ""))
    .filter((line) => line.trim() !== "");
}

const HEAD = ["device", "points"];
const ROWS = [
  ["hybrid-site-01", "12"],
  ["site\tA", "3"],
];

describe("tables", () => {
  it("are tab-separated values when piped: one line per row, tabs in cells escaped", () => {
    expect(renderTable(HEAD, ROWS, { isTTY: false })).toBe(
      "device\tpoints\nhybrid-site-01\t12\nsite\\tA\t3",
    );
  });

  it("are compact on a terminal: no line between rows", () => {
    const lines = renderTable(HEAD, ROWS, { isTTY: true }).split("\n");
    // top border, header, header separator, two rows, bottom border
    expect(lines).toHaveLength(6);
    expect(lines[3]).toContain("hybrid-site-01");
    expect(lines[4]).toContain("site\\tA");
  });
});

describe("a terminal that says it is 0 columns wide (a pseudo-terminal under script(1))", () => {
  it("gets tables and text fitted to 80 columns, as one that says nothing", () => {
    const head = ["device", "resource", "error"];
    const rows = [[`site-${"x".repeat(30)}`, "all_data", "y".repeat(200)]];
    const zero = renderTable(head, rows, { isTTY: true, columns: 0 }).split("\n");
    const none = renderTable(head, rows, { isTTY: true }).split("\n");
    expect(zero).toEqual(none);
    // fills 80 columns: the widest line is 80 wide, not squashed to a few characters a column
    expect(Math.max(...zero.map((l) => l.length))).toBe(80);
    expect(zero.join("\n")).toContain(`site-${"x".repeat(20)}`);
    expect(fitText("z".repeat(200), { isTTY: true, columns: 0 }).split("\n")[0]).toHaveLength(80);
  });
});

describe("log lines", () => {
  it("are JSON when stderr is not a terminal (auto)", () => {
    const err = screen(false);
    createLogger("info", new Terminal(err.stream, "auto")).info({ device: "d1" }, "device synced");
    const event = JSON.parse(err.text()) as Record<string, unknown>;
    expect(event).toMatchObject({ level: "info", device: "d1", msg: "device synced" });
  });

  it("are pretty on a terminal (auto), and with LOG_FORMAT=pretty when piped", () => {
    for (const [tty, format] of [
      [true, "auto"],
      [false, "pretty"],
    ] as const) {
      const err = screen(tty);
      createLogger("info", new Terminal(err.stream, format)).info(
        { device: "d1" },
        "device synced",
      );
      const text = err.text().replace(ESCAPES, "");
      expect(text).toMatch(/^\[\d\d:\d\d:\d\d\] INFO: device synced device=d1\n$/);
    }
  });

  it("pretty: the fields as key=value on the event's line, nested ones flattened, not JSON objects (#42)", () => {
    const err = screen(true);
    const logger = createLogger("info", new Terminal(err.stream, "auto"));
    logger
      .child({ device: "site A+1", run: 7 })
      .info(
        { points: 3, window: { from: "2026-06-15T12:00:00Z", to: 5 }, ids: ["a", "b"], ok: true },
        "chunk written",
      );
    logger.warn({ note: 'said "no"', empty: "" }, "refused");
    logger.info("plain");
    const lines = err.text().replace(ESCAPES, "").split("\n");
    expect(lines.map((line) => line.replace(/^\[\d\d:\d\d:\d\d\] /, ""))).toEqual([
      'INFO: chunk written device="site A+1" run=7 points=3 window.from=2026-06-15T12:00:00Z ' +
        'window.to=5 ids=["a","b"] ok=true',
      'WARN: refused note="said \\"no\\"" empty=""',
      "INFO: plain",
      "",
    ]);
  });

  it("pretty: an error's type and message on the event's line, its stack below it", () => {
    const err = screen(false);
    const logger = createLogger("info", new Terminal(err.stream, "pretty"));
    const failure = new Error("upstream said no");
    failure.stack = "Error: upstream said no\n    at fetch (x.js:1:1)";
    logger.error({ err: failure, device: "d1" }, "sync failed");
    expect(err.text().replace(/^\[\d\d:\d\d:\d\d\] /, "")).toBe(
      'ERROR: sync failed err.type=Error err.message="upstream said no" device=d1\n' +
        "    Error: upstream said no\n" +
        "        at fetch (x.js:1:1)\n",
    );
  });

  it("print above the progress bar on a terminal, never through it; summaries stay whole", async () => {
    const err = screen(true);
    const terminal = new Terminal(err.stream, "json");
    const logger = createLogger("info", terminal);
    const progress = new BackfillProgressReporter(4, 0, logger, terminal);
    logger.warn({ device: "d1" }, "slow answer");
    progress.chunkDone(ONE_CHUNK);
    // the bar's own timer draws the chunk done: a redraw between two log lines
    await waitUntil(() => err.text().includes(" 1/4 | "), "the bar drawn with 1/4 chunks", {
      timeoutMs: 5_000,
      intervalMs: 10,
    });
    logger.info("second line");
    progress.stop();
    const lines = visibleLines(err.text());
    // every log line is whole JSON on a line of its own, none with a bar glued to it
    const logLines = lines.filter((l) => l.includes('"level"'));
    expect(logLines).toHaveLength(2);
    for (const line of logLines) expect(() => JSON.parse(line)).not.toThrow();
    expect(lines.some((l) => l.startsWith("backfill "))).toBe(true);
    // no "restore cursor" that would put what follows over the log lines
    expect(err.text().includes(`${ESC}7`) || err.text().includes(`${ESC}8`)).toBe(false);
  });

  it("the bar shows no ETA before a chunk is done", () => {
    const err = screen(true);
    const terminal = new Terminal(err.stream, "json");
    const progress = new BackfillProgressReporter(10, 0, createLogger("info", terminal), terminal);
    progress.stop();
    const text = err.text();
    expect(text).toContain("backfill ");
    expect(text).toContain("ETA -");
    expect(text).not.toMatch(/ETA \d/);
  });

  it("the bar's line fits 80 columns at its widest, rate and ETA first", () => {
    const err = screen(true);
    const terminal = new Terminal(err.stream, "json");
    const progress = new BackfillProgressReporter(
      99_999,
      0,
      createLogger("info", terminal),
      terminal,
    );
    const chunk = { ...ONE_CHUNK, points: 999_000_000 };
    for (let i = 0; i < 3; i++) progress.chunkDone(chunk);
    progress.stop();
    const bars = visibleLines(err.text()).filter((l) => l.startsWith("backfill "));
    expect(bars.length).toBeGreaterThan(0);
    for (const line of bars) {
      expect(line.length).toBeLessThanOrEqual(80);
      expect(line).toMatch(/^backfill [\d.]+ req\/s \| ETA \S+ /);
    }
    expect(bars.at(-1)).toMatch(/ 3\/99999 \| 3\.00G pts$/);
  });

  it("formats an ETA as people read it", () => {
    expect([5, 75, 3700].map(formatSeconds)).toEqual(["5s", "1m15s", "1h01m"]);
  });
});
