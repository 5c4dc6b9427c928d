import { type DestinationStream, type LevelWithSilent, type Logger, pino } from "pino";
import { escapeControlsLeftByJson } from "./util/control-chars.js";

const SECRET_FIELDS = ["authorization", "Authorization", "password", "pw", "otp", "token"];

/** Field paths whose values never reach a log line (pino redaction). */
const REDACTED_PATHS = [
  // each secret field at the top and one level down
  ...[...SECRET_FIELDS, "apiKey", "x-api-key"].flatMap((field) => [field, `*.${field}`]),
  "api_key",
  ...["headers", "*.headers"].flatMap((h) => [`${h}.authorization`, `${h}['x-api-key']`]),
  "influx.token",
  "api.key",
  "api.password",
];

/** What a secret is replaced by. */
export const CENSOR = "[REDACTED]";

/**
 * Secrets shorter than this (in characters) are replaced only where they stand whole: found in
 * every other word (`com[REDACTED]onent`), they would both mangle the text and tell the secret.
 */
const MIN_EMBEDDED_SECRET_CHARS = 8;

const secrets = new Set<string>();
/** The RegExps of every registered secret; undefined when stale. */
let patterns: { embedded?: RegExp; whole?: RegExp } | undefined;

const base64 = (s: string): string => Buffer.from(s).toString("base64");
const jsonEscaped = (s: string): string => JSON.stringify(s).slice(1, -1);
const isShort = (s: string): boolean => [...s].length < MIN_EMBEDDED_SECRET_CHARS;

/** `text`, then JSON-escaped once, twice and three times (a JSON body quoted in a message). */
function escapeLevels(text: string): string[] {
  const levels = [text];
  for (let level = 1, escaped = text; level <= 3; level++) {
    escaped = jsonEscaped(escaped);
    levels.push(escaped);
  }
  return levels;
}

/** The secret in clear, as Base64 (Basic and one-time-password headers) and as Base64url. */
const encodings = (value: string): string[] => [
  value,
  base64(value),
  Buffer.from(value).toString("base64url"),
];

/** The secret percent-encoded, if it has a percent-encoding (a lone surrogate has none). */
function percentEncoded(value: string): string[] {
  try {
    return [encodeURIComponent(value)];
  } catch {
    return [];
  }
}

/** The forms a secret travels in: its encodings, each JSON-escaped, and percent-encoded. */
function secretForms(value: string): string[] {
  const forms = encodings(value).flatMap(escapeLevels);
  return [...new Set([...forms, ...percentEncoded(value)])];
}

const regExpEscape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/** One alternation of `forms`, longest first: where several match at a place, the longest wins. */
const alternation = (forms: Iterable<string>): string =>
  `(?:${[...new Set(forms)]
    .sort((a, b) => b.length - a.length)
    .map(regExpEscape)
    .join("|")})`;

/** `word` in any case, as a RegExp source. */
const anyCase = (word: string): string =>
  [...word]
    .map((c) =>
      c.toLowerCase() === c.toUpperCase()
        ? regExpEscape(c)
        : `[${c.toLowerCase()}${c.toUpperCase()}]`,
    )
    .join("");

/** Names a secret value follows: headers, fields, query parameters (`pw` in `new_pw` too). */
const SECRET_NAMES = `(?:${[
  ...["authorization", "api-key", "api_key", "apikey"],
  ...["password", "passwd", "pw", "otp", "token", "secret"],
]
  .map(anyCase)
  .join("|")})`;
/** The scheme of an Authorization header, before its credential. */
const SCHEME = `(?:${["Basic", "Bearer", "Token"].map(anyCase).join("|")})`;
/** The logger's own fields, left alone: redacted, a well-known value would tell the secret. */
const OWN_FIELDS = '(?<!"(?:level|time|app|pid|hostname)":)';

/** A character that may stand in a Base64 or Base64url text: none may touch a Base64 token. */
const BASE64_CHAR = "[A-Za-z0-9+/=_-]";
/** What may come before a Base64 token: not a Base64 character; a JSON-escaped control; `%20`. */
const BEFORE_TOKEN = `(?:^|[^A-Za-z0-9+/_-]|\\\\+[nrtbf]|%20)`;

/**
 * Where the Base64 forms of short secrets (`base64`) are redacted besides where the secret stands
 * whole: after a scheme (`Bearer MTIzNDU2`), and anywhere as a whole token when the form is long
 * enough to tell nothing and mangle nothing ({@link MIN_EMBEDDED_SECRET_CHARS}: `YWw6YQ==`).
 */
function base64Patterns(base64: readonly string[]): string[] {
  const end = `(?!${BASE64_CHAR})`;
  const withPercent = (forms: string[]) => [...forms, ...forms.flatMap(percentEncoded)];
  const schemed = `(${SCHEME}(?:\\s+|%20))${alternation(withPercent([...base64]))}${end}`;
  const long = base64.filter((form) => !isShort(form));
  if (long.length === 0) return [schemed];
  return [schemed, `(${BEFORE_TOKEN})${alternation(withPercent(long))}${end}`];
}

/**
 * Where short secrets (`byLevel[n]`: JSON-escaped n times) stand whole: a JSON string value (not a
 * key), the value after a secret's name (`password=…`), a URL's password, an HTML element's text
 * (`<td>…</td>`), the whole text; their Base64 forms also where {@link base64Patterns} finds them.
 * Each alternative captures what comes before (a lookbehind at every character costs six times as
 * much).
 */
