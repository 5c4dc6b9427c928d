import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import AjvModule from "ajv";
import { parse } from "yaml";
import { z } from "zod";
import { loadConfig, SETTINGS } from "../../src/config.js";
import { HealthServer } from "../../src/service/health-server.js";
import {
  DEFAULT_SIM_API_KEY,
  DEFAULT_SIM_USERS,
  startSimulator,
} from "../../src/simulator/server.js";
import { tempDir } from "../support/temp-dir.js";

// ajv is CommonJS: under Node's ESM the default import is module.exports, whose `default` is Ajv.
const Ajv = AjvModule.default;

/** `docker compose config` cannot run here, so the file is checked against the Compose spec. */
/** The compose-spec JSON schema (compose-spec/compose-spec, Apache-2.0; see its NOTICE.md). */
const COMPOSE_SPEC = resolve(process.cwd(), "test/fixtures/compose-spec/compose-spec.json");

const composeText = readFileSync("docker-compose.yml", "utf8");
const envExample = readFileSync(".env.example", "utf8");
/** The demo's settings: `docker compose --env-file deploy/demo.env --profile demo up -d`. */
const demoEnvText = readFileSync("deploy/demo.env", "utf8");

/** The parts of a service these tests read; the spec validation covers the rest. */
const serviceSchema = z.object({
  image: z.string().optional(),
  build: z.string().optional(),
  entrypoint: z.array(z.string()).optional(),
  command: z.array(z.string()).optional(),
  profiles: z.array(z.string()).optional(),
  restart: z.string().optional(),
  environment: z.record(z.string(), z.string()).default({}),
  depends_on: z.record(z.string(), z.object({ condition: z.string() })).default({}),
  volumes: z.array(z.string()).default([]),
  ports: z.array(z.string()).default([]),
  healthcheck: z.object({ test: z.array(z.string()) }).optional(),
  logging: z
    .object({ driver: z.string(), options: z.record(z.string(), z.string()).default({}) })
    .optional(),
});
const composeSchema = z.object({
  services: z.record(z.string(), serviceSchema),
  volumes: z.record(z.string(), z.null()).default({}),
});
type Service = z.output<typeof serviceSchema>;

const compose = composeSchema.parse(parse(composeText));

function service(name: string): Service {
  const found = compose.services[name];
  if (!found) throw new Error(`docker-compose.yml has no service ${name}`);
  return found;
}

/** The text `${expr}` as compose and Grafana write it (not a JavaScript placeholder). */
const ref = (expr: string): string => `$\{${expr}}`;

/**
 * `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?error}`, `${VAR:+alt}`; a default may hold
 * one more of them (`${A:-${B:-x}/y}`, compose's nested interpolation).
 */
const INTERPOLATION = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])((?:[^{}$]|\$\{[^{}]*\})*))?\}/g;

function interpolatedVariables(text: string): Set<string> {
  return new Set([...text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1] ?? ""));
}

/** The default of an environment value of the form `${VAR:-default}`, or undefined. */
function defaultOf(value: string | undefined): string | undefined {
  const m = /^\$\{[A-Za-z_][A-Za-z0-9_]*:-([^}]*)\}$/.exec(value ?? "");
  return m?.[1];
}

/** The assignments of an env file (`VAR=value` lines). */
function envFile(text: string): Map<string, string> {
  return new Map(
    [...text.matchAll(/^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/gm)].map((m) => [m[1] ?? "", m[2] ?? ""]),
  );
}

/**
 * Compose's interpolation of `text` with `vars` (an env file); throws, as compose does, when a
 * `${VAR:?error}` is unset or empty. `$$` is a literal `$`.
 */
function interpolate(text: string, vars: ReadonlyMap<string, string>): string {
  return text
    .replace(
      INTERPOLATION,
      (_all, name: string, op: string | undefined, arg: string | undefined) => {
        const value = vars.get(name);
        const empty = value === undefined || value === "";
        if (op === ":?" && empty) throw new Error(`required variable ${name} is missing: ${arg}`);
        if (op === ":-" && empty) return interpolate(arg ?? "", vars);
        return value ?? "";
      },
    )
    .replace(/\$\$/g, "$");
}

/** {@link interpolate} over every string of a parsed compose file, as compose does. */
function interpolateTree(value: unknown, vars: ReadonlyMap<string, string>): unknown {
  if (typeof value === "string") return interpolate(value, vars);
  if (Array.isArray(value)) return value.map((v) => interpolateTree(v, vars));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolateTree(v, vars)]));
  }
  return value;
}

/** The variables compose requires (`${VAR:?...}`), each with its message. */
const required = new Map(
  [...composeText.matchAll(INTERPOLATION)]
    .filter((m) => m[2] === ":?")
    .map((m) => [m[1] ?? "", m[3] ?? ""]),
);

