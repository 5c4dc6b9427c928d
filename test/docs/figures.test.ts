/**
 * Figures the manual quotes, held to where they come from (#35): the README's configuration
 * summary and every default the prose gives a setting (`NAME` … "(5 by default)", "(default 512)",
 * "(8 s, …") are config/default.json's; a default the prose gives compose is docker-compose.yml's;
 * the API's limits and the service lock's timings are the code's. The expected values are read
 * from those files here, not computed by the code that uses them.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { MAX_VALUES_PER_REQUEST, MAX_WINDOW_MS } from "../../src/api/limits.js";
import { SETTINGS } from "../../src/config/schema.js";
import { apiOfVersion } from "../../src/influx/influx-connection.js";
import { HEARTBEAT_MS } from "../../src/service/lock-heartbeat.js";
import { LOCK_TTL_MS } from "../../src/state/service-lock.js";
import { builtCli } from "../support/cli-child.js";

const read = (path: string) => readFileSync(path, "utf8");
const COMPOSE = read("docker-compose.yml");
/** Pages with prose; docs/configuration.md's table is generated (test/config/artefacts.test.ts). */
const PAGES = [
  "README.md",
  ...readdirSync("docs")
    .filter((f) => f.endsWith(".md") && f !== "configuration.md")
    .map((f) => join("docs", f)),
  "docker-compose.yml",
];

const fileDefaults: Readonly<Record<string, Readonly<Record<string, unknown>>>> = JSON.parse(
  read("config/default.json"),
);

/** The default of the setting read from `env`, as config/default.json writes it. */
function defaultOf(env: string): string {
  const setting = SETTINGS.find((s) => s.env === env);
  if (setting === undefined) throw new Error(`no setting ${env}`);
  const [section, key] = setting.path;
  return String(fileDefaults[section]?.[key]);
}

/**
 * The default docker-compose.yml gives `env` (`${NAME:-value}`, inner defaults resolved); one it
 * passes empty (`${NAME:-}`) is unset, so the program's.
 */
function composeDefaultOf(env: string): string {
  const found = new RegExp(`${env}: \\$\\{${env}:-(.*)\\}$`, "m").exec(COMPOSE);
  if (found?.[1] === undefined) throw new Error(`docker-compose.yml gives ${env} no default`);
  const value = found[1].replace(/\$\{[A-Z_]+:-([^}]*)\}/g, "$1");
  return value === "" ? defaultOf(env) : value;
}

/** A figure as quoted, in the setting's own unit: "8 s" of a `_MS` setting is 8000. */
function inSettingUnit(env: string, quoted: string): string {
  const seconds = /^([\d.]+) s$/.exec(quoted);
  if (env.endsWith("_MS") && seconds?.[1] !== undefined) return String(Number(seconds[1]) * 1000);
  return quoted.replace(/ (MB|ms)$/, "");
}

interface Claim {
  readonly where: string;
  readonly env: string;
  /** `HOST:PORT`: a second setting quoted with the first, after a colon. */
  readonly env2?: string;
  readonly quoted: string;
  /** The sentence gives compose's default (it names compose), not the program's. */
  readonly compose: boolean;
}

const NAMES = SETTINGS.map((s) => s.env).join("|");
/** `NAME`, up to 60 characters of the same sentence, then the default in one of three forms. */
const DEFAULT_FORMS = new RegExp(
  `\`?\\b(${NAMES})(?::(${NAMES}))?\\b\`?[^.\`\\n]{0,60}?\\((?:default:? \`?([^\`),;]+)\`?|([^(),;]+?) by default|([\\d.]+ s),)`,
  "g",
);

function claimsOf(path: string): Claim[] {
  const text = read(path);
  return [...text.matchAll(DEFAULT_FORMS)].map((m) => {
    const before = text.slice(text.lastIndexOf(".", m.index) + 1, m.index);
    return {
      where: `${path}: ${m[0]}`,
      env: m[1] ?? "",
      env2: m[2],
      quoted: (m[3] ?? m[4] ?? m[5] ?? "").trim(),
      compose: /\bcompose\b/i.test(before),
    };
  });
}