function wholeValuePattern(
  byLevel: readonly string[][],
  forms: readonly string[],
  base64: readonly string[],
): RegExp {
  const quotes = escapeLevels('"');
  const jsonValues = byLevel.map((levelForms, level) => {
    const quote = regExpEscape(quotes[level] ?? '"');
    const own = level === 0 ? OWN_FIELDS : "";
    return `(${own}${quote}(?:${SCHEME} )?)${alternation(levelForms)}(?=${quote}(?!\\s*:))`;
  });
  const all = alternation(forms);
  // optional quotes (JSON-escaped or not) around the separator; the value ends at a delimiter
  const quote = `(?:\\\\*["'])?`;
  const name = `${SECRET_NAMES}${quote}\\s*[:=]\\s*${quote}(?:${SCHEME}\\s+)?`;
  const named = `(${name})${all}(?=$|[\\s"'&,;)}\\]\\\\#])`;
  const urlPassword = `(://[^\\s/?#@:]*:)${all}(?=@)`;
  const htmlCell = `(>)${all}(?=<)`;
  const whole = `^()${all}$`;
  const alternatives = [...jsonValues, named, urlPassword, htmlCell, whole];
  return new RegExp([...alternatives, ...base64Patterns(base64)].join("|"), "g");
}

/** What matched `wholeValuePattern` with the secret replaced: the captured context, then CENSOR. */
function censorWhole(_match: string, ...groups: unknown[]): string {
  // the one capture that took part (the others are undefined), before the offset and the input
  const before = groups.find((group) => typeof group === "string");
  return `${typeof before === "string" ? before : ""}${CENSOR}`;
}

/** The RegExps of the registered secrets: `embedded` for the long ones, `whole` the short ones. */
function secretPatterns(): { embedded?: RegExp; whole?: RegExp } {
  if (patterns !== undefined) return patterns;
  const long = [...secrets].filter((s) => !isShort(s));
  const short = [...secrets].filter(isShort);
  const byLevel: string[][] = [[], [], [], []];
  for (const secret of short) {
    for (const encoded of encodings(secret)) {
      for (const [level, form] of escapeLevels(encoded).entries()) byLevel[level]?.push(form);
    }
  }
  const shortForms = [...byLevel.flat(), ...short.flatMap(percentEncoded)];
  const base64Forms = short.flatMap((secret) => encodings(secret).slice(1));
  patterns = {
    embedded:
      long.length === 0 ? undefined : new RegExp(alternation(long.flatMap(secretForms)), "g"),
    whole: short.length === 0 ? undefined : wholeValuePattern(byLevel, shortForms, base64Forms),
  };
  return patterns;
}

/**
 * Registers a secret, replaced by `[REDACTED]` in any of its forms in log lines and by
 * {@link scrubSecrets} (a short one only where it stands whole, its Base64 forms also after a
 * scheme and as whole tokens: see {@link base64Patterns}); a Basic credential
 * `user:password` as one (the Base64 of the whole is not made of the Base64 of its parts).
 */
export function registerSecret(value: string | undefined): void {
  if (!value || secrets.has(value)) return;
  secrets.add(value);
  patterns = undefined;
}

/** Forgets a secret that no longer matters (an expired access token): keeps scrubbing cheap. */
export function forgetSecret(value: string): void {
  if (secrets.delete(value)) patterns = undefined;
}

/**
 * `text` with every registered secret replaced by `[REDACTED]`; where secrets overlap, the whole
 * stretch they cover. Runs on every log line: a RegExp or two when nothing matches.
 */
export function scrubSecrets(text: string): string {
  const { embedded, whole } = secretPatterns();
  const scrubbed = embedded === undefined ? text : scrubEmbedded(text, embedded);
  return whole === undefined ? scrubbed : scrubbed.replace(whole, censorWhole);
}

/** `text` with each stretch that matches of `re` (a global RegExp) replaced, overlaps merged. */
function scrubEmbedded(text: string, re: RegExp): string {
  re.lastIndex = 0;
  let match = re.exec(text);
  if (match === null) return text;
  let out = "";
  let copied = 0;
  let start = match.index;
  let end = start + match[0].length;
  for (;;) {
    // the next match may start inside this one: look from the next character on
    re.lastIndex = match.index + 1;
    match = re.exec(text);
    if (match !== null && match.index <= end) {
      end = Math.max(end, match.index + match[0].length);
      continue;
    }
    out += text.slice(copied, start) + CENSOR;
    copied = end;
    if (match === null) break;
    start = match.index;
    end = start + match[0].length;
  }
  return out + text.slice(copied);
}

/**
 * {@link scrubSecrets}, then cut to `maxChars` (ending `…`): a secret cut in half stays redacted.
 */
export function scrubText(text: string, maxChars: number): string {
  const scrubbed = scrubSecrets(text);
  if (scrubbed.length <= maxChars) return scrubbed;
  if (maxChars < 1) return "";
  let cut = maxChars - 1;
  // never leave half of a surrogate pair
  const last = scrubbed.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut--;
  return `${scrubbed.slice(0, cut)}…`;
}

/**
 * The structured logger: JSON lines on stderr (stdout is for command output), secrets redacted by
 * field and by value, no control character in a line.
 */
export function createLogger(
  level: LevelWithSilent,
  destination: DestinationStream = pino.destination({ fd: 2, sync: true }),
): Logger {
  return pino(
    {
      level,
      base: { app: "energy-etl" },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACTED_PATHS, censor: CENSOR },
      formatters: { level: (label) => ({ level: label }) },
      hooks: { streamWrite: (line) => escapeControlsLeftByJson(scrubSecrets(line)) },
    },
    destination,
  );
}