/** Variable names assigned in .env.example (`VAR=` at the start of a line). */
function envExampleVariables(): string[] {
  return [...envExample.matchAll(/^([A-Za-z_][A-Za-z0-9_]*)=/gm)].map((m) => m[1] ?? "");
}

/** Runs `node -e script` as a container's health check would; resolves with its exit code. */
function runNodeScript(script: string): Promise<number> {
  return new Promise((done) => {
    execFile(process.execPath, ["-e", script], { timeout: 10_000 }, (error) => {
      done(error ? Number(error.code ?? 1) : 0);
    });
  });
}

/**
 * A stand-in for the `influx` CLI (the parts deploy/influx-init.sh uses), keeping its
 * authorizations in $STUB_STATE as `id|description|flags|token` lines and its buckets in
 * $STUB_BUCKETS as `id|name|retention|shard group duration` lines (the raw bucket, as InfluxDB's
 * setup made it, when the file is new), each command it was given in $STUB_LOG.
 */
const INFLUX_STUB = `#!/bin/sh
S="$STUB_STATE"; touch "$S"
B="$STUB_BUCKETS"; [ -f "$B" ] || echo "b0c4|$INFLUX_BUCKET|infinite|168h0m0s" > "$B"
echo "$*" >> "$STUB_LOG"
case "$1 $2" in
"bucket list")
  while IFS='|' read -r id n r g; do
    [ "$n" = "$4" ] && printf '%s\\t%s\\t%s\\t%s\\tf00d\\timplicit\\n' "$id" "$n" "$r" "$g"
  done < "$B"; : ;;
"bucket create")
  [ "$5 $6 $7" = "--org energy --retention" ] && [ "$8" = 0 ] || { echo "unexpected: $*" >&2; exit 2; }
  echo "r$(($(wc -l < "$B") + 0))|$4|infinite|168h0m0s" >> "$B" ;;
"bucket update")
  [ "$5 $6 $7 $8" = "--retention 0 --shard-group-duration 87360h" ] || { echo "unexpected: $*" >&2; exit 2; }
  awk -F'|' -v OFS='|' -v id="$4" '$1 == id { $3 = "infinite"; $4 = "87360h0m0s" } { print }' "$B" > "$B.new"
  mv "$B.new" "$B" ;;
"auth list")
  echo "["
  while IFS='|' read -r id d f t; do
    printf '\\t{\\n\\t\\t"id": "%s",\\n\\t\\t"description": "%s",\\n\\t\\t"token": "%s"\\n\\t},\\n' "$id" "$d" "$t"
  done < "$S"
  echo "]" ;;
"auth delete") grep -v "^$4|" "$S" > "$S.new"; mv "$S.new" "$S" ;;
"auth create")
  shift 2; n=$(($(wc -l < "$S") + 1)); f=""
  while [ $# -gt 0 ]; do
    case "$1" in --description) d="$2"; shift ;; --org) shift ;; --json) ;; *) f="$f $1 $2"; shift ;; esac
    shift
  done
  echo "a$n|$d|\${f# }|tok-$n-$$" >> "$S"
  printf '{\\n\\t"id": "a%s",\\n\\t"description": "%s",\\n\\t"token": "tok-%s-%s"\\n}\\n' "$n" "$d" "$n" "$$" ;;
*) echo "unexpected: $*" >&2; exit 2 ;;
esac
`;

interface InitResult {
  readonly dir: string;
  readonly auths: { id: string; description: string; flags: string; token: string }[];
  /** `id|name|retention|shard group duration`, in the order they were made. */
  readonly buckets: string[];
  readonly files: Map<string, string>;
  /** The influx commands the script ran (`bucket list --name energy --hide-headers`, ...). */
  readonly commands: string[];
}

/**
 * Runs deploy/influx-init.sh with the stub CLI (in `dir`, a new one by default; `env` added to
 * the script's environment).
 */
