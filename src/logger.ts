import { type DestinationStream, type LevelWithSilent, type Logger, pino } from "pino";

/** Field paths whose values never reach a log line (pino redaction). */
export const REDACTED_PATHS = [
  "authorization",
  "Authorization",
  "password",
  "pw",
  "otp",
  "token",
  "apiKey",
  "api_key",
  "x-api-key",
  "*.authorization",
  "*.Authorization",
  "*.password",
  "*.pw",
  "*.otp",
  "*.token",
  "*.apiKey",
  "*.x-api-key",
  "headers.authorization",
  "headers['x-api-key']",
  "*.headers.authorization",
  "*.headers['x-api-key']",
  "influx.token",
  "api.key",
  "api.password",
];

/** What a secret is replaced by. */
export const CENSOR = "[REDACTED]";

/** Registered secret values; each stands for the forms of {@link secretForms}. */
const secrets = new Set<string>();
/** One RegExp of every form of every secret, longest first; rebuilt after the set changed. */
let pattern: RegExp | undefined;
let stale = false;

const base64 = (s: string): string => Buffer.from(s).toString("base64");
const jsonEscaped = (s: string): string => JSON.stringify(s).slice(1, -1);

/**
 * The forms a secret travels in: clear, Base64 (Basic and one-time-password headers) and
 * Base64url, JSON-escaped up to three times (a JSON body quoted in an error message quoted in
 * a log line), and percent-encoded.
 */
function secretForms(value: string): string[] {
  const forms = new Set<string>();
  for (const form of [value, base64(value), Buffer.from(value).toString("base64url")]) {
    // a JSON body quoted in an error message quoted in a log line: three levels
    for (let level = 0, escaped = form; level <= 3; level++, escaped = jsonEscaped(escaped)) {
      forms.add(escaped);
    }
  }
  try {
    forms.add(encodeURIComponent(value));
  } catch {
    // a lone surrogate has no percent-encoding
  }
  return [...forms];
}

const regExpEscape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

function secretPattern(): RegExp | undefined {
  if (stale) {
    const forms = new Set<string>();
    for (const secret of secrets) for (const form of secretForms(secret)) forms.add(form);
    // longest first: where several forms match at one place, the alternation takes the longest
    const sorted = [...forms].sort((a, b) => b.length - a.length);
    pattern = sorted.length === 0 ? undefined : new RegExp(sorted.map(regExpEscape).join("|"), "g");
    stale = false;
  }
  return pattern;
}

/**
 * Registers a secret value (API key, password, OTP, token, a Basic credential `user:password`):
 * it is replaced by `[REDACTED]` wherever it would appear in a log line or a message passed
 * through {@link scrubSecrets}, whatever field carries it, however short it is, in clear,
 * JSON-escaped, percent-encoded, Base64 or Base64url. Register `user:password` as one value for
 * its Base64 (the Basic header) to be redacted: the Base64 of the whole is not made of the
 * Base64 of its parts.
 */
export function registerSecret(value: string | undefined): void {
  if (!value || secrets.has(value)) return;
  secrets.add(value);
  stale = true;
}

/** Forgets a secret that no longer matters (an expired access token): keeps scrubbing cheap. */
export function forgetSecret(value: string): void {
  if (secrets.delete(value)) stale = true;
}

/**
 * `text` with every form of every registered secret replaced by `[REDACTED]`. Where forms
 * overlap (one holds another, or they share characters), the whole stretch they cover is
 * replaced. Runs on every log line: one pass of one RegExp when nothing matches.
 */
export function scrubSecrets(text: string): string {
  const re = secretPattern();
  if (!re) return text;
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
 * {@link scrubSecrets}, then cut to at most `maxChars` characters (the last one `…` when cut),
 * for text that is kept (errors stored in the state DB). Scrubbed before it is cut, so a
 * secret cut in half is redacted all the same.
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
 * field and by value.
 */
export function createLogger(
  level: LevelWithSilent,
  destination: DestinationStream = pino.destination({ fd: 2, sync: true }),
  bindings: Record<string, unknown> = {},
): Logger {
  return pino(
    {
      level,
      base: { app: "energy-etl", ...bindings },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACTED_PATHS, censor: CENSOR },
      formatters: { level: (label) => ({ level: label }) },
      hooks: { streamWrite: scrubSecrets },
    },
    destination,
  );
}
