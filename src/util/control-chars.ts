/**
 * Control characters made visible, as JSON writes them: a value from the API or the state DB can
 * then neither start a line, nor return the carriage, nor colour, move or reorder anything on a
 * terminal.
 */

/** The characters JSON writes as a letter after a backslash. */
const SHORT_ESCAPES: ReadonlyMap<string, string> = new Map([
  ["\b", "\\b"],
  ["\t", "\\t"],
  ["\n", "\\n"],
  ["\f", "\\f"],
  ["\r", "\\r"],
]);

/**
 * A C0 control (U+0000..U+001F), DEL, a C1 control, U+2028/U+2029, or a bidi control (Unicode's
 * Bidi_Control: U+061C, U+200E/F, U+202A..U+202E, U+2066..U+2069), which reorders what a
 * terminal shows (`\u202e` shows `exe.txt` as `txt.exe`).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/** DEL, the C1 controls, U+2028/9 and the bidi controls: JSON does not escape them. */
const BEYOND_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/** A character written as JSON writes it: `\n`, `\u001b`, … */
const escaped = (char: string): string =>
  SHORT_ESCAPES.get(char) ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`;

/** `text` with every control character escaped as JSON escapes it, and nothing else changed. */
export function escapeControls(text: string): string {
  return text.replace(CONTROLS, escaped);
}

/**
 * `json` with the control characters JSON.stringify leaves ({@link BEYOND_JSON}) escaped: the same
 * JSON (they occur only inside strings, where the escape means the same character).
 */
export function escapeControlsLeftByJson(json: string): string {
  // every log line comes here: a search finds that there is nothing to do faster than a replace
  return json.search(BEYOND_JSON) === -1 ? json : json.replace(BEYOND_JSON, escaped);
}
