/**
 * The test's own oracle of what must never reach a terminal raw: C0, DEL, C1, U+2028/9 and the
 * bidi controls (U+061C, U+200E/F, U+202A-E, U+2066-9). Written here, not taken from src.
 */
export function isRawControl(code: number): boolean {
  return (
    code < 0x20 ||
    (code >= 0x7f && code <= 0x9f) ||
    [0x061c, 0x200e, 0x200f].includes(code) ||
    (code >= 0x2028 && code <= 0x202e) ||
    (code >= 0x2066 && code <= 0x2069)
  );
}

/** The raw controls in `text` as hex codes, but those `allowed` (a line feed between lines). */
export function controlsIn(text: string, allowed: readonly number[] = []): string[] {
  return [...text]
    .map((c) => c.charCodeAt(0))
    .filter((code) => !allowed.includes(code) && isRawControl(code))
    .map((code) => code.toString(16));
}
