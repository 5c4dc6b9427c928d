import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from "node:fs";
import { errnoOf, messageOf } from "./errors.js";

/** No text a user gives may hold a control character: a line break in a token is a bad paste. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/** What is wrong with `value` as a user's text, or undefined. Never repeats the value. */
export function textProblem(value: string): string | undefined {
  return CONTROL.test(value)
    ? "holds a control character (a line break, a tab or the like); the value is not shown"
    : undefined;
}

/** A text file read by {@link readTextFile}, or why it was not (`errno` when opening failed). */
export type TextFile =
  | { readonly text: string }
  | { readonly problem: string; readonly errno?: string };

function kindOf(stat: Stats): string {
  if (stat.isDirectory()) return "a directory";
  if (stat.isFIFO()) return "a FIFO (named pipe)";
  if (stat.isCharacterDevice()) return "a character device";
  if (stat.isBlockDevice()) return "a block device";
  if (stat.isSocket()) return "a socket";
  return "not a regular file";
}

/**
 * A settings file a user named (config, .env) as text, read only when it is a regular file (a
 * FIFO or a device never blocks nor fills memory) of at most `maxBytes` bytes. A UTF-8 byte order
 * mark is dropped; UTF-16 and bytes that are not UTF-8 are refused, saying how to save it.
 */
export function readTextFile(path: string, maxBytes: number): TextFile {
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO must not wait for a writer
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    const errno = errnoOf(error) ?? "unreadable";
    return { problem: `cannot be read (${errno})`, errno };
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { problem: `is ${kindOf(stat)}, not a file: give a file's path` };
    const tooLarge = `is larger than ${maxBytes} bytes, more than such a file may be`;
    if (stat.size > maxBytes) return { problem: tooLarge };
    const bytes = Buffer.alloc(maxBytes + 1);
    let length = 0;
    for (let n = -1; n !== 0 && length < bytes.length; length += n) {
      n = readSync(fd, bytes, length, bytes.length - length, null);
    }
    if (length > maxBytes) return { problem: tooLarge };
    return decodeText(bytes.subarray(0, length));
  } catch (error) {
    return { problem: `cannot be read (${errnoOf(error) ?? messageOf(error)})` };
  } finally {
    closeSync(fd);
  }
}

/** UTF-8 text without its byte order mark; UTF-16 (with or without a mark) refused. */
function decodeText(bytes: Buffer): TextFile {
  const save = "save it as UTF-8 (in most editors: Save As, encoding UTF-8)";
  const [first, second] = bytes;
  if ((first === 0xff && second === 0xfe) || (first === 0xfe && second === 0xff)) {
    return { problem: `is UTF-16 (it starts with a UTF-16 byte order mark): ${save}` };
  }
  if (bytes.includes(0)) return { problem: `holds NUL bytes (UTF-16 or a binary file?): ${save}` };
  try {
    // fatal: bytes that are not UTF-8 are an error, not U+FFFD in a password; the BOM is dropped
    return { text: new TextDecoder("utf-8", { fatal: true }).decode(bytes) };
  } catch {
    return { problem: `is not UTF-8 text: ${save}` };
  }
}
