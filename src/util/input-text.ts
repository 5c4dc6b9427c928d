/**
 * What no text a user gives may hold: a control character. A line break or a tab in a token, a
 * path or a URL is a paste gone wrong that a header refuses, a URL parser drops, a path keeps.
 */

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/** What is wrong with `value` as a user's text, or undefined. Never repeats the value. */
export function textProblem(value: string): string | undefined {
  return CONTROL.test(value)
    ? "holds a control character (a line break, a tab or the like); the value is not shown"
    : undefined;
}
