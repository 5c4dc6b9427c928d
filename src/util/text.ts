/** Longest excerpt of a body or line in messages. */
export const EXCERPT_CHARS = 200;

/** The first characters of a text on one line (white space folded), for error messages. */
export function excerpt(text: string, max = EXCERPT_CHARS): string {
  const oneLine = text.replace(/\s+/g, " ").trim();
  return oneLine.length > max ? `${oneLine.slice(0, max)}…` : oneLine;
}
