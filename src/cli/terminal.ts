import { createRequire } from "node:module";
import { Writable } from "node:stream";
import type CliProgress from "cli-progress";
import type { SingleBar } from "cli-progress";
import type { DestinationStream } from "pino";
import type PinoPretty from "pino-pretty";
import type { LOG_FORMATS } from "../config.js";
import { escapeControls, escapeControlsLeftByJson } from "../util/control-chars.js";
import type { CliIo } from "./io.js";

/** pino-pretty and cli-progress are loaded when a terminal needs them, not by every command. */
const require = createRequire(import.meta.url);

/** stderr shared by log lines (pretty on a terminal) and a progress bar kept on the last line. */
export class Terminal implements DestinationStream {
  private current: SingleBar | undefined;
  private readonly pretty: ((line: string) => string) | undefined;

  constructor(
    private readonly stderr: CliIo["stderr"],
    format: (typeof LOG_FORMATS)[number],
  ) {
    const tty = stderr.isTTY === true;
    this.pretty =
      format === "pretty" || (format === "auto" && tty)
        ? (require("pino-pretty") as typeof PinoPretty).prettyFactory({
            colorize: tty,
            translateTime: "SYS:HH:MM:ss",
            ignore: "pid,hostname,app",
            singleLine: true,
            // the fields as key=value after the message, not a JSON object (#42)
            hideObject: true,
            messageFormat: (log, messageKey) => eventText(log, messageKey),
          })
        : undefined;
  }

  /** One log line (pino's destination): above the bar when one is drawn. */
  write(line: string): void {
    const pretty = this.pretty?.(forPretty(line));
    const text = pretty === undefined ? line : pretty.endsWith("\n") ? pretty : `${pretty}\n`;
    if (this.current === undefined) {
      this.stderr.write(text);
      return;
    }
    // the bar's line becomes the log line, and the bar is drawn again below it
    this.stderr.write(`\r\u001b[2K${text.endsWith("\n") ? text : `${text}\n`}`);
    this.current.render();
  }

  /** A progress bar on the last line (one at a time); undefined when stderr is not a terminal. */
  bar(
    format: string,
    total: number,
    start: number,
    payload: object = {},
    options: { readonly barsize?: number } = {},
  ): SingleBar | undefined {
    if (this.stderr.isTTY !== true) return undefined;
    this.current?.stop();
    // forceRedraw: a log line took the bar's line, so an unchanged bar is drawn again too
    const { SingleBar } = require("cli-progress") as typeof CliProgress;
    this.current = new SingleBar({
      stream: this.barStream(),
      hideCursor: true,
      etaBuffer: 50,
      forceRedraw: true,
      // long log lines printed above the bar wrap as usual
      linewrap: true,
      format,
      ...options,
    });
    this.current.start(total, start, payload);
    return this.current;
  }

  /** stderr without the bar's save/restore cursor: log lines scroll, a restore overwrites them. */
  private barStream(): Writable {
    const stderr = this.stderr;
    return Object.assign(
      new Writable({
        write(chunk: Buffer | string, _encoding, callback) {
          stderr.write(String(chunk).replaceAll("\u001b7", "").replaceAll("\u001b8", ""));
          callback();
        },
      }),
      { isTTY: true, columns: (stderr as { columns?: number }).columns },
    );
  }

  /** Draws the bar a last time and gives the line back to log lines. */
  stopBars(): void {
    this.current?.stop();
    this.current = undefined;
  }
}

/** For pino-pretty: controls escaped in `msg` and `stack` (by line), DEL and C1 elsewhere. */
function forPretty(line: string): string {
  let entry: unknown;
  try {
    entry = JSON.parse(line, (key, value: unknown) => {
      if (typeof value !== "string") return value;
      if (key === "stack") return value.split("\n").map(escapeControls).join("\n");
      return escapeControlsLeftByJson(value);
    });
  } catch {
    // not JSON: escaped whole below
  }
  if (entry === null || typeof entry !== "object" || Array.isArray(entry)) {
    return `${escapeControls(line.trimEnd())}\n`;
  }
  if ("msg" in entry && typeof entry.msg === "string") {
    // the top level's `msg`: its C0 controls too (what JSON leaves is escaped already)
    entry = { ...entry, msg: escapeControls(entry.msg) };
  }
  return `${JSON.stringify(entry)}\n`;
}

/** What pino prints of its own, not a field of the event. */
const OWN_KEYS = new Set(["level", "time", "msg", "pid", "hostname", "app"]);

/**
 * A pretty event after its time and level: the message, then its fields as `key=value` on the
 * same line (nested objects flattened `err.message=…`, arrays as compact JSON, a value with a
 * space or a quote in quotes); an error's stack, several lines by nature, on the lines below.
 */
function eventText(log: Readonly<Record<string, unknown>>, messageKey: string): string {
  const message = log[messageKey];
  const fields: string[] = typeof message === "string" && message !== "" ? [message] : [];
  const stacks: string[] = [];
  const add = (entries: [string, unknown][], prefix: string): void => {
    for (const [key, value] of entries) {
      if (prefix === "" && (OWN_KEYS.has(key) || key === messageKey)) continue;
      if (key === "stack" && typeof value === "string") stacks.push(value);
      else if (value !== null && typeof value === "object" && !Array.isArray(value)) {
        add(Object.entries(value), `${prefix}${key}.`);
      } else fields.push(`${escapeControls(`${prefix}${key}`)}=${valueText(value)}`);
    }
  };
  add(Object.entries(log), "");
  return [fields.join(" "), ...stacks.map((stack) => indent(stack))].join("\n");
}

/** A field's value in `key=value`: escaped, quoted where a space, a quote or `=` would blur it. */
function valueText(value: unknown): string {
  if (typeof value !== "string") return escapeControls(JSON.stringify(value) ?? String(value));
  const text = escapeControls(value);
  return text === "" || /[\s"=]/.test(text) ? `"${text.replaceAll('"', '\\"')}"` : text;
}

const indent = (text: string): string =>
  text
    .split("\n")
    .map((line) => `    ${line}`)
    .join("\n");
