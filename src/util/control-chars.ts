/**
 * Control characters made visible, as JSON writes them: what a value from the API or the state DB
 * holds (a device id, an error text) can then neither start a line of its own, nor return the
 * carriage, nor colour or move anything on a terminal.
 */

/** The characters JSON writes as a letter after a backslash. */
const SHORT_ESCAPES: ReadonlyMap<number, string> = new Map([
  [0x08, "\\b"],
  [0x09, "\\t"],
  [0x0a, "\\n"],
  [0x0c, "\\f"],
  [0x0d, "\\r"],
]);

/** DEL, the C1 controls, the Unicode line and paragraph separators: JSON does not escape them. */
const beyondJson = (code: number): boolean =>
  (code >= 0x7f && code <= 0x9f) || code === 0x2028 || code === 0x2029;

/** Any character of {@link beyondJson}. */
const BEYOND_JSON = /[\u007f-\u009f\u2028\u2029]/;

/** A C0 control (U+0000..U+001F, tab and line feed among them) or one of {@link beyondJson}. */
const isControl = (code: number): boolean => code < 0x20 || beyondJson(code);

/** `text` with each character `escaped` says so written as JSON writes it: `\n`, `\u001b`, … */
function escapeWhere(text: string, escaped: (code: number) => boolean): string {
  let out = "";
  let copied = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (!escaped(code)) continue;
    const written = SHORT_ESCAPES.get(code) ?? `\\u${code.toString(16).padStart(4, "0")}`;
    out += text.slice(copied, i) + written;
    copied = i + 1;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * `text` with every control character escaped as JSON escapes it (`\n`, `\r`, `\t`, `\b`, `\f`,
 * else `\u001b`, lowercase hex): the C0 controls, DEL, the C1 controls (U+0080..U+009F) and
 * U+2028/U+2029. Nothing else changes: a backslash stays one backslash, quotes stay quotes.
 */
export function escapeControls(text: string): string {
  return escapeWhere(text, isControl);
}

/**
 * `json` (JSON text) with the control characters JSON.stringify leaves as they are (DEL, the C1
 * controls, U+2028/U+2029) escaped as `\u007f` …: the same JSON, with no control character in
 * its text (JSON text holds them only inside strings, where the escape means the same character).
 */
export function escapeControlsLeftByJson(json: string): string {
  // every log line comes here: a RegExp finds that there is nothing to do four times as fast
  return BEYOND_JSON.test(json) ? escapeWhere(json, beyondJson) : json;
}
