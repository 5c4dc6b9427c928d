import { z } from "zod";
import type { SettingMeta, SettingNames } from "./setting-names.js";

export type { SettingMeta };

/** One setting: its place in the config file (`section.key`) and its {@link SettingMeta}. */
export type Setting = SettingMeta & {
  readonly path: readonly [string, string];
  /** `section.key`, as messages and `config --sources` name it. */
  readonly name: string;
};

const settings = z.registry<SettingMeta>();

const boundsOf = new WeakMap<z.ZodType, string>();

/** `schema` with its bounds in words (`` `PT1M` to `P7D` ``), shown after a setting's meaning. */
export function withBounds<S extends z.ZodType>(schema: S, bounds: string): S {
  boundsOf.set(schema, bounds);
  return schema;
}

/** The bounds of `schema`, under its default if it has one. */
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

/** The setting's description, with "; secret" for a secret. */
export function meaningOf(meta: SettingMeta): string {
  return meta.secret ? `${meta.describe}; secret` : meta.describe;
}

/** `schema` as the setting `meta` describes: the one place a setting is named. */
export function setting<S extends z.ZodType>(schema: S, meta: SettingMeta): S {
  const bounds = boundsIn(schema);
  const bounded =
    bounds === undefined ? meta : { ...meta, describe: `${meta.describe}; ${bounds}` };
  const described = schema.describe(plainText(meaningOf(bounded)));
  settings.add(described, bounded);
  return described;
}

/** A section of the config file: no key but its settings; left out, each setting at its default. */
export function section<T extends z.ZodRawShape>(shape: T) {
  // every setting has a default, so {} is a section's valid input (a test parses it)
  return z
    .object(shape)
    .strict()
    .prefault({} as z.input<z.ZodObject<T, z.core.$strict>>);
}

/**
 * Every setting of a configuration schema's sections, in order, each made with {@link setting}
 * from its entry in `names`; throws when the two do not name the same settings in the same order.
 */
export function settingsOf(
  sections: Readonly<Record<string, z.ZodType>>,
  names: SettingNames,
): Setting[] {
  const found = Object.entries(sections).flatMap(([section, schema]) => {
    const object = schema instanceof z.ZodPrefault ? schema.unwrap() : schema;
    if (!(object instanceof z.ZodObject)) throw new Error(`config section ${section}: no object`);
    return Object.entries(object.shape).map(([key, value]): Setting => {
      const meta = settings.get(value);
      if (!meta) throw new Error(`config setting ${section}.${key}: made without setting()`);
      if (meta.env !== names[section]?.[key]?.env) {
        throw new Error(`config setting ${section}.${key}: made with the names of ${meta.env}`);
      }
      return { ...meta, path: [section, key], name: `${section}.${key}` };
    });
  });
  const named = Object.entries(names).flatMap(([section, keys]) =>
    Object.keys(keys).map((key) => `${section}.${key}`),
  );
  const inSchema = found.map(({ name }) => name).join(", ");
  if (named.join(", ") !== inSchema) {
    throw new Error(`the settings named (${named.join(", ")}) are not the schema's (${inSchema})`);
  }
  return found;
}
