/** energy-etl's configuration: its schema, its loading, and what is derived from it. */
export { apiClientSettings, configSecrets, requireApi } from "./config/connection.js";
export { configJsonSchema, describeConfig, describeSources } from "./config/describe.js";
export { ConfigError, type ConfigSources, loadConfig, resolveConfig } from "./config/load.js";
export { type Config, configSchema, LOG_FORMATS, SETTINGS } from "./config/schema.js";
export { resolveSyncStart, urlProblem } from "./config/values.js";
