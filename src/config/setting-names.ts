/**
 * How each setting is named outside the config file and what it means, as plain data: `--help`
 * lists the setting flags from here without loading zod. src/config/schema.ts gives each entry
 * its type, bounds and default (`setting(schema, NAMES.api.url)`), and its SETTINGS refuses to
 * load when the two differ, so this is no copy that can drift.
 */

/** How a setting is named outside the config file, and what it means. */
export type SettingMeta = {
  /** Environment variable (also the key of flag values in `ConfigSources.flags`). */
  readonly env: string;
  /** One line for docs/configuration.md (Markdown) and config/schema.json (as plain text). */
  readonly describe: string;
} & (
  | {
      /** Long CLI flag of the program. */
      readonly flag?: `--${string}`;
      readonly secret?: false;
    }
  | {
      /** Masked wherever the configuration is shown; no flag (command lines show in `ps`). */
      readonly secret: true;
      readonly flag?: never;
    }
);

/** The settings of each section of the config file, by key, in the config file's order. */
export type SettingNames = Readonly<Record<string, Readonly<Record<string, SettingMeta>>>>;

/** INFLUX_API: how points are written (`auto`: from the version `/ping` answers). */
export const INFLUX_APIS = ["auto", "v1", "v2"] as const;
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
/** How log lines are written: see {@link Terminal}. */
export const LOG_FORMATS = ["auto", "json", "pretty"] as const;

/** The deadline of an API request or InfluxDB write with its retries, and the longest Retry-After. */
const deadlines = (prefix: "API" | "INFLUX", what: "request" | "write") => ({
  deadlineMs: {
    env: `${prefix}_DEADLINE_MS`,
    describe: `Deadline of one ${what} with all its attempts, retries and waits, in ms`,
  },
  retryAfterMax: {
    env: `${prefix}_RETRY_AFTER_MAX`,
    describe: `Longest Retry-After honoured; a longer one fails the ${what}`,
  },
});

