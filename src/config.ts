import { readFileSync } from "node:fs";
import cron from "node-cron";
import { z } from "zod";
import {
  durationMs,
  formatIsoDuration,
  parseIsoDuration,
  subtractDuration,
} from "./util/iso-duration.js";
import { parseTimeSpec, TIME_SPEC_FORMS, type TimeSpec } from "./util/utc-time.js";

/** Where a device without a watermark starts: a fixed instant, or a duration back from now. */
export type SyncStart = TimeSpec;

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
/** How log lines are written: see {@link Terminal}. */
export const LOG_FORMATS = ["auto", "json", "pretty"] as const;

const int = (min: number, max: number) =>
  z
    .union([
      z.number(),
      z
        .string()
        .trim()
        .regex(/^-?\d+$/, "must be a whole number"),
    ])
    .transform(Number)
    .pipe(z.number().int("must be a whole number").min(min).max(max));

const positiveNumber = (max: number) =>
  z
    .union([
      z.number(),
      z
        .string()
        .trim()
        .regex(/^\d+(\.\d+)?$/, "must be a positive number"),
    ])
    .transform(Number)
    .pipe(z.number().positive().max(max));

const TRUE_WORDS = ["true", "1", "yes"];
const FALSE_WORDS = ["false", "0", "no"];
const bool = z.union([z.boolean(), z.string()]).transform((value, ctx) => {
  if (typeof value === "boolean") return value;
  const word = value.trim().toLowerCase();
  if (TRUE_WORDS.includes(word)) return true;
  if (!FALSE_WORDS.includes(word))
    ctx.addIssue({ code: "custom", message: "must be true or false" });
  return false;
});

