/**
 * Checks of a setting's value as it arrives, before the schema reads it: what no setting takes
 * from any source (a control character), what a flag must not be (empty), and what a config
 * file's JSON must not hold (a key that names an object's prototype, a value of another JSON type
 * than the setting's: `"4"` where a number belongs; variables and flags are text, a file is not).
 */
import { describeConfig } from "./describe.js";
import { configSchema } from "./schema.js";
import type { Setting } from "./setting.js";

/** Keys that would reach an object's prototype instead of being a key of their own. */
const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);

/**
 * The path (`api.__proto__`) of the first key of a parsed JSON value that names an object's
 * prototype, or undefined. JSON.parse keeps such a key as a key of its own; a copy made with
 * `target[key] = value` would replace the copy's prototype instead.
 */
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

/** What is wrong with `value`, a config file's value of `setting`, by its JSON type, or undefined. */
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