/** Every setting's names and meaning, by section and key (`sites` is no section of settings). */
export const NAMES = {
  api: {
    url: {
      env: "ENERGY_API_URL",
      flag: "--api-url",
      describe: "Base URL of the Energy Monitoring Data API",
    },
    key: {
      env: "ENERGY_API_KEY",
      secret: true,
      describe: "API key (`x-api-key`)",
    },
    user: {
      env: "ENERGY_API_USER",
      flag: "--api-user",
      describe: "API username",
    },
    password: {
      env: "ENERGY_API_PASSWORD",
      secret: true,
      describe: "API password (set with `set-password`)",
    },
    concurrency: {
      env: "API_CONCURRENCY",
      flag: "--api-concurrency",
      describe: "Requests in flight at once (1-64)",
    },
    rateLimit: {
      env: "API_RATE_LIMIT",
      flag: "--api-rate-limit",
      describe: "Requests per second at most",
    },
    timeoutMs: {
      env: "API_TIMEOUT_MS",
      flag: "--api-timeout-ms",
      describe:
        "Timeout of each wait in one HTTP attempt (connecting, sending, the answer's head, each next part of its body), in ms",
    },
    ...deadlines("API", "request"),
    retries: {
      env: "API_RETRIES",
      flag: "--api-retries",
      describe: "Retries of a failed request (5xx, 429, timeouts, resets)",
    },
    retryBaseDelayMs: {
      env: "API_RETRY_BASE_DELAY_MS",
      describe: "First retry delay in ms, doubled per retry, with jitter",
    },
    retryMaxDelayMs: {
      env: "API_RETRY_MAX_DELAY_MS",
      describe:
        "Largest retry delay in ms; a longer Retry-After (up to `API_RETRY_AFTER_MAX`) is still honoured",
    },
    maxRecordBytes: {
      env: "API_MAX_RECORD_BYTES",
      describe: "Longest record of a data answer in bytes; a longer one fails its chunk",
    },
    maxAnswerBytes: {
      env: "API_MAX_ANSWER_BYTES",
      describe: "Largest data answer in bytes; a larger one fails its chunk",
    },
    answerBudgetMb: {
      env: "API_ANSWER_BUDGET_MB",
      describe:
        "Memory the data answers in flight and their writes may hold at once, in MiB (7 days of " +
        "20 values at one minute: about 3.5); a request waits for room ([Memory](operations.md#memory))",
    },
  },
  influx: {
    url: {
      env: "INFLUX_URL",
      flag: "--influx-url",
      describe: "InfluxDB URL; empty: `OUTPUT_FILE` (or `--output`) must say where points go",
    },
    token: {
      env: "INFLUX_TOKEN",
      secret: true,
      describe:
        "InfluxDB API token (2.x, 3, 1.8 with auth; 1.x: INFLUX_USERNAME and INFLUX_PASSWORD)",
    },
    api: {
      env: "INFLUX_API",
      flag: "--influx-api",
      describe:
        "How to write: `v1` (`/write?db=&rp=`, InfluxDB 1.x), `v2` (`/api/v2/write`: 1.8+, 2.x, 3); " +
        "`auto` reads the version from `/ping` (below 1.8: `v1`)",
    },
    username: {
      env: "INFLUX_USERNAME",
      describe: "InfluxDB 1.x user, when its auth is on (with `v1`; empty: no auth)",
    },
    password: {
      env: "INFLUX_PASSWORD",
      secret: true,
      describe: "InfluxDB 1.x user's password",
    },
    org: {
      env: "INFLUX_ORG",
      flag: "--influx-org",
      describe: "InfluxDB organisation",
    },
    bucket: {
      env: "INFLUX_BUCKET",
      flag: "--influx-bucket",
      describe: "InfluxDB bucket (on 1.8: `database` or `database/retention-policy`)",
    },
    batchSize: {
      env: "INFLUX_BATCH_SIZE",
      describe: "Lines per write request",
    },
    timeoutMs: {
      env: "INFLUX_TIMEOUT_MS",
      describe: "Timeout of one write request in ms",
    },
    ...deadlines("INFLUX", "write"),
    retries: {
      env: "INFLUX_RETRIES",
      describe:
        "Retries of a failed write (429, 5xx, network), 1 s doubling to 30 s, never sooner " +
        "than Retry-After",
    },
    gzip: {
      env: "INFLUX_GZIP",
      describe:
        "Gzip write requests: worth it over a slow link to InfluxDB Cloud, a CPU cost on a LAN",
    },
  },
  state: {
    db: {
      env: "STATE_DB",
      flag: "--state-db",
      describe: "SQLite state file",
    },
  },
  sync: {
    cron: {
      env: "SYNC_CRON",
      flag: "--sync-cron",
      describe: "Schedule of incremental syncs (a cron expression)",
    },
    start: {
      env: "SYNC_START",
      flag: "--sync-start",
      describe:
        "Where a device never synced starts; what `--from` takes: an ISO date or date-time " +
        "(`2025-01-01T00:00:00Z`, UTC when no zone is given), `now`, or a time before now " +
        "(`P30D`, `-30d`, `-12h`, `-90m`)",
    },
    lookback: {
      env: "SYNC_LOOKBACK",
      flag: "--sync-lookback",
      describe: "Re-read before the newest record, for corrections",
    },
    lookbackEvery: {
      env: "SYNC_LOOKBACK_EVERY",
      describe:
        "How often a resource's lookback is re-read (ticks in between read from its newest " +
        "record on); `PT0S`: on every tick",
    },
    lateDataHorizon: {
      env: "LATE_DATA_HORIZON",
      flag: "--late-data-horizon",
      describe: "How far back late data is still fetched; a sync never reads further back",
    },
    silentAfter: {
      env: "SILENT_AFTER",
      describe: "A resource without a new record for this long is silent: probed, not fetched",
    },
    probeInterval: {
      env: "SILENT_PROBE_INTERVAL",
      describe: "How often a silent resource is probed (1-2 requests)",
    },
    catalogRefresh: {
      env: "CATALOG_REFRESH",
      flag: "--catalog-refresh",
      describe: "How often the device list, resources and value lists are read again (per device)",
    },
  },
  failures: {
    backoff: {
      env: "FAILURE_BACKOFF",
      describe: "Wait after a failed sync of a resource or attempt of a job; doubles per failure",
    },
    backoffMax: {
      env: "FAILURE_BACKOFF_MAX",
      describe: "Longest wait after a failure",
    },
    parkAfter: {
      env: "PARK_AFTER",
      describe: "Failed attempts after which a job (or a sync window) is parked",
    },
  },
  log: {
    level: {
      env: "LOG_LEVEL",
      flag: "--log-level",
      describe: `pino log level: ${LOG_LEVELS.map((level) => `\`${level}\``).join(", ")}`,
    },
    format: {
      env: "LOG_FORMAT",
      flag: "--log-format",
      describe:
        "Log lines: pretty (pino-pretty) on a terminal and JSON lines otherwise (`auto`), or " +
        "always `json` or `pretty`",
    },
  },
  http: {
    port: {
      env: "HTTP_PORT",
      flag: "--http-port",
      describe: "Port of `/healthz`, `/readyz` and `/metrics`",
    },
    host: {
      env: "HTTP_HOST",
      flag: "--http-host",
      describe:
        "Address of `/healthz`, `/readyz` and `/metrics` (`0.0.0.0`: every interface; the " +
        "image sets it)",
    },
  },
  service: {
    memoryBudgetMb: {
      env: "MEMORY_BUDGET_MB",
      describe:
        "The resident memory energy-etl may use, in MB; beyond it for 15 s a command or the " +
        "service stops with an error that says so (set it below a container's memory limit)",
    },
    shutdownTimeoutMs: {
      env: "SHUTDOWN_TIMEOUT_MS",
      describe:
        "After SIGTERM/SIGINT: how long in-flight work may finish before it is aborted, in ms",
    },
    readyMaxLag: {
      env: "READY_MAX_LAG",
      describe: "`/readyz` fails when a resource that is not silent lags more than this",
    },
    readyFailedSyncs: {
      env: "READY_FAILED_SYNCS",
      describe: "`/readyz` fails after this many failed syncs in a row",
    },
    readyCheckIntervalMs: {
      env: "READY_CHECK_INTERVAL_MS",
      describe: "`/readyz` asks InfluxDB and the API at most this often, in ms (cached between)",
    },
  },
  output: {
    file: {
      env: "OUTPUT_FILE",
      flag: "--output-file",
      describe:
        "Line protocol into this file instead of InfluxDB (writing needs it or `INFLUX_URL`)",
    },
    maxBytes: {
      env: "OUTPUT_FILE_MAX_BYTES",
      describe: "The file is rotated past this size in bytes (`FILE.1`, `FILE.2`, ...)",
    },
    keep: {
      env: "OUTPUT_FILE_KEEP",
      describe: "Rotated files kept",
    },
  },
  rollups: {
    enabled: {
      env: "ROLLUPS",
      describe:
        "Write the hourly and daily rollups of the counters (energy per hour and per day), " +
        "beside the raw points or in `ROLLUP_BUCKET`; false leaves them out (the energy " +
        "panels then stay empty)",
    },
    timeZones: {
      env: "ROLLUP_TIME_ZONES",
      describe:
        "Time zones of the daily rollups, comma-separated IANA names in any case " +
        "(`UTC,Europe/Berlin`), each written as its IANA name once; hourly rollups are UTC " +
        "hours (see [The schema](schema.md#rollups-energy-per-hour-and-per-day))",
    },
    bucket: {
      env: "ROLLUP_BUCKET",
      describe:
        "Where the rollups go: `<database>/<retention policy>` on INFLUX_BUCKET's database " +
        "(`energy/rollups`; InfluxDB 2.x: a bucket of that name, 3: a database); empty: beside " +
        "the raw points (see [Where the rollups live](operations.md#where-the-rollups-live))",
    },
  },
  shard: {
    count: {
      env: "SHARD_COUNT",
      flag: "--shard-count",
      describe:
        "Replicas that split the fleet (see [Sizing and sharding](operations.md#sizing-and-sharding))",
    },
    index: {
      env: "SHARD_INDEX",
      flag: "--shard-index",
      describe: "This replica's shard, `0` to `SHARD_COUNT - 1`",
    },
  },
} satisfies SettingNames;

/** A setting the program takes as a flag: `--api-url <value>` overrides ENERGY_API_URL (api.url). */
export interface SettingFlag {
  readonly flag: `--${string}`;
  readonly env: string;
  /** `section.key`. */
  readonly name: string;
}

/** The settings that have a flag, in order. */
export const SETTING_FLAGS: readonly SettingFlag[] = Object.entries(NAMES).flatMap(
  ([section, settings]) =>
    Object.entries(settings).flatMap(([key, meta]: [string, SettingMeta]) =>
      meta.flag ? [{ flag: meta.flag, env: meta.env, name: `${section}.${key}` }] : [],
    ),
);