describe("the figures the manual quotes", () => {
  const claims = PAGES.flatMap(claimsOf);

  it("finds the defaults the prose quotes (the pattern still matches the manual)", () => {
    expect(claims.map((c) => c.env)).toEqual(
      expect.arrayContaining(["API_RATE_LIMIT", "MEMORY_BUDGET_MB", "SHUTDOWN_TIMEOUT_MS"]),
    );
    expect(claims.filter((c) => c.where.startsWith("docker-compose.yml")).length).toBeGreaterThan(
      0,
    );
  });

  it("quotes each default as the configuration (or compose, where it says so) has it", () => {
    const wrong = claims
      .map((c) => ({
        ...c,
        is: [c.env, c.env2]
          .flatMap((env) =>
            env === undefined ? [] : [c.compose ? composeDefaultOf(env) : defaultOf(env)],
          )
          .join(":"),
        says: inSettingUnit(c.env, c.quoted).replace("INFLUX_BUCKET", defaultOf("INFLUX_BUCKET")),
      }))
      .filter((c) => c.says !== c.is)
      .map((c) => `${c.where} says ${c.says}, the default is ${c.is}`);
    expect(wrong).toEqual([]);
  });

  it("gives every setting of the README's summary its default", () => {
    const rows = [...read("README.md").matchAll(/^\| `([A-Z_]+)` \| ?(?:`([^`]*)`)? ?\|/gm)];
    expect(rows.length).toBeGreaterThanOrEqual(10);
    const wrong = rows
      .map(([row, env = "", shown = ""]) => ({ row, shown, is: defaultOf(env) }))
      .filter((r) => r.shown !== r.is)
      .map((r) => `${r.row} shows '${r.shown}', the default is '${r.is}'`);
    expect(wrong).toEqual([]);
  });

  it("quotes the API's limits as the planner applies them", () => {
    const readme = /<= (\d+) values x <= (\d+) days per request/.exec(read("README.md"));
    expect(readme?.slice(1).map(Number)).toEqual([MAX_VALUES_PER_REQUEST, MAX_WINDOW_MS / 864e5]);
    const design = /\*\*the API's limits\*\* \((\d+) days, (\d+) values/.exec(
      read("docs/design.md"),
    );
    expect(design?.slice(1).map(Number)).toEqual([MAX_WINDOW_MS / 864e5, MAX_VALUES_PER_REQUEST]);
  });

  it("quotes the service lock's heartbeat and lease as the code keeps them", () => {
    const renewed = /service lock in the state DB \(taken, renewed every (\d+) s/.exec(
      read("docs/design.md"),
    );
    expect(Number(renewed?.[1]) * 1000).toBe(HEARTBEAT_MS);
    const lease = /a service gone or hung for (\d+) s/.exec(read("docs/commands.md"));
    expect(Number(lease?.[1]) * 1000).toBe(LOCK_TTL_MS);
  });

  it("quotes compose's grace period as docker-compose.yml sets it", () => {
    const allows = /the\s+compose file allows (\d+) s/.exec(read("docs/operations.md"));
    const grace = /stop_grace_period: (\d+)s/.exec(COMPOSE);
    expect(allows?.[1]).toBeDefined();
    expect(allows?.[1]).toBe(grace?.[1]);
  });
});

/** The options the built CLI's help lists (the program's setting flags without a command). */
function optionsOf(...command: string[]): string[] {
  const help = execFileSync(process.execPath, [builtCli(), ...command, "--help"], {
    encoding: "utf8",
    env: { ...process.env, COLUMNS: "200" },
  });
  return [...help.matchAll(/^ +(?:-\w, )?(--[a-z][a-z-]*)/gm)].map((m) => m[1] ?? "");
}

describe("#42's claims: the operator's way without Docker", () => {
  const readme = read("README.md");

  it("every energy-etl command line of the README's going-live block takes its flags", () => {
    const block = /## Going live[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
    const lines = block.split("\n").filter((line) => line.startsWith("energy-etl "));
    // init (existing), backfill --all, report and run: the walk-through test/deploy/v1-write runs
    expect(lines.map((line) => line.split(/\s+/)[1])).toEqual([
      "init",
      "backfill",
      "report",
      "run",
    ]);
    const global = optionsOf();
    expect(global).toContain("--influx-url");
    for (const line of lines) {
      const [, command = "", ...rest] = line.replace(/#.*$/, "").trim().split(/\s+/);
      const taken = [...global, ...optionsOf(command)];
      const flags = rest.filter((word) => word.startsWith("--"));
      expect({ command, missing: flags.filter((f) => !taken.includes(f)) }).toEqual({
        command,
        missing: [],
      });
    }
  });

  it("says Debian's package is 1.6.7, as the tests' influxd (Debian's) answers /ping", async () => {
    const said = /Debian's `apt-get install influxdb` gives (\d+\.\d+\.\d+)/.exec(readme)?.[1];
    const raw = process.env.TEST_INFLUX_RAW_URL;
    if (raw === undefined) throw new Error("no test influxd (jest's global setup starts it)");
    const version = (await fetch(`${raw}/ping`)).headers.get("x-influxdb-version");
    expect(said).toBeDefined();
    expect(version?.startsWith(said ?? "-")).toBe(true);
  });

  it("writes 1.x below 1.8 through /write and 1.8+, 2.x and 3 through /api/v2/write, as the docs say", () => {
    const operations = read("docs/operations.md");
    expect(operations).toMatch(/writes 1\.x before 1\.8 through\s+`\/write\?db=&rp=`/);
    expect(operations).toMatch(/1\.8\+, 2\.x and 3 through `\/api\/v2\/write`/);
    const api = (version: string) => apiOfVersion(version);
    expect(["1.6.7~rc0", "1.7.11", "1.0.0"].map(api)).toEqual(["v1", "v1", "v1"]);
    expect(["1.8.0", "1.8.10", "v2.7.4", "2.0.0", "3.0.1"].map(api)).toEqual([
      "v2",
      "v2",
      "v2",
      "v2",
      "v2",
    ]);
  });

  it("puts the rollups where init and compose put them: <database>/rollups", () => {
    expect(composeDefaultOf("ROLLUP_BUCKET")).toBe(`${defaultOf("INFLUX_BUCKET")}/rollups`);
    expect(readme).toContain("`energy/rollups`");
  });
});
