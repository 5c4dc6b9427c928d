import { durationMs } from "../util/iso-duration.js";
import { ConfigError } from "./load.js";
import { type Config, SETTINGS } from "./schema.js";

/** Every secret of a configuration, for redaction; the Basic credential `user:password` as one. */
export function configSecrets(config: Config): string[] {
  const { key, user, password } = config.api;
  const credential = password === "" ? "" : `${user}:${password}`;
  const influx = config.influx;
  const influxCredential = influx.password === "" ? "" : `${influx.username}:${influx.password}`;
  return [key, password, credential, influx.token, influx.password, influxCredential].filter(
    (s) => s !== "",
  );
}

/** The settings the API needs to be reached at all. */
const CONNECTION = ["url", "key", "user", "password"] as const;

/** The API connection settings, or a ConfigError naming each one that is missing. */
export function requireApi(config: Config): Pick<Config["api"], (typeof CONNECTION)[number]> {
  const missing = SETTINGS.filter((s) =>
    CONNECTION.some((key) => s.name === `api.${key}` && config.api[key] === ""),
  );
  if (missing.length > 0) {
    const named = missing.map((s) => `${s.env} (${s.name}${s.flag ? `, ${s.flag}` : ""})`);
    throw new ConfigError(`not configured: ${named.join(", ")}`);
  }
  const { url, key, user, password } = config.api;
  return { url, key, user, password };
}

/** What the API client needs from the configuration (connection settings required). */
export function apiClientSettings(config: Config) {
  const api = requireApi(config);
  return {
    baseUrl: api.url,
    apiKey: api.key,
    user: api.user,
    password: api.password,
    timeoutMs: config.api.timeoutMs,
    dataLimits: {
      maxRecordBytes: config.api.maxRecordBytes,
      maxAnswerBytes: config.api.maxAnswerBytes,
    },
    deadlineMs: config.api.deadlineMs,
    retryAfterMaxMs: durationMs(config.api.retryAfterMax),
    retry: {
      retries: config.api.retries,
      baseDelayMs: config.api.retryBaseDelayMs,
      maxDelayMs: config.api.retryMaxDelayMs,
    },
  };
}
