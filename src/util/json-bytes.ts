/**
 * JSON's bytes the answer scanners compare with; each copies those it uses into its own consts
 * (an imported binding is read from its module cell each time: 30-60 % slower in a byte loop).
 */
export const JSON_BYTES = {
  QUOTE: 0x22,
  BACKSLASH: 0x5c,
  COMMA: 0x2c,
  COLON: 0x3a,
  OPEN_ARRAY: 0x5b,
  CLOSE_ARRAY: 0x5d,
  OPEN_OBJECT: 0x7b,
  CLOSE_OBJECT: 0x7d,
  MINUS: 0x2d,
  PLUS: 0x2b,
  DOT: 0x2e,
  ZERO: 0x30,
  NINE: 0x39,
  LOWER_E: 0x65,
  UPPER_E: 0x45,
} as const;

/** True when JSON `text` nests deeper than `maxDepth` (checked before a parse that could overflow). */
export function nestsDeeperThan(text: string, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === JSON_BYTES.BACKSLASH) i++;
      else if (c === JSON_BYTES.QUOTE) inString = false;
    } else if (c === JSON_BYTES.QUOTE) inString = true;
    else if (c === JSON_BYTES.OPEN_ARRAY || c === JSON_BYTES.OPEN_OBJECT) {
      if (++depth > maxDepth) return true;
    } else if (c === JSON_BYTES.CLOSE_ARRAY || c === JSON_BYTES.CLOSE_OBJECT) depth--;
  }
  return false;
}
