/**
 * The bytes of JSON's punctuation, digits and letters the answer scanners compare with. Each takes
 * the ones it uses into consts of its own (`const { QUOTE } = JSON_BYTES`): an imported binding is
 * read from its module cell each time (30-60 % slower in a byte loop on Node 20).
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
