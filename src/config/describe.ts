import { z } from "zod";
import type { ResolvedConfig } from "./load.js";
import { type Config, configSchema, SETTINGS } from "./schema.js";
import type { Setting } from "./setting.js";
import { printValue, type SettingValue, TEXT_BRANCHES } from "./values.js";

/** A setting's value as the config file writes it; a secret that is set as `[set]`. */
function shownValue(config: Config, setting: Setting): string | number | boolean {
  const { sites: _sites, ...rest } = config;
  const sections: Readonly<Record<string, Readonly<Record<string, SettingValue>>>> = rest;
  const [section, key] = setting.path;
  const value = sections[section]?.[key];
  if (value === undefined) throw new Error(`config setting ${setting.name}: no value`);
  if (setting.secret) return value === "" ? "" : "[set]";
  return printValue(value);
}

/** The configuration as JSON in the config file's shape, secrets masked as `[set]`. */
export function describeConfig(config: Config): Record<string, Record<string, unknown>> {
  const shown: Record<string, Record<string, unknown>> = {};
  for (const setting of SETTINGS) {
    const [section, key] = setting.path;
    shown[section] = { ...shown[section], [key]: shownValue(config, setting) };
  }
  shown.sites = { ...config.sites };
  return shown;
}

/** One setting as `config --sources` shows it: its value as printed (secrets masked) and source. */
export interface SettingSource {
  readonly setting: string;
  readonly path: string;
  readonly value: string;
  readonly from: string;
}

/** Every setting, in order, with its value and where it came from. */
export function describeSources({ config, origins }: ResolvedConfig): SettingSource[] {
  return SETTINGS.map((setting) => {
    const value = shownValue(config, setting);
    return {
      setting: setting.env,
      path: setting.name,
      value: typeof value === "string" ? value : JSON.stringify(value),
      from: origins.get(setting.name) ?? "default",
    };
  });
}

type JsonSchemaNode = Parameters<NonNullable<z.core.ToJSONSchemaParams["override"]>>[0];

/** A union's JSON Schema without its {@link TEXT_BRANCHES}: a config file's 4 is no `"4"`. */
function withoutTextBranches({ zodSchema, jsonSchema }: JsonSchemaNode): void {
  if (!(zodSchema instanceof z.ZodUnion)) return;
  const text: boolean[] = zodSchema.options.map((option: object) => TEXT_BRANCHES.has(option));
  if (!text.includes(true)) return;
  if (Array.isArray(jsonSchema.type)) {
    const kept = jsonSchema.type.filter((type) => type !== "string");
    jsonSchema.type = kept.length === 1 ? kept[0] : kept;
  } else if (jsonSchema.anyOf) {
    const kept = jsonSchema.anyOf.filter((_, i) => !text[i]);
    delete jsonSchema.anyOf;
    if (kept.length === 1) Object.assign(jsonSchema, kept[0]);
    else jsonSchema.anyOf = kept;
  }
}

/** JSON Schema of the config file (config/schema.json), with each setting's description. */
export function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(configSchema, {
    io: "input",
    unrepresentable: "any",
    override: withoutTextBranches,
  });
  const properties = { $schema: { type: "string" }, ...(schema.properties ?? {}) };
  return { ...schema, title: "energy-etl configuration", properties };
}
