/**
 * Control characters never reach a terminal: what a device id or an error text holds (CR, LF,
 * ESC, other C0 controls, DEL, C1) is written escaped as JSON escapes it, by the line writer, the
 * table renderer (tab-separated values too), fitted text and pretty log lines; JSON log lines
 * hold no control character either. Every expected text is written out here by hand.
 */
import { PassThrough } from "node:stream";
import { writeLine, writeText } from "../../src/cli/io.js";
import { fitText, renderTable } from "../../src/cli/table.js";
import { Terminal } from "../../src/cli/terminal.js";
import { createLogger } from "../../src/logger.js";
import { escapeControls, escapeControlsLeftByJson } from "../../src/util/control-chars.js";
import { controlsIn as rawControlsIn } from "../support/raw-controls.js";

/** A device id that would print a fake summary line in red on a terminal. */
const EVIL = "evil\r\nsync ok: 0 devices\u001b[31mred\u202edner";
/** EVIL as it must be shown. */
const EVIL_SHOWN = "evil\\r\\nsync ok: 0 devices\\u001b[31mred\\u202edner";

/**
 * The control characters in `text` (test/support/raw-controls.ts) as hex codes, the line feed
 * left out with `lines`: those that would reach a terminal as they are.
 */
function controlsIn(text: string, options: { lines?: boolean } = {}): string[] {
  return rawControlsIn(text, options.lines === true ? [0x0a] : []);
}

const ESC = "\u001b";
/** pino-pretty's colours. */
const COLOURS = new RegExp(`${ESC}\\[\\d+m`, "g");

/** A stream that keeps what is written, a terminal `columns` wide or not. */
function screen(isTTY: boolean, columns = 100) {
  const stream = Object.assign(new PassThrough(), { isTTY, columns });
  let text = "";
  stream.on("data", (chunk: Buffer) => {
    text += chunk.toString("utf8");
  });
  return { stream, text: () => text };
}

describe("escapeControls", () => {
  // [what it shows, the text]: the title names what is shown (the text itself may not print)
  it.each([
    ["plain text", "plain text"],
    ["a\\nb", "a\nb"],
    ["a\\r\\nb", "a\r\nb"],
    ["tab\\there", "tab\there"],
    ["\\b\\f", "\b\f"],
    ["\\u0000", "\u0000"],
    ["\\u0007bell", "\u0007bell"],
    ["\\u001b[31mred\\u001b[0m", "\u001b[31mred\u001b[0m"],
    ["\\u001f", "\u001f"],
    ["del\\u007f", "del\u007f"],
    ["\\u0080\\u009b2J\\u009f", "\u0080\u009b2J\u009f"],
    ["line\\u2028para\\u2029", "line\u2028para\u2029"],
    // bidi controls: each would reorder what follows on a terminal
    ["invoice\\u202egpj.exe", "invoice\u202egpj.exe"],
    ["\\u061c\\u200e\\u200f", "\u061c\u200e\u200f"],
    ["\\u202a\\u202b\\u202c\\u202d\\u202e", "\u202a\u202b\u202c\u202d\u202e"],
    ["\\u2066\\u2067\\u2068\\u2069", "\u2066\u2067\u2068\u2069"],
    // their neighbours are no controls: as they are
    ["\u200d\u2030\u2065\u206a", "\u200d\u2030\u2065\u206a"],
    [EVIL_SHOWN, EVIL],
    // no control: as it is (a backslash stays one, quotes stay quotes)
    ['back\\slash "quoted"', 'back\\slash "quoted"'],
    [" ~\u00a0\u00ff", " ~\u00a0\u00ff"],
    ["é ü 日本 😀", "é ü 日本 😀"],
    ["", ""],
  ])("shows %j", (shown, text) => {
    expect(escapeControls(text)).toBe(shown);
  });

  it("escapeControlsLeftByJson escapes only what JSON.stringify leaves (DEL, C1, U+2028/9, bidi)", () => {
    expect(escapeControlsLeftByJson('{"a":"x\u007f\u0085\u2028y","b":"\\n"}')).toBe(
      '{"a":"x\\u007f\\u0085\\u2028y","b":"\\n"}',
    );
    expect(JSON.parse(escapeControlsLeftByJson('"\u009b"'))).toBe("\u009b");
    expect(escapeControlsLeftByJson('{"a":"\u202e\u2066x"}')).toBe('{"a":"\\u202e\\u2066x"}');
    expect(JSON.parse(escapeControlsLeftByJson('"\u202e"'))).toBe("\u202e");
  });
});

