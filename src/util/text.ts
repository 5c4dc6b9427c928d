const EXCERPT_CHARS = 200;

/** The first characters of a text on one line (white space folded), for error messages. */
export function excerpt(text: string): string {
  const oneLine = text.replace(/\s+/g, " ").trim();
  return oneLine.length > EXCERPT_CHARS ? `${oneLine.slice(0, EXCERPT_CHARS)}…` : oneLine;
}
