/**
 * energy-etl's configuration: the schema (each setting named once, with its environment
 * variable, flag and meaning), loading with precedence and origins, and what is derived from it.
 */
export { CONFIG_ARTEFACTS, type ConfigArtefact } from "./config/artefacts.js";
export { apiClientSettings, configSecrets, requireApi } from "./config/connection.js";
export {
  configJsonSchema,
  describeConfig,
  describeSources,
  type SettingSource,
} from "./config/describe.js";
export {
  ConfigError,
  type ConfigSources,
  loadConfig,
  type ResolvedConfig,
  resolveConfig,
} from "./config/load.js";
export { type Config, configSchema, LOG_FORMATS, SETTINGS } from "./config/schema.js";
export type { Setting, SettingMeta } from "./config/setting.js";
export { resolveSyncStart, type SyncStart, urlProblem } from "./config/values.js";
