/** Control characters escaped as JSON writes them: a value can then not move or reorder a terminal. */

const SHORT_ESCAPES: ReadonlyMap<string, string> = new Map([
  ["\b", "\\b"],
  ["\t", "\\t"],
  ["\n", "\\n"],
  ["\f", "\\f"],
  ["\r", "\\r"],
]);

/** C0, DEL, C1, U+2028/9 and the bidi controls (`\u202e` shows `exe.txt` as `txt.exe`). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/** DEL, the C1 controls, U+2028/9 and the bidi controls: JSON does not escape them. */
const BEYOND_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

const escaped = (char: string): string =>
  SHORT_ESCAPES.get(char) ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`;

/** `text` with every control character escaped as JSON escapes it, and nothing else changed. */
export function escapeControls(text: string): string {
  return text.replace(CONTROLS, escaped);
}

/** `json` with {@link BEYOND_JSON} escaped: the same JSON (they occur only inside strings). */
export function escapeControlsLeftByJson(json: string): string {
  // every log line comes here: a search finds that there is nothing to do faster than a replace
  return json.search(BEYOND_JSON) === -1 ? json : json.replace(BEYOND_JSON, escaped);
}
