/** SYNC_CRON checked before node-cron: 5 fields, no wrapping range, oversized step, L, W or #. */
import cron from "node-cron";

export const CRON_EXAMPLE = "*/5 * * * *";

interface Field {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  /** Names of the values from `min` on (months, week days): whole or their first three letters. */
  readonly names?: readonly string[];
}

const MONTHS =
  "january february march april may june july august september october november december";
const WEEK_DAYS = "sunday monday tuesday wednesday thursday friday saturday";

const FIELDS: readonly Field[] = [
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day-of-month", min: 1, max: 31 },
  { name: "month", min: 1, max: 12, names: MONTHS.split(" ") },
  // 0 and 7 are Sunday
  { name: "day-of-week", min: 0, max: 7, names: WEEK_DAYS.split(" ") },
];

const NICKNAMES: Readonly<Record<string, string>> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *",
};

/** One item of a field's list: `*`, `5`, `mon`, `1-5`, each with an optional `/step`. */
const ITEM = /^(\*|[a-z0-9]+(?:-[a-z0-9]+)?)(?:\/(\d+))?$/i;

/** A value of `field` as a number (a name by its place), or undefined when it is none. */
function fieldValue(text: string, field: Field): number | undefined {
  if (/^\d+$/.test(text)) return Number(text);
  const lower = text.toLowerCase();
  const at = field.names?.findIndex((name) => lower === name || lower === name.slice(0, 3)) ?? -1;
  return at < 0 ? undefined : field.min + at;
}

function itemProblem(item: string, field: Field): string | undefined {
  const where = `"${item}" in the ${field.name} field`;
  const match = ITEM.exec(item);
  if (!match) return `${where} is not a value, a range a-b or a step */n`;
  const [, body = "", stepText] = match;
  if (stepText !== undefined && body !== "*" && !body.includes("-")) {
    return `${where}: a step needs * or a range before it (such as */10 or 5-59/10)`;
  }
  if (body !== "*") {
    const [lowText = "", highText = lowText] = body.split("-");
    const [low, high] = [fieldValue(lowText, field), fieldValue(highText, field)];
    const bounds = `${field.min} to ${field.max}`;
    if (low === undefined || high === undefined) return `${where} is not a value from ${bounds}`;
    if (low < field.min || high > field.max) return `${where} is outside ${bounds}`;
    if (low > high) return `${where} is a range that goes down: write it from low to high`;
  }
  if (stepText !== undefined) {
    const step = Number(stepText);
    const span = field.max - field.min;
    if (step < 1 || step > span) return `${where}: the step must be from 1 to ${span}`;
  }
  return undefined;
}

/** `expression` as node-cron gets it: trimmed, fields apart by one space. */
export function normalizeCron(expression: string): string {
  return expression.trim().split(/\s+/).join(" ");
}

/** What is wrong with `expression` as SYNC_CRON, in one line, or undefined. */
export function cronProblem(expression: string): string | undefined {
  const trimmed = expression.trim();
  const resolved = NICKNAMES[trimmed.toLowerCase()] ?? trimmed;
  const fields = resolved.split(/\s+/);
  if (fields.length === 6) {
    return (
      "has 6 fields: a seconds field is not taken (a sync runs at most once a minute); give " +
      `5: minute hour day-of-month month day-of-week, such as ${CRON_EXAMPLE}`
    );
  }
  if (fields.length !== 5) return `must be a cron expression such as ${CRON_EXAMPLE}`;
  for (const [i, field] of FIELDS.entries()) {
    for (const item of (fields[i] ?? "").split(",")) {
      const problem = itemProblem(item, field);
      if (problem) return problem;
    }
  }
  if (!cron.validate(fields.join(" "))) {
    return "never runs: none of its months has that day of the month (as 30 or 31 in February)";
  }
  return undefined;
}