async function runInitScript(
  dir = tempDir("influx-init-"),
  env: Record<string, string> = {},
): Promise<InitResult> {
  writeFileSync(join(dir, "influx"), INFLUX_STUB, { mode: 0o755 });
  writeFileSync(join(dir, "log"), "");
  const uid = String(process.getuid?.() ?? 0);
  const vars = {
    PATH: `${dir}:${process.env.PATH ?? ""}`,
    STUB_STATE: join(dir, "auths"),
    STUB_BUCKETS: join(dir, "buckets"),
    STUB_LOG: join(dir, "log"),
    INFLUX_HOST: "http://influxdb:8086",
    INFLUX_TOKEN: "admin-token",
    INFLUX_ORG: "energy",
    INFLUX_BUCKET: "energy",
    TOKEN_DIR: join(dir, "tokens"),
    ETL_UID: uid,
    GRAFANA_UID: uid,
    ...env,
  };
  await new Promise<void>((done, fail) => {
    execFile("sh", ["deploy/influx-init.sh"], { env: vars, timeout: 10_000 }, (error, _out, err) =>
      error ? fail(new Error(`${error.message}\n${err}`)) : done(),
    );
  });
  const lines = (name: string): string[] =>
    readFileSync(join(dir, name), "utf8")
      .split("\n")
      .filter((line) => line !== "");
  const auths = lines("auths").map((line) => {
    const [id = "", description = "", flags = "", token = ""] = line.split("|");
    return { id, description, flags, token };
  });
  const files = new Map(
    ["energy-etl", "grafana"].map((name) => [
      name,
      readFileSync(join(dir, "tokens", name), "utf8"),
    ]),
  );
  return { dir, auths, buckets: lines("buckets"), files, commands: lines("log") };
}

