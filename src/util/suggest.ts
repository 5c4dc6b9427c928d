/** Edit distance. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current[j] = Math.min(
        (previous[j] ?? 0) + 1,
        (current[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + cost,
      );
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/**
 * What the user may have meant by `word` among `candidates`: a value id whose name (the part after
 * `e_<prefix>_<unit>_<type>_<values_id>_`) is `word`, else up to 3 close spellings.
 */
export function suggest(word: string, candidates: Iterable<string>): string[] {
  const all = [...new Set(candidates)];
  const byName = all.filter((c) => c.endsWith(`_${word}`) && /^e_\d\d_\d\d_\d\d_\d{3}_/.test(c));
  if (byName.length > 0) return byName.slice(0, 3);
  const limit = Math.max(2, Math.floor(word.length / 4));
  return all
    .map((c) => ({ c, d: distance(word.toLowerCase(), c.toLowerCase()) }))
    .filter((x) => x.d <= limit)
    .sort((x, y) => x.d - y.d || x.c.localeCompare(y.c))
    .slice(0, 3)
    .map((x) => x.c);
}

/** " (did you mean a or b?)", or "" when nothing is close. */
export function didYouMean(word: string, candidates: Iterable<string>): string {
  const found = suggest(word, candidates);
  return found.length === 0 ? "" : ` (did you mean ${found.join(" or ")}?)`;
}