describe("the line writer", () => {
  it("writeLine writes one line: every control escaped, a line feed too", () => {
    const out = screen(false);
    writeLine(out.stream, `${EVIL}: 3 points`);
    writeLine(out.stream);
    expect(out.text()).toBe(`${EVIL_SHOWN}: 3 points\n\n`);
  });

  it("writeText keeps its own lines and tabs and escapes every other control", () => {
    const out = screen(false);
    writeText(out.stream, "first\u001b[2K\nsecond\r\tthird");
    writeText(out.stream, JSON.stringify({ device: EVIL, del: "\u007f" }, null, 2));
    expect(out.text()).toBe(
      "first\\u001b[2K\nsecond\\r\tthird\n" +
        `{\n  "device": "${EVIL_SHOWN}",\n  "del": "\\u007f"\n}\n`,
    );
  });
});

describe("tables and fitted text", () => {
  const head = ["device", "error"];
  const rows = [
    [EVIL, "HTTP 500\twith\nbody"],
    ["plain-01", "none"],
  ];

  it("piped: tab-separated values, cells escaped, one line per row", () => {
    expect(renderTable(head, rows, { isTTY: false })).toBe(
      ["device\terror", `${EVIL_SHOWN}\tHTTP 500\\twith\\nbody`, "plain-01\tnone"].join("\n"),
    );
  });

  it("on a terminal: cells escaped, a row on one line, no control byte", () => {
    const table = renderTable(head, rows, { isTTY: true, columns: 120 });
    expect(controlsIn(table, { lines: true })).toEqual([]);
    // borders, head, separator, two rows, border
    const lines = table.split("\n");
    expect(lines).toHaveLength(6);
    expect(lines[3]).toContain(EVIL_SHOWN);
    expect(lines[3]).toContain("HTTP 500\\twith\\nbody");
  });

  it("narrow terminal: wrapped cells hold no control byte either", () => {
    const table = renderTable(head, rows, { isTTY: true, columns: 30 });
    expect(controlsIn(table, { lines: true })).toEqual([]);
    expect(table.replace(/[^a-z0-9\\[\]: ]/g, "")).toContain("evil");
  });

  it("fitText escapes, then wraps at spaces on a terminal", () => {
    expect(fitText(`device ${EVIL}`, { isTTY: false })).toBe(`device ${EVIL_SHOWN}`);
    expect(fitText("one two\u001b[31m three", { isTTY: true, columns: 16 })).toBe(
      "one\ntwo\\u001b[31m\nthree",
    );
  });
});

describe("log lines", () => {
  it("JSON: no control character in the line, the same value when parsed", () => {
    const err = screen(false);
    createLogger("info", new Terminal(err.stream, "json")).warn(
      { device: `${EVIL}\u007f\u009b` },
      `device ${EVIL} failed`,
    );
    const line = err.text();
    expect(line.endsWith("\n")).toBe(true);
    expect(controlsIn(line.slice(0, -1))).toEqual([]);
    expect(JSON.parse(line)).toMatchObject({
      device: `${EVIL}\u007f\u009b`,
      msg: `device ${EVIL} failed`,
    });
  });

  it("pretty: the message escaped, the fields as key=value, an error's stack on its lines", () => {
    const err = screen(false);
    const logger = createLogger("info", new Terminal(err.stream, "pretty"));
    logger.warn({ device: `${EVIL}\u007f` }, `device ${EVIL} failed`);
    const failure = new Error("upstream said \u001b[31mno");
    failure.stack = "Error: upstream said \u001b[31mno\n    at fetch (x.js:1:1)";
    logger.error({ err: failure }, "sync failed");
    const text = err.text();
    expect(controlsIn(text, { lines: true })).toEqual([]);
    const [first] = text.split("\n");
    expect(first).toMatch(
      /^\[\d\d:\d\d:\d\d\] WARN: device evil\\r\\nsync ok: 0 devices\\u001b\[31mred\\u202edner failed /,
    );
    expect(first).toContain(
      ' device="evil\\r\\nsync ok: 0 devices\\u001b[31mred\\u202edner\\u007f"',
    );
    expect(text).toContain("Error: upstream said \\u001b[31mno\n");
    expect(text).toMatch(/\n\s+at fetch \(x\.js:1:1\)\n/);
  });

  it("pretty with colours on a terminal: only the colours are escape sequences", () => {
    const err = screen(true);
    createLogger("info", new Terminal(err.stream, "auto")).info(`device ${EVIL}`);
    const text = err.text().replace(COLOURS, "");
    expect(controlsIn(text, { lines: true })).toEqual([]);
    expect(text).toContain(`INFO: device ${EVIL_SHOWN}\n`);
  });
});