describe("docker-compose.yml", () => {
  it("is valid against the Compose specification", () => {
    const { $schema: _draft07, ...spec } = JSON.parse(readFileSync(COMPOSE_SPEC, "utf8")) as Record<
      string,
      unknown
    >;
    // The spec is draft-07 (Ajv's default) but names its meta-schema by an https URL Ajv does not
    // register, and it is not written for Ajv's strict mode.
    const validate = new Ajv({ allErrors: true, strict: false }).compile(spec);
    const valid = validate(parse(composeText));
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
  });

  it("uses only braced interpolation, so the variable scan below sees every variable", () => {
    // `$$` is a literal `$` for the container's shell.
    const bare = composeText
      .split("\n")
      .filter((line) => /\$(?![{$])/.test(line.replaceAll("$$", "")));
    expect(bare).toEqual([]);
  });

  it("documents every variable it uses in .env.example, each with a comment line", () => {
    const used = [...interpolatedVariables(composeText)].sort();
    const documented = envExampleVariables();
    expect(used.filter((v) => !documented.includes(v))).toEqual([]);
    expect(documented.filter((v) => !used.includes(v))).toEqual([]);
    const lines = envExample.split("\n");
    const uncommented = lines
      .map((line, i) => ({ line, previous: lines[i - 1] ?? "" }))
      .filter(({ line }) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(line))
      .filter(({ previous }) => !previous.startsWith("#"))
      .map(({ line }) => line);
    expect(uncommented).toEqual([]);
  });

  it("refuses to start without its secrets: each is required with a message, none has a default", () => {
    const secrets = [
      "INFLUX_ADMIN_PASSWORD",
      "INFLUX_TOKEN",
      "ENERGY_API_URL",
      "ENERGY_API_KEY",
      "ENERGY_API_USER",
      "ENERGY_API_PASSWORD",
      "GRAFANA_ADMIN_PASSWORD",
    ];
    expect([...required.keys()].sort()).toEqual([...secrets].sort());
    for (const [name, message] of required) {
      expect({ name, message }).toEqual({ name, message: expect.stringMatching(/^set \S+ /) });
    }
    const uses = [...composeText.matchAll(INTERPOLATION)];
    const withDefault = uses.filter((m) => secrets.includes(m[1] ?? "") && m[2] !== ":?");
    expect(withDefault.map((m) => m[0])).toEqual([]);
    // .env.example leaves them empty: a copied but unfilled .env still refuses to start.
    const example = envFile(envExample);
    expect(secrets.filter((name) => example.get(name) !== "")).toEqual([]);
    expect(() => interpolate(composeText, example)).toThrow(/required variable/);
    expect(() => interpolate(composeText, new Map())).toThrow(/required variable/);
    // no demo value anywhere in the production file
    for (const value of ["change-me", "sim-api-key", "demo-password", "http://simulator"]) {
      expect({ value, found: composeText.includes(value) }).toEqual({ value, found: false });
    }
  });

  it("the demo is one command: deploy/demo.env sets every required value, local-only", () => {
    const demo = envFile(demoEnvText);
    expect([...required.keys()].filter((name) => !demo.get(name))).toEqual([]);
    // compose interpolates the parsed file's values
    const config = composeSchema.parse(interpolateTree(parse(composeText), demo));
    expect(config.services.simulator?.profiles).toEqual(["demo"]);
    const simulatorPort = config.services.simulator?.command?.at(-1);
    const etlEnv = config.services["energy-etl"]?.environment ?? {};
    expect(etlEnv).toMatchObject({
      ENERGY_API_URL: `http://simulator:${simulatorPort}`,
      ENERGY_API_KEY: DEFAULT_SIM_API_KEY,
      ENERGY_API_USER: DEFAULT_SIM_USERS[0]?.user,
      ENERGY_API_PASSWORD: DEFAULT_SIM_USERS[0]?.password,
      SYNC_START: "P2D",
      ROLLUP_BUCKET: "energy/rollups",
    });
    // InfluxDB's setup refuses passwords shorter than 8 characters.
    expect(demo.get("INFLUX_ADMIN_PASSWORD")?.length).toBeGreaterThanOrEqual(8);
    expect(demo.get("BIND_ADDRESS")).toBe("127.0.0.1");
    expect(demoEnvText).toMatch(/LOCAL ONLY/);
    expect(demoEnvText).toContain("docker compose --env-file deploy/demo.env --profile demo up -d");
    expect(demoEnvText).toContain(
      "docker compose --env-file deploy/demo.env --profile demo down -v",
    );
    // every variable the demo sets is one compose reads, documented in .env.example
    const documented = envExampleVariables();
    expect([...demo.keys()].filter((name) => !documented.includes(name))).toEqual([]);
    const operations = readFileSync("docs/operations.md", "utf8");
    expect(operations).toContain("docker compose --env-file deploy/demo.env --profile demo up -d");
    expect(operations).toContain(
      "docker compose --env-file deploy/demo.env --profile demo down -v",
    );
  });

  it("publishes every port on BIND_ADDRESS, 127.0.0.1 unless changed", () => {
    const ports = Object.values(compose.services).flatMap((s) => s.ports);
    expect(ports.length).toBeGreaterThan(0);
    for (const port of ports) {
      expect(port.startsWith(`${ref("BIND_ADDRESS:-127.0.0.1")}:`)).toBe(true);
      expect(interpolate(port, new Map())).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
      expect(interpolate(port, new Map([["BIND_ADDRESS", "10.0.0.5"]]))).toMatch(/^10\.0\.0\.5:/);
    }
    expect(envFile(envExample).get("BIND_ADDRESS")).toBe("127.0.0.1");
  });

  it("gives every service a health check, log rotation and a restart policy", () => {
    for (const [name, s] of Object.entries(compose.services)) {
      expect({ name, test: s.healthcheck?.test.length ?? 0 }).toEqual({
        name,
        test: expect.any(Number),
      });
      expect(s.healthcheck?.test.length ?? 0).toBeGreaterThan(1);
      expect({ name, logging: s.logging }).toEqual({
        name,
        logging: {
          driver: "json-file",
          options: {
            "max-size": expect.stringMatching(/^\d+[kmg]$/),
            "max-file": expect.stringMatching(/^\d+$/),
          },
        },
      });
      expect({ name, restart: s.restart }).toEqual({
        name,
        restart: expect.stringMatching(/^(unless-stopped|always|on-failure(:\d+)?)$/),
      });
    }
  });

  it("pins every image to an exact version", () => {
    const images = Object.values(compose.services)
      .filter((s) => s.build === undefined)
      .map((s) => s.image ?? "");
    for (const image of images) expect(image).toMatch(/:\d+\.\d+\.\d+$/);
  });

  it("gives the admin token to InfluxDB and influx-init only", () => {
    const holders = Object.entries(compose.services)
      .filter(([, s]) => Object.values(s.environment).some((v) => v.includes("${INFLUX_TOKEN")))
      .map(([name]) => name);
    expect(holders.sort()).toEqual(["influx-init", "influxdb"]);
  });

  describe("influx-init", () => {
    const init = service("influx-init");

    it("runs deploy/influx-init.sh once with the InfluxDB image's CLI, after InfluxDB is healthy", () => {
      expect(init.image).toBe(service("influxdb").image);
      expect(init.entrypoint).toEqual(["sh", "/influx-init.sh"]);
      expect(init.volumes).toEqual(
        expect.arrayContaining([
          "./deploy/influx-init.sh:/influx-init.sh:ro",
          "influx-tokens:/run/influx-tokens",
        ]),
      );
      expect(init.environment).toMatchObject({
        INFLUX_HOST: "http://influxdb:8086",
        TOKEN_DIR: "/run/influx-tokens",
      });
      expect(init.depends_on.influxdb).toEqual({ condition: "service_healthy" });
      for (const name of ["energy-etl", "grafana"]) {
        expect(service(name).depends_on["influx-init"]).toEqual({
          condition: "service_completed_successfully",
        });
        expect(service(name).volumes).toContain("influx-tokens:/run/influx-tokens:ro");
      }
    });

    it("gives influx-init and energy-etl one ROLLUP_BUCKET: INFLUX_BUCKET/rollups unless .env sets it", () => {
      const bucketOf = (vars: Record<string, string>) => {
        const config = composeSchema.parse(
          interpolateTree(
            parse(composeText),
            new Map([...envFile(demoEnvText), ...Object.entries(vars)]),
          ),
        );
        const etl = config.services["energy-etl"]?.environment.ROLLUP_BUCKET;
        expect(config.services["influx-init"]?.environment.ROLLUP_BUCKET).toBe(etl);
        return etl;
      };
      expect(bucketOf({ ROLLUP_BUCKET: "" })).toBe("energy/rollups");
      expect(bucketOf({ ROLLUP_BUCKET: "", INFLUX_BUCKET: "site" })).toBe("site/rollups");
      expect(bucketOf({ ROLLUP_BUCKET: "site/yearly", INFLUX_BUCKET: "site" })).toBe("site/yearly");
      // the raw bucket's retention, on InfluxDB's first start (empty: forever)
      expect(service("influxdb").environment.DOCKER_INFLUXDB_INIT_RETENTION).toBe(
        ref("INFLUX_RETENTION:-"),
      );
    });

    it("creates the rollups' bucket, infinite with shard groups of a year, once", async () => {
      const result = await runInitScript();
      // the raw bucket as InfluxDB's setup made it; the rollups' after it, updated to a year
      // (`influx bucket create` cannot combine infinite retention with a shard group duration)
      expect(result.buckets).toEqual([
        "b0c4|energy|infinite|168h0m0s",
        "r1|energy/rollups|infinite|87360h0m0s",
      ]);
      expect(result.commands.filter((c) => !c.startsWith("auth "))).toEqual([
        "bucket list --name energy --hide-headers",
        "bucket list --name energy/rollups --hide-headers",
        "bucket create --name energy/rollups --org energy --retention 0",
        "bucket list --name energy/rollups --hide-headers",
        "bucket update --id r1 --retention 0 --shard-group-duration 87360h",
      ]);
      const again = await runInitScript(result.dir);
      expect(again.buckets).toEqual(result.buckets);
      expect(again.commands.filter((c) => /^bucket (create|update)/.test(c))).toEqual([]);
    });

    it("keeps a rollups' bucket whose shard groups were set otherwise; takes ROLLUP_BUCKET", async () => {
      const dir = tempDir("influx-init-");
      writeFileSync(
        join(dir, "buckets"),
        "b0c4|energy|infinite|168h0m0s\nr7|energy/yearly|8760h0m0s|720h0m0s\n",
      );
      const result = await runInitScript(dir, { ROLLUP_BUCKET: "energy/yearly" });
      expect(result.buckets).toEqual([
        "b0c4|energy|infinite|168h0m0s",
        "r7|energy/yearly|8760h0m0s|720h0m0s",
      ]);
      expect(result.auths.find((a) => a.description.startsWith("energy-etl"))?.flags).toBe(
        "--read-bucket b0c4 --write-bucket b0c4 --read-bucket r7 --write-bucket r7",
      );
    });

    it("creates a token that reads and writes both buckets for energy-etl and one that reads both for Grafana, idempotently", async () => {
      const result = await runInitScript();
      const etl = "--read-bucket b0c4 --write-bucket b0c4 --read-bucket r1 --write-bucket r1";
      const grafana = "--read-bucket b0c4 --read-bucket r1";
      expect(result.auths.map((a) => [a.description, a.flags])).toEqual([
        ["energy-etl reader-writer (energy, energy/rollups)", etl],
        ["grafana reader (energy, energy/rollups)", grafana],
      ]);
      expect(result.files.get("energy-etl")).toBe(result.auths[0]?.token);
      expect(result.files.get("grafana")).toBe(result.auths[1]?.token);
      // again: nothing new
      const again = await runInitScript(result.dir);
      expect(again.auths).toEqual(result.auths);
      expect(again.files).toEqual(result.files);
    });

    it("replaces the tokens an older version made (write-only for energy-etl, one bucket for Grafana)", async () => {
      const dir = tempDir("influx-init-");
      writeFileSync(
        join(dir, "auths"),
        "a1|energy-etl writer (energy)|--write-bucket b0c4|old-etl\n" +
          "a2|grafana reader (energy)|--read-bucket b0c4|old-grafana\n" +
          "a9|someone else's|--read-bucket b0c4|theirs\n",
      );
      mkdirSync(join(dir, "tokens"));
      writeFileSync(join(dir, "tokens", "energy-etl"), "old-etl");
      writeFileSync(join(dir, "tokens", "grafana"), "old-grafana");
      const result = await runInitScript(dir);
      expect(result.auths.map((a) => a.description)).toEqual([
        "someone else's",
        "energy-etl reader-writer (energy, energy/rollups)",
        "grafana reader (energy, energy/rollups)",
      ]);
      expect(result.files.get("energy-etl")).toBe(result.auths[1]?.token);
      expect(result.files.get("grafana")).toBe(result.auths[2]?.token);
      expect([...result.files.values()]).not.toContain("old-etl");
    });
  });

  it("has the services influxdb, grafana, energy-etl and simulator; simulator only in demo", () => {
    expect(Object.keys(compose.services).sort()).toEqual(
      ["energy-etl", "grafana", "influx-init", "influxdb", "simulator"].sort(),
    );
    expect(service("simulator").profiles).toEqual(["demo"]);
    for (const name of ["influxdb", "influx-init", "grafana", "energy-etl"]) {
      expect({ name, profiles: service(name).profiles }).toEqual({ name, profiles: undefined });
    }
  });

  it("declares every named volume it mounts", () => {
    const named = Object.values(compose.services)
      .flatMap((s) => s.volumes)
      .map((v) => v.split(":")[0] ?? "")
      .filter((source) => !source.startsWith(".") && !source.startsWith("/"));
    expect([...new Set(named)].sort()).toEqual(Object.keys(compose.volumes).sort());
    expect(Object.keys(compose.volumes).sort()).toEqual(
      ["etl-state", "grafana-data", "influx-tokens", "influxdb-data"].sort(),
    );
  });

  it("sets InfluxDB up from .env and checks its health with influx ping", () => {
    const influx = service("influxdb");
    expect(influx.image).toMatch(/^influxdb:2\./);
    expect(influx.environment).toMatchObject({
      DOCKER_INFLUXDB_INIT_MODE: "setup",
      DOCKER_INFLUXDB_INIT_USERNAME: expect.stringContaining("${INFLUX_ADMIN_USER"),
      DOCKER_INFLUXDB_INIT_PASSWORD: expect.stringContaining("${INFLUX_ADMIN_PASSWORD"),
      DOCKER_INFLUXDB_INIT_ORG: expect.stringContaining("${INFLUX_ORG"),
      DOCKER_INFLUXDB_INIT_BUCKET: expect.stringContaining("${INFLUX_BUCKET"),
      DOCKER_INFLUXDB_INIT_ADMIN_TOKEN: expect.stringContaining("${INFLUX_TOKEN"),
    });
    expect(influx.healthcheck?.test).toEqual(["CMD", "influx", "ping"]);
    expect(influx.ports).toEqual([`${ref("BIND_ADDRESS:-127.0.0.1")}:8086:8086`]);
  });

  describe("energy-etl", () => {
    const etl = service("energy-etl");
    const env = etl.environment;

    it("says what SIGTERM gives the work in flight: SHUTDOWN_TIMEOUT_MS's true default, within stop_grace_period", () => {
      const said =
        /# SIGTERM gives the work in flight SHUTDOWN_TIMEOUT_MS \((\d+) s by default\)/.exec(
          composeText,
        );
      const defaultMs = loadConfig({ env: {} }).service.shutdownTimeoutMs;
      expect(Number(said?.[1]) * 1000).toBe(defaultMs);
      // docker's own grace period outlasts it (and the sink's flush after it)
      expect(composeText).toMatch(
        /SHUTDOWN_TIMEOUT_MS \(\d+ s by default\).*\n\s+stop_grace_period: 45s/,
      );
      expect(45_000).toBeGreaterThan(defaultMs);
    });

    it("runs the built image as the service, after InfluxDB is healthy, restarting", () => {
      expect(etl.build).toBe(".");
      expect(etl.image).toBe("energy-etl:local");
      expect(etl.command).toEqual(["run"]);
      expect(etl.restart).toBe("unless-stopped");
      expect(etl.depends_on.influxdb).toEqual({ condition: "service_healthy" });
    });

    it("execs the image's ENTRYPOINT with influx-init's token (reads and writes both buckets) as INFLUX_TOKEN", () => {
      const dockerfile = readFileSync("Dockerfile", "utf8");
      const entrypoint = JSON.parse(
        /^ENTRYPOINT\s+(\[.*\])$/m.exec(dockerfile)?.[1] ?? "[]",
      ) as string[];
      const [sh, flag, script, arg0] = etl.entrypoint ?? [];
      expect([sh, flag, arg0]).toEqual(["sh", "-c", "energy-etl"]);
      expect(script).toBe(
        'INFLUX_TOKEN="$$(cat /run/influx-tokens/energy-etl)" && export INFLUX_TOKEN && ' +
          `exec ${entrypoint.join(" ")} "$$@"`,
      );
    });

    it("is healthy when ready: its health check asks /readyz", async () => {
      const [kind, node, flag, script = ""] = etl.healthcheck?.test ?? [];
      expect([kind, node, flag]).toEqual(["CMD", "node", "-e"]);
      expect(script).toContain("/readyz");
      let status = 200;
      const server = new HealthServer({
        "/healthz": async () => ({ status: 200, body: "{}" }),
        "/readyz": async () => ({ status, body: "{}" }),
      });
      const port = await server.listen(0, "127.0.0.1");
      try {
        const probe = script.replace("process.env.HTTP_PORT", `"${port}"`);
        expect(await runNodeScript(probe)).toBe(0);
        status = 503;
        expect(await runNodeScript(probe)).toBe(1);
      } finally {
        await server.close();
      }
    });

    /** Settings deliberately not passed to energy-etl, with the reason. */
    const NOT_PASSED: ReadonlyMap<string, string> = new Map([
      ["INFLUX_TOKEN", "the entrypoint reads influx-init's token file"],
      ["INFLUX_USERNAME", "a 1.x user: compose's InfluxDB 2 takes influx-init's token"],
      ["INFLUX_PASSWORD", "a 1.x user's password: compose's InfluxDB 2 takes the token"],
    ]);
    /** Variables passed that are not settings, with the reason. */
    const NOT_SETTINGS: ReadonlyMap<string, string> = new Map([
      ["CONFIG_FILE", "names the config file with the sites (./config is mounted at /app/config)"],
    ]);

    it("passes every setting of the configuration table", () => {
      const names = [...new Set(SETTINGS.map((s) => s.env))].filter((n) => !NOT_PASSED.has(n));
      expect(names.filter((n) => !(n in env))).toEqual([]);
      const unknown = Object.keys(env).filter(
        (n) => !SETTINGS.some((s) => s.env === n) && !NOT_SETTINGS.has(n),
      );
      expect(unknown).toEqual([]);
    });

    it("writes to the compose InfluxDB and keeps its state on the etl-state volume", () => {
      expect(env.INFLUX_URL).toBe("http://influxdb:8086");
      expect(etl.volumes).toContain("etl-state:/data");
      expect(env.STATE_DB).toBe("/data/state.db");
    });

    it("requires the API settings: no fallback to the simulator", () => {
      for (const name of [
        "ENERGY_API_URL",
        "ENERGY_API_KEY",
        "ENERGY_API_USER",
        "ENERGY_API_PASSWORD",
      ]) {
        expect(env[name]).toMatch(new RegExp(`^\\$\\{${name}:\\?set ${name} in \\.env`));
      }
      expect(defaultOf(env.SYNC_START)).toBe("P2D");
    });

    it("takes every other value from .env, where empty means energy-etl's own default", () => {
      const fixed = ["INFLUX_URL", "STATE_DB"];
      const fromEnv = Object.entries(env).filter(([name]) => !fixed.includes(name));
      for (const [name, value] of fromEnv) {
        expect({ name, value }).toEqual({
          name,
          value: expect.stringMatching(
            new RegExp(`^\\$\\{${name}(:[-?](?:[^{}$]|\\$\\{[^{}]*\\})*)?\\}$`),
          ),
        });
      }
    });

    it("publishes the health port", () => {
      const port = ref("HTTP_PORT:-8080");
      expect(env.HTTP_PORT).toBe(port);
      expect(etl.ports).toEqual([`${ref("BIND_ADDRESS:-127.0.0.1")}:${port}:${port}`]);
    });
  });

  describe("simulator", () => {
    const simulator = service("simulator");

    it("is the same image running simulate on all interfaces", () => {
      expect(simulator.build).toBe(".");
      expect(simulator.image).toBe(service("energy-etl").image);
      expect(simulator.command).toEqual(["simulate", "--host", "0.0.0.0", "--port", "8099"]);
      expect(simulator.ports).toEqual([`${ref("BIND_ADDRESS:-127.0.0.1")}:8099:8099`]);
    });

    it("has a health check that passes against a running simulator and fails without one", async () => {
      const [kind, node, flag, script] = simulator.healthcheck?.test ?? [];
      expect([kind, node, flag]).toEqual(["CMD", "node", "-e"]);
      expect(script).toContain("http://127.0.0.1:8099/");
      const sim = await startSimulator({ host: "127.0.0.1", port: 0 });
      const port = new URL(sim.url).port;
      try {
        expect(await runNodeScript((script ?? "").replace(":8099/", `:${port}/`))).toBe(0);
      } finally {
        await sim.close();
      }
      expect(await runNodeScript((script ?? "").replace(":8099/", `:${port}/`))).toBe(1);
    });
  });

  describe("grafana", () => {
    const grafana = service("grafana");

    it("wants a login (no anonymous access), checks /api/health and waits for InfluxDB", () => {
      expect(grafana.image).toMatch(/^grafana\/grafana:1\d\.\d+\.\d+$/);
      expect(grafana.environment).toMatchObject({
        GF_SECURITY_ADMIN_USER: expect.stringContaining("${GRAFANA_ADMIN_USER"),
        GF_SECURITY_ADMIN_PASSWORD: expect.stringContaining("${GRAFANA_ADMIN_PASSWORD:?"),
        GF_AUTH_ANONYMOUS_ENABLED: "false",
        GF_USERS_ALLOW_SIGN_UP: "false",
      });
      expect(grafana.environment).not.toHaveProperty("GF_AUTH_ANONYMOUS_ORG_ROLE");
      expect(grafana.healthcheck?.test.join(" ")).toContain("http://127.0.0.1:3000/api/health");
      expect(grafana.depends_on.influxdb).toEqual({ condition: "service_healthy" });
      expect(grafana.ports).toEqual([`${ref("BIND_ADDRESS:-127.0.0.1")}:3000:3000`]);
    });

    it("takes INFLUX_TOKEN from influx-init's read-only token file, then runs the image's /run.sh", () => {
      expect(grafana.entrypoint).toEqual([
        "sh",
        "-c",
        'INFLUX_TOKEN="$$(cat /run/influx-tokens/grafana)" && export INFLUX_TOKEN && exec /run.sh',
      ]);
    });

    it("mounts the provisioning and the dashboards read-only", () => {
      expect(grafana.volumes).toEqual(
        expect.arrayContaining([
          "./grafana/provisioning:/etc/grafana/provisioning:ro",
          "./grafana/dashboards:/var/lib/grafana/dashboards:ro",
        ]),
      );
      expect(existsSync("grafana/provisioning/datasources/influxdb.yaml")).toBe(true);
      expect(existsSync("grafana/provisioning/dashboards/dashboards.yaml")).toBe(true);
    });

    it("gets every variable its provisioning files use", () => {
      const provisioning = [
        readFileSync("grafana/provisioning/datasources/influxdb.yaml", "utf8"),
        readFileSync("grafana/provisioning/dashboards/dashboards.yaml", "utf8"),
      ].join("\n");
      const needed = [...interpolatedVariables(provisioning)];
      expect(needed.sort()).toEqual(["INFLUX_BUCKET", "INFLUX_TOKEN"]);
      // INFLUX_TOKEN is exported by the entrypoint (above), the rest comes from the environment.
      const exported = /\bexport (\w+)/.exec(grafana.entrypoint?.[2] ?? "")?.[1];
      expect(needed.filter((v) => !(v in grafana.environment) && v !== exported)).toEqual([]);
    });
  });
});

