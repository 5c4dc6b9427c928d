import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import AjvModule from "ajv";
import { parse } from "yaml";
import { z } from "zod";
import { SETTINGS } from "../../src/config.js";
import {
  DEFAULT_SIM_API_KEY,
  DEFAULT_SIM_USERS,
  startSimulator,
} from "../../src/simulator/server.js";

// ajv is CommonJS: under Node's ESM the default import is module.exports, whose `default` is Ajv.
const Ajv = AjvModule.default;

/** `docker compose config` cannot run here, so the file is checked against the Compose spec. */
/** The compose-spec JSON schema (compose-spec/compose-spec, Apache-2.0; see its NOTICE.md). */
const COMPOSE_SPEC = resolve(process.cwd(), "test/fixtures/compose-spec/compose-spec.json");

const composeText = readFileSync("docker-compose.yml", "utf8");
const envExample = readFileSync(".env.example", "utf8");

/** The parts of a service these tests read; the spec validation covers the rest. */
const serviceSchema = z.object({
  image: z.string().optional(),
  build: z.string().optional(),
  command: z.array(z.string()).optional(),
  profiles: z.array(z.string()).optional(),
  restart: z.string().optional(),
  environment: z.record(z.string(), z.string()).default({}),
  depends_on: z.record(z.string(), z.object({ condition: z.string() })).default({}),
  volumes: z.array(z.string()).default([]),
  ports: z.array(z.string()).default([]),
  healthcheck: z.object({ test: z.array(z.string()) }).optional(),
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

/** `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?error}`, `${VAR:+alt}`. */
const INTERPOLATION = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}/g;

function interpolatedVariables(text: string): Set<string> {
  return new Set([...text.matchAll(INTERPOLATION)].map((m) => m[1] ?? ""));
}

/** The default of an environment value of the form `${VAR:-default}`, or undefined. */
function defaultOf(value: string | undefined): string | undefined {
  const m = /^\$\{[A-Za-z_][A-Za-z0-9_]*:-([^}]*)\}$/.exec(value ?? "");
  return m?.[1];
}

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
    const bare = composeText.split("\n").filter((line) => /\$(?![{$])/.test(line));
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

  it("starts without a .env: every variable has a default, and .env.example repeats the secrets' demo values", () => {
    const uses = [...composeText.matchAll(INTERPOLATION)];
    expect(uses.filter((m) => m[2] === ":?")).toEqual([]);
    for (const name of ["INFLUX_TOKEN", "INFLUX_ADMIN_PASSWORD", "GRAFANA_ADMIN_PASSWORD"]) {
      const defaults = new Set(uses.filter((m) => m[1] === name && m[2] === ":-").map((m) => m[3]));
      const example = new RegExp(`^${name}=(.*)$`, "m").exec(envExample)?.[1] ?? "";
      expect({ name, defaults: [...defaults] }).toEqual({ name, defaults: [example] });
    }
    // InfluxDB's setup refuses passwords shorter than 8 characters.
    const influxPassword = /^INFLUX_ADMIN_PASSWORD=(.*)$/m.exec(envExample)?.[1] ?? "";
    expect(influxPassword.length).toBeGreaterThanOrEqual(8);
  });

  it("has the services influxdb, grafana, energy-etl and simulator; simulator only in demo", () => {
    expect(Object.keys(compose.services).sort()).toEqual(
      ["energy-etl", "grafana", "influxdb", "simulator"].sort(),
    );
    expect(service("simulator").profiles).toEqual(["demo"]);
    for (const name of ["influxdb", "grafana", "energy-etl"]) {
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
      ["etl-state", "grafana-data", "influxdb-data"].sort(),
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
    expect(influx.ports).toContain("8086:8086");
  });

  describe("energy-etl", () => {
    const etl = service("energy-etl");
    const env = etl.environment;

    it("runs the built image as the service, after InfluxDB is healthy, restarting", () => {
      expect(etl.build).toBe(".");
      expect(etl.image).toBe("energy-etl:local");
      expect(etl.command).toEqual(["run"]);
      expect(etl.restart).toBe("unless-stopped");
      expect(etl.depends_on.influxdb).toEqual({ condition: "service_healthy" });
    });

    /**
     * Settings deliberately not passed to energy-etl, with the reason. None: the secrets are passed
     * too, defaulting to the simulator's demo credentials.
     */
    const NOT_PASSED: ReadonlyMap<string, string> = new Map();

    it("passes every setting of the configuration table", () => {
      const names = [...new Set(SETTINGS.map((s) => s.env))].filter((n) => !NOT_PASSED.has(n));
      expect(names.filter((n) => !(n in env))).toEqual([]);
      const unknown = Object.keys(env).filter((n) => !SETTINGS.some((s) => s.env === n));
      expect(unknown).toEqual([]);
    });

    it("writes to the compose InfluxDB and keeps its state on the etl-state volume", () => {
      expect(env.INFLUX_URL).toBe("http://influxdb:8086");
      expect(etl.volumes).toContain("etl-state:/data");
      expect(env.STATE_DB).toBe("/data/state.db");
    });

    it("defaults to the simulator and its demo credentials, and to two days of history", () => {
      const simulatorPort = service("simulator").command?.at(-1);
      expect(defaultOf(env.ENERGY_API_URL)).toBe(`http://simulator:${simulatorPort}`);
      expect(defaultOf(env.ENERGY_API_KEY)).toBe(DEFAULT_SIM_API_KEY);
      expect(defaultOf(env.ENERGY_API_USER)).toBe(DEFAULT_SIM_USERS[0]?.user);
      expect(defaultOf(env.ENERGY_API_PASSWORD)).toBe(DEFAULT_SIM_USERS[0]?.password);
      expect(defaultOf(env.SYNC_START)).toBe("P2D");
    });

    it("takes every other value from .env, where empty means energy-etl's own default", () => {
      const fixed = ["INFLUX_URL", "STATE_DB"];
      const fromEnv = Object.entries(env).filter(([name]) => !fixed.includes(name));
      for (const [name, value] of fromEnv) {
        expect({ name, value }).toEqual({
          name,
          value: expect.stringMatching(new RegExp(`^\\$\\{${name}(:[-?][^}]*)?\\}$`)),
        });
      }
    });

    it("publishes the health port", () => {
      const port = ref("HTTP_PORT:-8080");
      expect(env.HTTP_PORT).toBe(port);
      expect(etl.ports).toEqual([`${port}:${port}`]);
    });
  });

  describe("simulator", () => {
    const simulator = service("simulator");

    it("is the same image running simulate on all interfaces", () => {
      expect(simulator.build).toBe(".");
      expect(simulator.image).toBe(service("energy-etl").image);
      expect(simulator.command).toEqual(["simulate", "--host", "0.0.0.0", "--port", "8099"]);
      expect(simulator.ports).toContain("8099:8099");
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

    it("shows the dashboards without login and waits for InfluxDB", () => {
      expect(grafana.image).toMatch(/^grafana\/grafana:1\d\./);
      expect(grafana.environment).toMatchObject({
        GF_SECURITY_ADMIN_USER: expect.stringContaining("${GRAFANA_ADMIN_USER"),
        GF_SECURITY_ADMIN_PASSWORD: expect.stringContaining("${GRAFANA_ADMIN_PASSWORD"),
        GF_AUTH_ANONYMOUS_ENABLED: "true",
        GF_AUTH_ANONYMOUS_ORG_ROLE: "Viewer",
      });
      expect(grafana.depends_on.influxdb).toEqual({ condition: "service_healthy" });
      expect(grafana.ports).toContain("3000:3000");
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
      expect(needed.filter((v) => !(v in grafana.environment))).toEqual([]);
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
