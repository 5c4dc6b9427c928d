const EXCERPT_CHARS = 200;

/** The first characters of a text on one line (white space folded), for error messages. */
export function excerpt(text: string): string {
  const oneLine = text.replace(/\s+/g, " ").trim();
  return oneLine.length > EXCERPT_CHARS ? `${oneLine.slice(0, EXCERPT_CHARS)}…` : oneLine;
}

/** `n` and its noun, singular for one: `1 day`, `2 days`; `plural` when not the noun and an s. */
export function counted(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}