describe("Grafana provisioning", () => {
  it("provides one InfluxQL datasource on the compose InfluxDB with a token header", () => {
    const datasources = z
      .object({
        apiVersion: z.literal(1),
        datasources: z.array(
          z.object({
            name: z.string(),
            uid: z.string(),
            type: z.string(),
            access: z.string(),
            url: z.string(),
            isDefault: z.boolean(),
            jsonData: z.record(z.string(), z.unknown()),
            secureJsonData: z.record(z.string(), z.string()),
          }),
        ),
      })
      .parse(parse(readFileSync("grafana/provisioning/datasources/influxdb.yaml", "utf8")));
    expect(datasources.datasources).toHaveLength(1);
    const [ds] = datasources.datasources;
    expect(ds).toMatchObject({
      name: "InfluxDB",
      uid: "influxdb",
      type: "influxdb",
      access: "proxy",
      url: "http://influxdb:8086",
      isDefault: true,
    });
    // InfluxQL: no `version: Flux`; InfluxDB 2 maps the bucket to a database of the same name.
    expect(ds?.jsonData.version ?? "InfluxQL").toBe("InfluxQL");
    expect(ds?.jsonData).toMatchObject({
      dbName: ref("INFLUX_BUCKET"),
      httpMode: "POST",
      httpHeaderName1: "Authorization",
    });
    expect(ds?.secureJsonData).toEqual({ httpHeaderValue1: `Token ${ref("INFLUX_TOKEN")}` });
  });

  it("loads the dashboards from the directory compose mounts, as files only", () => {
    const dashboards = z
      .object({
        apiVersion: z.literal(1),
        providers: z.array(
          z.object({
            name: z.string(),
            folder: z.string(),
            type: z.literal("file"),
            allowUiUpdates: z.boolean(),
            options: z.object({ path: z.string() }),
          }),
        ),
      })
      .parse(parse(readFileSync("grafana/provisioning/dashboards/dashboards.yaml", "utf8")));
    expect(dashboards.providers).toHaveLength(1);
    const [provider] = dashboards.providers;
    expect(provider).toMatchObject({ folder: "energy-etl", allowUiUpdates: false });
    const mount = service("grafana")
      .volumes.map((v) => v.split(":"))
      .find(([source]) => source === "./grafana/dashboards");
    expect(provider?.options.path).toBe(mount?.[1]);
  });
});
