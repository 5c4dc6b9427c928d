/** Checks of a config file's JSON before the schema reads it (variables and flags are text). */
import { describeConfig } from "./describe.js";
import { configSchema } from "./schema.js";
import type { Setting } from "./setting.js";

const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);

/** The path (`api.__proto__`) of the first key naming a prototype: a copy would replace it. */
export function prototypeKey(json: unknown, path: readonly string[] = []): string | undefined {
  if (typeof json !== "object" || json === null) return undefined;
  for (const [key, value] of Object.entries(json)) {
    const at = [...path, key];
    if (PROTOTYPE_KEYS.has(key)) return at.join(".");
    const deeper = prototypeKey(value, at);
    if (deeper !== undefined) return deeper;
  }
  return undefined;
}

/** The JSON type of each setting's value in a config file, by `section.key`: its default's. */
let fileTypes: ReadonlyMap<string, string> | undefined;

function fileTypeOf(setting: Setting): string | undefined {
  if (fileTypes === undefined) {
    const defaults = describeConfig(configSchema.parse({}));
    fileTypes = new Map(
      Object.entries(defaults).flatMap(([section, values]) =>
        Object.entries(values).map(([key, value]) => [`${section}.${key}`, typeof value] as const),
      ),
    );
  }
  return fileTypes.get(setting.name);
}

const jsonType = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`;

/** What is wrong with the JSON type of `value`, a config file's value of `setting`, if anything. */
export function fileValueProblem(setting: Setting, value: unknown): string | undefined {
  const wanted = fileTypeOf(setting);
  if (wanted === undefined || typeof value === wanted) return undefined;
  const example =
    wanted === "number"
      ? ' (write 4, not "4")'
      : wanted === "boolean"
        ? ' (write true, not "true")'
        : "";
  return `must be a JSON ${wanted}, not ${jsonType(value)}${example}`;
}
