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

const secrets = new Set<string>();

/**
 * Registers a secret value (API key, password, OTP, token): it is replaced by `[REDACTED]`
 * wherever it would appear in a log line or a message passed through {@link scrubSecrets},
 * whatever field carries it. Its Base64 form is registered too (it travels in headers).
 */
export function registerSecret(value: string | undefined): void {
  if (!value || value.length < 4) return;
  secrets.add(value);
  secrets.add(Buffer.from(value).toString("base64"));
}

/** `text` with every registered secret replaced by `[REDACTED]`. */
export function scrubSecrets(text: string): string {
  let out = text;
  for (const secret of secrets) {
    if (out.includes(secret)) out = out.split(secret).join("[REDACTED]");
    const escaped = JSON.stringify(secret).slice(1, -1);
    if (escaped !== secret && out.includes(escaped)) out = out.split(escaped).join("[REDACTED]");
  }
  return out;
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
      redact: { paths: REDACTED_PATHS, censor: "[REDACTED]" },
      formatters: { level: (label) => ({ level: label }) },
      hooks: { streamWrite: scrubSecrets },
    },
    destination,
  );
}
