import { z } from "zod";

/** How a setting is named outside the config file, and what it means. */
export type SettingMeta = {
  /** Environment variable (also the key of flag values in `ConfigSources.flags`). */
  readonly env: string;
  /**
   * One line for docs/configuration.md and config/schema.json; may hold Markdown `code` and
   * [links](page.md), which the JSON Schema gets as plain text.
   */
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

/** One setting: its place in the config file (`section.key`) and its {@link SettingMeta}. */
export type Setting = SettingMeta & {
  readonly path: readonly [string, string];
  /** `section.key`, as messages and `config --sources` name it. */
  readonly name: string;
};

const settings = z.registry<SettingMeta>();

/** The bounds of a value schema, as {@link withBounds} gave them. */
const boundsOf = new WeakMap<z.ZodType, string>();

/**
 * `schema` with its bounds in words (`` `PT1M` to `P7D` ``): a setting made of it shows them
 * after its meaning, in docs/configuration.md and config/schema.json.
 */
export function withBounds<S extends z.ZodType>(schema: S, bounds: string): S {
  boundsOf.set(schema, bounds);
  return schema;
}

/** The bounds of `schema` (under its default, if it has one), if it has any. */
function boundsIn(schema: z.ZodType): string | undefined {
  let inner: z.ZodType = schema;
  while (inner instanceof z.ZodDefault || inner instanceof z.ZodPrefault) {
    inner = inner.unwrap() as z.ZodType;
  }
  return boundsOf.get(inner);
}

/** `text` without Markdown: links as their text, code without backticks. */
export function plainText(text: string): string {
  return text.replace(/\[([^\]]+)\]\([^)]*\)/g, "$1").replaceAll("`", "");
}

/** What {@link SettingMeta.describe} says, with "; secret" for a secret. */
export function meaningOf(meta: SettingMeta): string {
  return meta.secret ? `${meta.describe}; secret` : meta.describe;
}

/**
 * `schema` as the setting `meta` describes: the one place a setting is named. Its description
 * goes into the JSON Schema; everything else is read back by {@link settingsOf}.
 */
export function setting<S extends z.ZodType>(schema: S, meta: SettingMeta): S {
  const bounds = boundsIn(schema);
  const bounded =
    bounds === undefined ? meta : { ...meta, describe: `${meta.describe}; ${bounds}` };
  const described = schema.describe(plainText(meaningOf(bounded)));
  settings.add(described, bounded);
  return described;
}

/**
 * Every setting of a configuration schema's sections, in their order. Each section is an object
 * schema (wrapped in a default or not) whose every key was made with {@link setting}; a key that
 * was not is a programming error, thrown at once.
 */
export function settingsOf(sections: Readonly<Record<string, z.ZodType>>): Setting[] {
  return Object.entries(sections).flatMap(([section, schema]) => {
    const object = schema instanceof z.ZodPrefault ? schema.unwrap() : schema;
    if (!(object instanceof z.ZodObject)) throw new Error(`config section ${section}: no object`);
    return Object.entries(object.shape).map(([key, value]): Setting => {
      const meta = settings.get(value);
      if (!meta) throw new Error(`config setting ${section}.${key}: made without setting()`);
      return { ...meta, path: [section, key], name: `${section}.${key}` };
    });
  });
}