/** `text` as a URL when it parses, else undefined. */
function parseUrl(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

/**
 * An http(s) URL, or "" (unset). One message per problem, never with the value itself (it may be
 * a secret set in the wrong variable). A URL with credentials (`https://user:pass@host`) is
 * refused, `credentials` saying where they belong: they would be printed and logged with the
 * URL, and a client would send them instead of its own Authorization header.
 */
const optionalUrl = (credentials: string) =>
  z
    .string()
    .trim()
    .superRefine((s, ctx) => {
      if (s === "") return;
      const problem = urlProblem(s, credentials);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    });

/**
 * What is wrong with `text` as an http(s) URL without credentials, or undefined; never repeats
 * the value. `credentials` says where a user and password belong instead.
 */
export function urlProblem(text: string, credentials: string): string | undefined {
  const url = /^https?:\/\/[^\s/]/i.test(text) ? parseUrl(text) : undefined;
  if (!url) {
    const hint = !/^[a-z][a-z\d+.-]*:\/\//i.test(text)
      ? "http:// or https:// is missing in front"
      : /^https?:/i.test(text)
        ? "not a valid URL"
        : "only http and https are supported";
    return `must be an http(s) URL such as http://host:port (${hint})`;
  }
  if (url.username !== "" || url.password !== "") {
    return `must not hold credentials (${url.protocol}//***@${url.host}): ${credentials}`;
  }
  return undefined;
}

const isoDuration = z.string().transform((s, ctx) => {
  const parsed = parseIsoDuration(s);
  if (!parsed) {
    ctx.addIssue({ code: "custom", message: "must be an ISO 8601 duration such as PT1H or P7D" });
    return z.NEVER;
  }
  return parsed;
});

/** SYNC_START: the grammar of `--from` ({@link parseTimeSpec}). */
const syncStart = z.string().transform((s, ctx): SyncStart => {
  const spec = parseTimeSpec(s);
  if (spec) return spec;
  ctx.addIssue({ code: "custom", message: `must be ${TIME_SPEC_FORMS}` });
  return z.NEVER;
});

const cronExpression = z
  .string()
  .trim()
  .refine((s) => cron.validate(s), "must be a cron expression such as */5 * * * *");

/** The one schema of energy-etl's configuration; every default is here (and in config/default.json). */
export const configSchema = z
  .object({
    api: z
      .object({
        url: optionalUrl(
          "put them into ENERGY_API_USER and ENERGY_API_PASSWORD (and the key into ENERGY_API_KEY)",
        )
          .default("")
          .describe("Base URL of the Energy Monitoring Data API"),
        key: z.string().default("").describe("API key (x-api-key); secret"),
        user: z.string().default("").describe("API username"),
        password: z.string().default("").describe("API password (set with set-password); secret"),
        concurrency: int(1, 64).default(4).describe("Requests in flight at once"),
        rateLimit: positiveNumber(1000).default(5).describe("Requests per second at most"),
        timeoutMs: int(100, 600_000)
          .default(30_000)
          .describe(
            "Timeout of one HTTP attempt: the wait for an answer and for each next part of it, in ms",
          ),
        deadlineMs: int(1000, 86_400_000)
          .default(900_000)
          .describe("Deadline of one request with all its attempts, retries and waits, in ms"),
        retryAfterMax: isoDuration
          .prefault("PT10M")
          .describe("Longest Retry-After honoured; a longer one fails the request"),
        retries: int(0, 20).default(5).describe("Retries of a failed request (5xx, 429, network)"),
        retryBaseDelayMs: int(1, 600_000)
          .default(500)
          .describe("First retry delay in ms, doubled per retry"),
        retryMaxDelayMs: int(1, 3_600_000).default(30_000).describe("Largest retry delay in ms"),
        maxRecordBytes: int(1024, 1024 * 1024 * 1024)
          .default(1024 * 1024)
          .describe("Longest record of a data answer; a longer one fails its chunk"),
        maxAnswerBytes: int(1024, 64 * 1024 * 1024 * 1024)
          .default(512 * 1024 * 1024)
          .describe("Largest data answer in bytes; a larger one fails its chunk"),
      })
      .strict()
      .prefault({}),
    influx: z
      .object({
        url: optionalUrl("put the token into INFLUX_TOKEN")
          .default("")
          .describe("InfluxDB URL; empty: OUTPUT_FILE (or --output) must say where points go"),
        token: z.string().default("").describe("InfluxDB API token; secret"),
        org: z.string().default("").describe("InfluxDB organisation"),
        bucket: z
          .string()
          .min(1)
          .default("energy")
          .describe("InfluxDB bucket (database[/rp] on 1.8)"),
        batchSize: int(1, 100_000).default(5000).describe("Lines per write request"),
        timeoutMs: int(100, 600_000).default(30_000).describe("Timeout of one write request in ms"),
        deadlineMs: int(1000, 86_400_000)
          .default(900_000)
          .describe("Deadline of one write with all its attempts, retries and waits, in ms"),
        retryAfterMax: isoDuration
          .prefault("PT10M")
          .describe("Longest Retry-After honoured; a longer one fails the write"),
        retries: int(0, 20).default(5).describe("Retries of a failed write (429, 5xx, network)"),
        gzip: bool.default(false).describe("Gzip write requests (saves bandwidth, costs CPU)"),
      })
      .strict()
      .prefault({}),
    state: z
      .object({ db: z.string().min(1).default("./data/state.db").describe("SQLite state file") })
      .strict()
      .prefault({}),
    sync: z
      .object({
        cron: cronExpression.default("*/5 * * * *").describe("Schedule of incremental syncs"),
        start: syncStart.prefault("P7D").describe("Start of a device without a watermark"),
        lookback: isoDuration
          .prefault("PT1H")
          .describe("Re-read before the newest record, for corrections"),
        lateDataHorizon: isoDuration
          .prefault("P30D")
          .describe("How far back late data is still fetched; a sync never reads further back"),
        silentAfter: isoDuration
          .prefault("PT6H")
          .describe("A resource without a new record for this long is silent: probed, not fetched"),
        probeInterval: isoDuration
          .prefault("PT1H")
          .describe("How often a silent resource is probed (1-2 requests)"),
        catalogRefresh: isoDuration
          .prefault("PT1H")
          .describe(
            "How often the device list, resources and value lists are read again (per device)",
          ),
      })
      .strict()
      .prefault({}),
    failures: z
      .object({
        backoff: isoDuration
          .prefault("PT1M")
          .describe(
            "Wait after a failed sync of a resource or attempt of a job; doubles per failure",
          ),
        backoffMax: isoDuration.prefault("PT30M").describe("Longest wait after a failure"),
        parkAfter: int(1, 1000)
          .default(8)
          .describe("Failed attempts after which a job (or a sync window) is parked"),
      })
      .strict()
      .prefault({}),
    log: z
      .object({
        level: z.enum(LOG_LEVELS).default("info").describe("pino log level"),
        format: z
          .enum(LOG_FORMATS)
          .default("auto")
          .describe(
            "log lines: pretty on a terminal and JSON otherwise (auto), or always json / pretty",
          ),
      })
      .strict()
      .prefault({}),
    http: z
      .object({
        port: int(0, 65_535).default(8080).describe("Port of /healthz, /readyz, /metrics"),
        host: z
          .string()
          .trim()
          .min(1)
          .default("127.0.0.1")
          .describe("Address of /healthz, /readyz, /metrics (0.0.0.0: every interface)"),
      })
      .strict()
      .prefault({}),
    service: z
      .object({
        shutdownTimeoutMs: int(100, 600_000)
          .default(8000)
          .describe(
            "After SIGTERM/SIGINT: how long in-flight work may finish before it is aborted",
          ),
        readyMaxLag: isoDuration
          .prefault("PT1H")
          .describe("/readyz fails when a resource that is not silent lags more than this"),
        readyFailedSyncs: int(1, 1000)
          .default(3)
          .describe("/readyz fails after this many failed syncs in a row"),
        readyCheckIntervalMs: int(1000, 3_600_000)
          .default(30_000)
          .describe("/readyz asks InfluxDB and the API at most this often (cached between)"),
      })
      .strict()
      .prefault({}),
    output: z
      .object({
        file: z
          .string()
          .default("")
          .describe("Line-protocol file instead of InfluxDB (writing needs it or INFLUX_URL)"),
        maxBytes: int(1024, 1024 * 1024 * 1024 * 1024)
          .default(100 * 1024 * 1024)
          .describe("The file is rotated past this size (FILE.1, FILE.2, ...)"),
        keep: int(0, 1000).default(3).describe("Rotated files kept"),
      })
      .strict()
      .prefault({}),
    shard: z
      .object({
        count: int(1, 1024).default(1).describe("Replicas that split the fleet"),
        index: int(0, 1023).default(0).describe("This replica's shard, 0..count-1"),
      })
      .strict()
      .prefault({}),
  })
  .strict()
  .superRefine((config, ctx) => {
    if (config.shard.index >= config.shard.count) {
      ctx.addIssue({
        code: "custom",
        path: ["shard", "index"],
        message: `must be below SHARD_COUNT (${config.shard.count})`,
      });
    }
  });

/** The validated configuration. */
export type Config = z.output<typeof configSchema>;

/** One setting: where it lives in the config file, its environment variable and CLI flag. */
export interface Setting {
  readonly path: readonly [string, string];
  readonly env: string;
  /** Long CLI flag; secrets have none (command lines are visible to other users). */
  readonly flag?: string;
  readonly secret?: boolean;
}

/** Every setting, in the order of the README's configuration table. */
export const SETTINGS: readonly Setting[] = [
  { path: ["api", "url"], env: "ENERGY_API_URL", flag: "--api-url" },
  { path: ["api", "key"], env: "ENERGY_API_KEY", secret: true },
  { path: ["api", "user"], env: "ENERGY_API_USER", flag: "--api-user" },
  { path: ["api", "password"], env: "ENERGY_API_PASSWORD", secret: true },
  { path: ["api", "concurrency"], env: "API_CONCURRENCY", flag: "--api-concurrency" },
  { path: ["api", "rateLimit"], env: "API_RATE_LIMIT", flag: "--api-rate-limit" },
  { path: ["api", "timeoutMs"], env: "API_TIMEOUT_MS", flag: "--api-timeout-ms" },
  { path: ["api", "retries"], env: "API_RETRIES", flag: "--api-retries" },
  { path: ["api", "retryBaseDelayMs"], env: "API_RETRY_BASE_DELAY_MS" },
  { path: ["api", "retryMaxDelayMs"], env: "API_RETRY_MAX_DELAY_MS" },
  { path: ["api", "deadlineMs"], env: "API_DEADLINE_MS" },
  { path: ["api", "retryAfterMax"], env: "API_RETRY_AFTER_MAX" },
  { path: ["api", "maxRecordBytes"], env: "API_MAX_RECORD_BYTES" },
  { path: ["api", "maxAnswerBytes"], env: "API_MAX_ANSWER_BYTES" },
  { path: ["influx", "url"], env: "INFLUX_URL", flag: "--influx-url" },
  { path: ["influx", "token"], env: "INFLUX_TOKEN", secret: true },
  { path: ["influx", "org"], env: "INFLUX_ORG", flag: "--influx-org" },
  { path: ["influx", "bucket"], env: "INFLUX_BUCKET", flag: "--influx-bucket" },
  { path: ["influx", "batchSize"], env: "INFLUX_BATCH_SIZE" },
  { path: ["influx", "timeoutMs"], env: "INFLUX_TIMEOUT_MS" },
  { path: ["influx", "deadlineMs"], env: "INFLUX_DEADLINE_MS" },
  { path: ["influx", "retryAfterMax"], env: "INFLUX_RETRY_AFTER_MAX" },
  { path: ["influx", "retries"], env: "INFLUX_RETRIES" },
  { path: ["influx", "gzip"], env: "INFLUX_GZIP" },
  { path: ["state", "db"], env: "STATE_DB", flag: "--state-db" },
  { path: ["sync", "cron"], env: "SYNC_CRON", flag: "--sync-cron" },
  { path: ["sync", "start"], env: "SYNC_START", flag: "--sync-start" },
  { path: ["sync", "lookback"], env: "SYNC_LOOKBACK", flag: "--sync-lookback" },
  { path: ["sync", "lateDataHorizon"], env: "LATE_DATA_HORIZON", flag: "--late-data-horizon" },
  { path: ["sync", "silentAfter"], env: "SILENT_AFTER" },
  { path: ["sync", "probeInterval"], env: "SILENT_PROBE_INTERVAL" },
  { path: ["sync", "catalogRefresh"], env: "CATALOG_REFRESH", flag: "--catalog-refresh" },
  { path: ["failures", "backoff"], env: "FAILURE_BACKOFF" },
  { path: ["failures", "backoffMax"], env: "FAILURE_BACKOFF_MAX" },
  { path: ["failures", "parkAfter"], env: "PARK_AFTER" },
  { path: ["log", "level"], env: "LOG_LEVEL", flag: "--log-level" },
  { path: ["log", "format"], env: "LOG_FORMAT", flag: "--log-format" },
  { path: ["http", "port"], env: "HTTP_PORT", flag: "--http-port" },
  { path: ["http", "host"], env: "HTTP_HOST", flag: "--http-host" },
  { path: ["service", "shutdownTimeoutMs"], env: "SHUTDOWN_TIMEOUT_MS" },
  { path: ["service", "readyMaxLag"], env: "READY_MAX_LAG" },
  { path: ["service", "readyFailedSyncs"], env: "READY_FAILED_SYNCS" },
  { path: ["service", "readyCheckIntervalMs"], env: "READY_CHECK_INTERVAL_MS" },
  { path: ["output", "file"], env: "OUTPUT_FILE", flag: "--output-file" },
  { path: ["output", "maxBytes"], env: "OUTPUT_FILE_MAX_BYTES" },
  { path: ["output", "keep"], env: "OUTPUT_FILE_KEEP" },
  { path: ["shard", "count"], env: "SHARD_COUNT", flag: "--shard-count" },
  { path: ["shard", "index"], env: "SHARD_INDEX", flag: "--shard-index" },
];

/** A configuration that cannot be used; the message names the setting, never a secret's value. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/** The raw inputs of {@link loadConfig}. */
export interface ConfigSources {
  /** Values of CLI flags, keyed by the setting's environment name. */
  readonly flags?: Readonly<Record<string, string | undefined>>;
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The variables of an env file (`./.env`, `--env-path FILE`), and how messages name it. */
  readonly envFile?: {
    readonly name: string;
    readonly values: Readonly<Record<string, string | undefined>>;
  };
  /** Path of a JSON config file (`--config FILE`). */
  readonly file?: string;
}

/** A validated configuration and where each setting came from. */
export interface ResolvedConfig {
  readonly config: Config;
  /**
   * The source of each setting not at its default, keyed by `section.key`: `flag --api-url`,
   * `environment SYNC_CRON`, `.env file ./.env`, `config file FILE`.
   */
  readonly origins: ReadonlyMap<string, string>;
}

type RawConfig = Record<string, Record<string, unknown>>;

const settingName = (s: Setting): string => `${s.path[0]}.${s.path[1]}`;

function readConfigFile(file: string): RawConfig {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    const reason =
      error && typeof error === "object" && "code" in error ? String(error.code) : "unreadable";
    throw new ConfigError(`config file ${file}: cannot be read (${reason})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    const reason = error && typeof error === "object" && "message" in error ? error.message : "";
    throw new ConfigError(`config file ${file}: not valid JSON (${String(reason)})`);
  }
  const shape = z.record(z.string(), z.unknown()).safeParse(json);
  if (!shape.success) throw new ConfigError(`config file ${file}: must be a JSON object`);
  const { $schema: _ignored, ...rest } = shape.data;
  const sections = z.record(z.string(), z.record(z.string(), z.unknown())).safeParse(rest);
  if (!sections.success) {
    const key = sections.error.issues[0]?.path[0];
    throw new ConfigError(`config file ${file}: "${String(key)}" must be an object of settings`);
  }
  return sections.data;
}

/**
 * Loads the configuration. Precedence: CLI flags > environment > env file > config file >
 * built-in defaults. Empty variables count as unset. Throws {@link ConfigError} naming the
 * setting and its source.
 */
export function loadConfig(sources: ConfigSources = {}): Config {
  return resolveConfig(sources).config;
}

/** {@link loadConfig}, with where each setting came from. */
export function resolveConfig(sources: ConfigSources = {}): ResolvedConfig {
  const raw: RawConfig = sources.file ? readConfigFile(sources.file) : {};
  const origin = new Map<string, string>();
  if (sources.file) {
    for (const [section, values] of Object.entries(raw)) {
      for (const key of Object.keys(values))
        origin.set(`${section}.${key}`, `config file ${sources.file}`);
    }
  }
  const layers: [
    Readonly<Record<string, string | undefined>> | undefined,
    (s: Setting) => string,
  ][] = [
    [sources.envFile?.values, () => `.env file ${sources.envFile?.name}`],
    [sources.env, (s) => `environment ${s.env}`],
    [sources.flags, (s) => `flag ${s.flag ?? s.env}`],
  ];
  for (const [layer, describe] of layers) {
    if (!layer) continue;
    for (const setting of SETTINGS) {
      const value = layer[setting.env];
      if (value === undefined || value === "") continue;
      const [section, key] = setting.path;
      raw[section] = { ...raw[section], [key]: value };
      origin.set(settingName(setting), describe(setting));
    }
  }
  const parsed = configSchema.safeParse(raw);
  if (parsed.success) return { config: parsed.data, origins: origin };
  throw new ConfigError(
    `invalid configuration:\n${parsed.error.issues.map((i) => `  - ${describeIssue(i, origin)}`).join("\n")}`,
  );
}

function describeIssue(issue: z.core.$ZodIssue, origin: Map<string, string>): string {
  const name = issue.path.slice(0, 2).join(".");
  if (issue.code === "unrecognized_keys") {
    const where = name === "" ? "" : `${name}.`;
    return `unknown setting ${issue.keys.map((k) => `${where}${k}`).join(", ")} (see config/default.json)`;
  }
  const setting = SETTINGS.find((s) => settingName(s) === name);
  if (!setting) return `${name || "(root)"}: ${issue.message}`;
  const from = origin.get(name) ?? "default";
  return `${setting.env} (${name}, from ${from}): ${issue.message}`;
}

/** The instant a device without a watermark starts syncing from. */
export function resolveSyncStart(start: SyncStart, now: Date): Date {
  return start.kind === "at" ? start.at : subtractDuration(now, start.duration);
}

/**
 * Every secret value of a configuration, for redaction: the API key, the API password, the
 * Basic credential `user:password` (as one value: its Base64 is the Authorization header) and
 * the InfluxDB token.
 */
export function configSecrets(config: Config): string[] {
  const { key, user, password } = config.api;
  const credential = password === "" ? "" : `${user}:${password}`;
  return [key, password, credential, config.influx.token].filter((s) => s !== "");
}

/** The API connection settings, or a ConfigError naming each one that is missing. */
export function requireApi(config: Config): {
  url: string;
  key: string;
  user: string;
  password: string;
} {
  const missing = SETTINGS.filter(
    (s) => s.path[0] === "api" && ["url", "key", "user", "password"].includes(s.path[1]),
  ).filter((s) => config.api[s.path[1] as "url" | "key" | "user" | "password"] === "");
  if (missing.length > 0) {
    throw new ConfigError(
      `not configured: ${missing.map((s) => `${s.env} (${settingName(s)}${s.flag ? `, ${s.flag}` : ""})`).join(", ")}`,
    );
  }
  return {
    url: config.api.url,
    key: config.api.key,
    user: config.api.user,
    password: config.api.password,
  };
}

/** JSON Schema of the config file (config/schema.json), with each setting's description. */
export function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(configSchema, { io: "input", unrepresentable: "any" });
  const properties = { $schema: { type: "string" }, ...(schema.properties ?? {}) };
  return { ...schema, title: "energy-etl configuration", properties };
}

/** The configuration as JSON in the config file's shape, secrets masked as `[set]`. */
export function describeConfig(config: Config): Record<string, unknown> {
  const mask = (s: string) => (s === "" ? "" : "[set]");
  const { start } = config.sync;
  return {
    ...config,
    api: {
      ...config.api,
      key: mask(config.api.key),
      password: mask(config.api.password),
      retryAfterMax: formatIsoDuration(config.api.retryAfterMax),
    },
    sync: {
      ...config.sync,
      start: start.kind === "at" ? start.at.toISOString() : formatIsoDuration(start.duration),
      lookback: formatIsoDuration(config.sync.lookback),
      lateDataHorizon: formatIsoDuration(config.sync.lateDataHorizon),
      silentAfter: formatIsoDuration(config.sync.silentAfter),
      probeInterval: formatIsoDuration(config.sync.probeInterval),
      catalogRefresh: formatIsoDuration(config.sync.catalogRefresh),
    },
    influx: {
      ...config.influx,
      token: mask(config.influx.token),
      retryAfterMax: formatIsoDuration(config.influx.retryAfterMax),
    },
    service: { ...config.service, readyMaxLag: formatIsoDuration(config.service.readyMaxLag) },
    failures: {
      ...config.failures,
      backoff: formatIsoDuration(config.failures.backoff),
      backoffMax: formatIsoDuration(config.failures.backoffMax),
    },
  };
}

/** One setting as `config --sources` shows it: its value as printed (secrets masked) and source. */
export interface SettingSource {
  readonly setting: string;
  readonly path: string;
  readonly value: string;
  readonly from: string;
}

/** Every setting of {@link SETTINGS}, in its order, with its value and where it came from. */
export function describeSources({ config, origins }: ResolvedConfig): SettingSource[] {
  const shown = describeConfig(config);
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === "object" && v !== null;
  return SETTINGS.map((setting) => {
    const path = settingName(setting);
    const section = shown[setting.path[0]];
    const value = isObject(section) ? section[setting.path[1]] : undefined;
    return {
      setting: setting.env,
      path,
      value: typeof value === "string" ? value : JSON.stringify(value),
      from: origins.get(path) ?? "default",
    };
  });
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
