import { z } from "zod";
import { messageOf } from "../util/errors.js";
import { readTextFile, textProblem } from "../util/input-text.js";
import { nestsDeeperThan } from "../util/json-bytes.js";
import { fileValueProblem, prototypeKey } from "./raw-values.js";
import { type Config, configSchema, SETTINGS } from "./schema.js";
import type { Setting } from "./setting.js";

/** A configuration that cannot be used; the message names the setting, never a secret's value. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/** Variables or flag values by environment name; an empty one counts as unset. */
type Values = Readonly<Record<string, string | undefined>>;

/** The raw inputs of {@link loadConfig}. */
export interface ConfigSources {
  /** Values of CLI flags, keyed by the setting's environment name. */
  readonly flags?: Values;
  readonly env?: Values;
  /** The variables of an env file (`./.env`, `--env-path FILE`), and how messages name it. */
  readonly envFile?: { readonly name: string; readonly values: Values };
  /** Path of a JSON config file (`--config FILE`, or the file CONFIG_FILE names). */
  readonly file?: string;
  /** Where `file` was named when not by `--config` (`environment CONFIG_FILE`), for messages. */
  readonly fileFrom?: string;
}

/** A validated configuration and where each setting came from. */
export interface ResolvedConfig {
  readonly config: Config;
  /** By `section.key`, the source of each setting not at its default (`flag --api-url`). */
  readonly origins: ReadonlyMap<string, string>;
}

type RawConfig = Record<string, Record<string, unknown>>;

/** The most bytes a config file (`--config FILE`) may have: room for a site map of ~20,000. */
export const MAX_CONFIG_FILE_BYTES = 4 * 1024 * 1024;
/** The deepest a config file may nest (`sites` → device → field is 3). */
export const MAX_CONFIG_DEPTH = 16;

/** The config file at `path`, named `file` in messages (with where its name came from). */
function readConfigFile(path: string, file: string): RawConfig {
  const read = readTextFile(path, MAX_CONFIG_FILE_BYTES);
  if ("problem" in read) throw new ConfigError(`config file ${file}: ${read.problem}`);
  const { text } = read;
  if (nestsDeeperThan(text, MAX_CONFIG_DEPTH)) {
    throw new ConfigError(
      `config file ${file}: nests more than ${MAX_CONFIG_DEPTH} levels deep (a config file has 3)`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`config file ${file}: not valid JSON (${messageOf(error)})`);
  }
  const proto = prototypeKey(json);
  if (proto !== undefined) {
    throw new ConfigError(
      `config file ${file}: "${proto}" is not a setting (a key that names an object's prototype)`,
    );
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

/** Flags over environment over env file over config file over defaults; a ConfigError names. */
export function loadConfig(sources: ConfigSources = {}): Config {
  return resolveConfig(sources).config;
}

/** {@link loadConfig}, with where each setting came from. */
export function resolveConfig(sources: ConfigSources = {}): ResolvedConfig {
  const { file, fileFrom } = sources;
  const named = fileFrom === undefined ? file : `${file} (named by ${fileFrom})`;
  const raw: RawConfig = file && named ? readConfigFile(file, named) : {};
  const origin = new Map<string, string>();
  for (const [section, values] of Object.entries(raw)) {
    for (const [key, value] of Object.entries(values)) {
      const from = `config file ${named}`;
      origin.set(`${section}.${key}`, from);
      const setting = SETTINGS.find((s) => s.name === `${section}.${key}`);
      if (!setting) continue;
      const problem =
        fileValueProblem(setting, value) ??
        (typeof value === "string" ? textProblem(value) : undefined);
      if (problem) throw invalid([settingProblem(setting, from, problem)]);
    }
  }
  const layers: [Values | undefined, (s: Setting) => string][] = [
    [sources.envFile?.values, () => `.env file ${sources.envFile?.name}`],
    [sources.env, (s) => `environment ${s.env}`],
    [sources.flags, (s) => `flag ${s.flag ?? s.env}`],
  ];
  for (const [layer, describe] of layers) {
    if (!layer) continue;
    for (const setting of SETTINGS) {
      const value = layer[setting.env];
      if (value === undefined) continue;
      // an empty variable is unset (compose passes every one); an empty flag was typed so
      const problem =
        value === ""
          ? layer === sources.flags
            ? "must not be empty (leave the flag out for the default)"
            : undefined
          : textProblem(value);
      if (problem) throw invalid([settingProblem(setting, describe(setting), problem)]);
      if (value === "") continue;
      const [section, key] = setting.path;
      raw[section] = { ...raw[section], [key]: value };
      origin.set(setting.name, describe(setting));
    }
  }
  const parsed = configSchema.safeParse(raw);
  if (parsed.success) return { config: parsed.data, origins: origin };
  throw invalid(parsed.error.issues.map((i) => describeIssue(i, origin)));
}

/** The error of an invalid configuration: one line, or a line per problem below a heading. */
function invalid(problems: readonly string[]): ConfigError {
  if (problems.length === 1) return new ConfigError(`invalid configuration: ${problems[0]}`);
  return new ConfigError(
    `invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join("\n")}`,
  );
}

/** `SYNC_CRON (sync.cron, from environment SYNC_CRON): <problem>`. */
function settingProblem(setting: Setting, from: string, problem: string): string {
  return `${setting.env} (${setting.name}, from ${from}): ${problem}`;
}

function describeIssue(issue: z.core.$ZodIssue, origin: Map<string, string>): string {
  if (issue.path[0] === "sites") return siteIssue(issue, origin);
  const name = issue.path.slice(0, 2).join(".");
  if (issue.code === "unrecognized_keys") {
    const where = name === "" ? "" : `${name}.`;
    return `unknown setting ${issue.keys.map((k) => `${where}${k}`).join(", ")} (see config/default.json)`;
  }
  const setting = SETTINGS.find((s) => s.name === name);
  if (!setting) return `${name || "(root)"}: ${issue.message}`;
  return settingProblem(setting, origin.get(name) ?? "default", issue.message);
}

/** `site "hybrid-site-01" (sites, from config file x.json): kwp must be above 0 kWp`. */
function siteIssue(issue: z.core.$ZodIssue, origin: Map<string, string>): string {
  const [, device, field] = issue.path;
  const from = [...origin.entries()].find(([name]) => name.startsWith("sites."))?.[1];
  const where = `(sites, from ${from ?? "default"})`;
  if (device === undefined) return `sites ${where}: ${issue.message}`;
  const site = `site ${JSON.stringify(String(device))} ${where}`;
  // a device id (a key of the map) refused: its own check's message
  if (issue.code === "invalid_key") return `${site}: ${issue.issues[0]?.message ?? issue.message}`;
  if (issue.code === "unrecognized_keys") {
    return `${site}: unknown key ${issue.keys.join(", ")} (a site has kwp, name and group)`;
  }
  if (field === undefined) return `${site}: ${issue.message}`;
  return `${site}: ${String(field)} ${issue.message}`;
}
