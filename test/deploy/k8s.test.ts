import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { parseAllDocuments, parse as parseYaml } from "yaml";
import { z } from "zod";
import { SETTINGS } from "../../src/config.js";
import { runSync } from "../../src/pipeline/sync.js";
import type { Simulator } from "../../src/simulator/server.js";
import { openTestPipeline, pipelineEnv } from "../support/pipeline.js";
import { startTestSimulator } from "../support/simulator.js";

/** `kubectl apply -k` cannot run here: the base is rendered by a small kustomize below. */
const BASE = "deploy/k8s";

const kustomizationSchema = z.object({
  apiVersion: z.literal("kustomize.config.k8s.io/v1beta1"),
  kind: z.literal("Kustomization"),
  resources: z.array(z.string()),
  labels: z.array(z.object({ pairs: z.record(z.string(), z.string()) })).default([]),
  images: z
    .array(z.object({ name: z.string(), newName: z.string().optional(), newTag: z.string() }))
    .default([]),
});
const kustomization = kustomizationSchema.parse(
  parseYaml(readFileSync(join(BASE, "kustomization.yaml"), "utf8")),
);

const objectSchema = z
  .object({
    apiVersion: z.string(),
    kind: z.string(),
    metadata: z
      .object({
        name: z.string(),
        labels: z.record(z.string(), z.string()).optional(),
        annotations: z.record(z.string(), z.string()).optional(),
      })
      .passthrough(),
  })
  .passthrough();
type K8sObject = z.output<typeof objectSchema>;

const probeSchema = z.object({
  httpGet: z.object({ path: z.string(), port: z.union([z.string(), z.number()]) }),
  periodSeconds: z.number().int().positive(),
  timeoutSeconds: z.number().int().positive(),
  failureThreshold: z.number().int().positive(),
});
const envVarSchema = z.union([
  z.object({ name: z.string(), value: z.string() }).strict(),
  z
    .object({
      name: z.string(),
      valueFrom: z.object({ secretKeyRef: z.object({ name: z.string(), key: z.string() }) }),
    })
    .strict(),
]);
const containerSchema = z.object({
  name: z.string(),
  image: z.string(),
  command: z.array(z.string()),
  envFrom: z.array(z.object({ configMapRef: z.object({ name: z.string() }) })),
  env: z.array(envVarSchema),
  ports: z.array(z.object({ name: z.string(), containerPort: z.number() })),
  livenessProbe: probeSchema,
  readinessProbe: probeSchema,
  resources: z.object({
    requests: z.object({ cpu: z.string(), memory: z.string() }).strict(),
    limits: z.object({ memory: z.string() }).strict(),
  }),
  volumeMounts: z.array(z.object({ name: z.string(), mountPath: z.string() })),
});
const statefulSetSpecSchema = z.object({
  serviceName: z.string(),
  replicas: z.number().int().positive(),
  selector: z.object({ matchLabels: z.record(z.string(), z.string()) }),
  template: z.object({
    metadata: z.object({ labels: z.record(z.string(), z.string()) }),
    spec: z.object({
      terminationGracePeriodSeconds: z.number().int().positive(),
      securityContext: z
        .object({ runAsNonRoot: z.literal(true), runAsUser: z.number() })
        .passthrough(),
      containers: z.array(containerSchema).length(1),
    }),
  }),
  volumeClaimTemplates: z.array(
    z.object({
      metadata: z.object({ name: z.string() }),
      spec: z.object({
        accessModes: z.array(z.string()),
        resources: z.object({ requests: z.object({ storage: z.string() }) }),
      }),
    }),
  ),
});

/** The base rendered as kustomize would: resources, then labels and images applied. */
function render(): K8sObject[] {
  const objects = kustomization.resources.flatMap((file) =>
    parseAllDocuments(readFileSync(join(BASE, file), "utf8")).map((doc) =>
      objectSchema.parse(doc.toJS()),
    ),
  );
  for (const object of objects) {
    for (const { pairs } of kustomization.labels) {
      object.metadata.labels = { ...object.metadata.labels, ...pairs };
    }
  }
  for (const object of objects) {
    const containers = (
      object as { spec?: { template?: { spec?: { containers?: { image: string }[] } } } }
    ).spec?.template?.spec?.containers;
    for (const container of containers ?? []) {
      const [name] = container.image.split(":");
      const image = kustomization.images.find((i) => i.name === name);
      if (image) container.image = `${image.newName ?? image.name}:${image.newTag}`;
    }
  }
  return objects;
}

const objects = render();

function only(kind: string): K8sObject {
  const found = objects.filter((o) => o.kind === kind);
  if (found.length !== 1) throw new Error(`expected one ${kind}, found ${found.length}`);
  return found[0] as K8sObject;
}

const statefulSet = statefulSetSpecSchema.parse(only("StatefulSet").spec);
const pod = statefulSet.template.spec;
const [container] = pod.containers;
if (!container) throw new Error("no container");
const configMap = z.object({ data: z.record(z.string(), z.string()) }).parse(only("ConfigMap"));
const secret = z
  .object({ type: z.literal("Opaque"), stringData: z.record(z.string(), z.string()) })
  .parse(only("Secret"));
const secretName = only("Secret").metadata.name;

/** The container's environment: plain values, ConfigMap values, and secret references. */
function plainEnv(): Map<string, string> {
  const plain = new Map(Object.entries(configMap.data));
  for (const v of container?.env ?? []) if ("value" in v) plain.set(v.name, v.value);
  return plain;
}

describe("deploy/k8s kustomize base", () => {
  it("lists every manifest of the directory, each once, and nothing else", () => {
    const files = readdirSync(BASE)
      .filter((f) => /\.ya?ml$/.test(f) && f !== "kustomization.yaml")
      .sort();
    expect([...kustomization.resources].sort()).toEqual(files);
    expect(new Set(kustomization.resources).size).toBe(kustomization.resources.length);
  });

  it("validates every rendered manifest against the Kubernetes schemas (kubernetes-models)", () => {
    const validate = (object: K8sObject): void => {
      const data = JSON.parse(JSON.stringify(object)) as Record<string, unknown>;
      const model = {
        StatefulSet: () => new StatefulSet(data),
        PodDisruptionBudget: () => new PodDisruptionBudget(data),
        ConfigMap: () => new ConfigMap(data),
        Secret: () => new Secret(data),
        Service: () => new Service(data),
      }[object.kind];
      if (!model) throw new Error(`no schema for ${object.kind}`);
      model().validate();
    };
    for (const object of objects) expect(() => validate(object)).not.toThrow();
    // the validator does refuse a wrong manifest: replicas as a string
    const broken = JSON.parse(JSON.stringify(only("StatefulSet"))) as K8sObject & {
      spec: { replicas: unknown };
    };
    broken.spec.replicas = "3";
    expect(() => validate(broken)).toThrow(/replicas must be integer/);
  });

  it("renders to a ConfigMap, a Secret, a Service, a StatefulSet and a PodDisruptionBudget", () => {
    expect(objects.map((o) => `${o.apiVersion} ${o.kind}`).sort()).toEqual(
      [
        "apps/v1 StatefulSet",
        "policy/v1 PodDisruptionBudget",
        "v1 ConfigMap",
        "v1 Secret",
        "v1 Service",
      ].sort(),
    );
    for (const o of objects)
      expect(o.metadata.labels).toMatchObject({ "app.kubernetes.io/part-of": "energy-etl" });
    expect(container?.image).toMatch(/^[\w./-]+:\d+\.\d+\.\d+$/);
  });

  it("selects the pods by labels they carry", () => {
    const podLabels = statefulSet.template.metadata.labels;
    expect(podLabels).toMatchObject(statefulSet.selector.matchLabels);
    const service = z
      .object({ spec: z.object({ selector: z.record(z.string(), z.string()) }) })
      .parse(only("Service"));
    expect(podLabels).toMatchObject(service.spec.selector);
    const pdb = z
      .object({
        spec: z.object({
          maxUnavailable: z.number().optional(),
          minAvailable: z.number().optional(),
          selector: z.object({ matchLabels: z.record(z.string(), z.string()) }),
        }),
      })
      .parse(only("PodDisruptionBudget"));
    expect(podLabels).toMatchObject(pdb.spec.selector.matchLabels);
    expect(pdb.spec.maxUnavailable ?? statefulSet.replicas - (pdb.spec.minAvailable ?? 0)).toBe(1);
    expect(statefulSet.serviceName).toBe(only("Service").metadata.name);
  });

  it("takes SHARD_INDEX from the pod ordinal and SHARD_COUNT from the replica count", async () => {
    const env = plainEnv();
    expect(env.get("SHARD_COUNT")).toBe(String(statefulSet.replicas));
    expect(env.has("SHARD_INDEX")).toBe(false);
    const [sh, flag, script = ""] = container?.command ?? [];
    expect([sh, flag]).toEqual(["sh", "-c"]);
    // the Dockerfile's ENTRYPOINT, then `run`
    const dockerfile = readFileSync("Dockerfile", "utf8");
    const entrypoint = JSON.parse(
      /^ENTRYPOINT\s+(\[.*\])$/m.exec(dockerfile)?.[1] ?? "[]",
    ) as string[];
    expect(script.endsWith(`exec ${entrypoint.join(" ")} run`)).toBe(true);
    // the shell part, run for real with the pod names of the StatefulSet
    const { execFileSync } = await import("node:child_process");
    const prefix = script.slice(0, script.indexOf("exec "));
    for (let ordinal = 0; ordinal < statefulSet.replicas + 10; ordinal++) {
      const out = execFileSync("sh", ["-c", `${prefix} printf %s "$SHARD_INDEX"`], {
        env: {
          PATH: process.env.PATH ?? "",
          HOSTNAME: `${only("StatefulSet").metadata.name}-${ordinal}`,
        },
      }).toString();
      expect(out).toBe(String(ordinal));
    }
  });

  it("keeps each pod's state on its own volume", () => {
    const [claim] = statefulSet.volumeClaimTemplates;
    expect(claim?.spec.accessModes).toEqual(["ReadWriteOnce"]);
    const mount = container?.volumeMounts.find((m) => m.name === claim?.metadata.name);
    expect(plainEnv().get("STATE_DB")).toBe(`${mount?.mountPath}/state.db`);
  });

  it("probes liveness on /healthz and readiness on /readyz of the HTTP port", () => {
    const env = plainEnv();
    const port = container?.ports.find((p) => p.name === "http");
    expect(String(port?.containerPort)).toBe(env.get("HTTP_PORT"));
    expect(env.get("HTTP_HOST")).toBe("0.0.0.0");
    expect(container?.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "http" });
    expect(container?.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "http" });
  });

  it("requests and limits the memory the benchmarks measured (~210 MB steady, 282 MB peak at 10,000 devices)", () => {
    expect(container?.resources).toEqual({
      requests: { cpu: "100m", memory: "256Mi" },
      limits: { memory: "384Mi" },
    });
    // MEMORY_BUDGET_MB ends the work with a clear error before the kernel kills the pod
    const budget = Number(plainEnv().get("MEMORY_BUDGET_MB"));
    expect(budget).toBeGreaterThan(282);
    expect(budget).toBeLessThan(384);
  });

  it("gives a shutdown more time than SHUTDOWN_TIMEOUT_MS", () => {
    const timeoutMs = Number(plainEnv().get("SHUTDOWN_TIMEOUT_MS") ?? 8000);
    expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(timeoutMs);
    expect(pod.terminationGracePeriodSeconds * 1000 - timeoutMs).toBeGreaterThanOrEqual(5000);
  });

  it("passes every secret from the Secret, none as a plain value, and only known settings", () => {
    const secrets = SETTINGS.filter((s) => s.secret).map((s) => s.env);
    const plain = plainEnv();
    expect(secrets.filter((name) => plain.has(name))).toEqual([]);
    const refs = (container?.env ?? []).flatMap((v) =>
      "valueFrom" in v ? [[v.name, v.valueFrom.secretKeyRef] as const] : [],
    );
    for (const [name, ref] of refs) {
      expect(ref).toEqual({ name: secretName, key: name });
      expect(Object.keys(secret.stringData)).toContain(name);
    }
    expect(refs.map(([name]) => name).sort()).toEqual(Object.keys(secret.stringData).sort());
    for (const value of Object.values(secret.stringData)) expect(value).toBe("REPLACE_ME");
    const known = new Set(SETTINGS.map((s) => s.env));
    expect([...plain.keys(), ...refs.map(([n]) => n)].filter((n) => !known.has(n))).toEqual([]);
    expect(only("Secret").metadata.annotations ?? {}).toEqual({});
  });

  it("exposes /metrics to Prometheus through the Service's scrape annotations", () => {
    const service = only("Service");
    const spec = z
      .object({
        clusterIP: z.literal("None"),
        publishNotReadyAddresses: z.literal(true),
        ports: z.array(z.object({ name: z.string(), port: z.number() })),
      })
      .parse((service as { spec?: unknown }).spec);
    expect(service.metadata.annotations).toEqual({
      "prometheus.io/scrape": "true",
      "prometheus.io/port": plainEnv().get("HTTP_PORT"),
      "prometheus.io/path": "/metrics",
    });
    expect(spec.ports.map((p) => String(p.port))).toContain(plainEnv().get("HTTP_PORT"));
  });
});

/** One data point of a line-protocol file: its device, series and time. */
interface WrittenPoint {
  readonly device: string;
  readonly key: string;
  readonly timeS: number;
}

/** The data points (not energy-etl's own etl_* measurements) of a line-protocol file. */
function writtenPoints(file: string): WrittenPoint[] {
  const text = existsSync(file) ? readFileSync(file, "utf8") : "";
  return text
    .split("\n")
    .filter((line) => line !== "" && !line.startsWith("etl_"))
    .map((line) => {
      const device = /(?:^|,)device_id=((?:\\.|[^,\s])+)/.exec(line)?.[1] ?? "";
      const series = line.slice(0, line.search(/(?<!\\) /));
      const timeS = Number(line.slice(line.lastIndexOf(" ") + 1));
      return { device, key: `${series} ${timeS}`, timeS };
    })
    .filter((p) => p.device !== "");
}

describe("re-sharding on the real pipeline: 3 shards -> 4", () => {
  const T0 = Date.parse("2026-03-02T12:00:00Z");
  const HOUR = 3_600_000;
  let nowMs = T0;
  let sim: Simulator;
  const dir = mkdtempSync(join(tmpdir(), "energy-etl-reshard-"));

  beforeAll(async () => {
    sim = await startTestSimulator({ now: () => nowMs, resolutionS: 900, devices: 12 });
  });
  afterAll(async () => {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** One sync of shard `index` of `count` at the current clock, into its own state and file. */
  async function syncShard(
    name: string,
    count: number,
    index: number,
    extra: Record<string, string> = {},
  ): Promise<string[]> {
    const env = pipelineEnv(
      sim,
      { url: "", token: "", org: "", bucket: "" },
      join(dir, `state-${name}.db`),
      {
        INFLUX_URL: "",
        OUTPUT_FILE: join(dir, `${name}.lp`),
        OUTPUT_FILE_MAX_BYTES: String(1024 ** 3),
        SHARD_COUNT: String(count),
        SHARD_INDEX: String(index),
        SYNC_START: "P1D",
        LOG_LEVEL: "warn",
        ...extra,
      },
    );
    const { pipeline } = await openTestPipeline(env, () => new Date(nowMs));
    try {
      const result = await runSync(pipeline);
      expect(result.errors).toBe(0);
      return result.devices.map((d) => d.deviceId);
    } finally {
      await pipeline.close();
    }
  }

  it("syncs every device on exactly one shard, loses nothing, re-reads no more than SYNC_START", async () => {
    // before: 3 shards (pods energy-etl-0..2), two ticks an hour apart; and one process alone
    const before: string[][] = [];
    for (const tick of [T0, T0 + HOUR]) {
      nowMs = tick;
      before.length = 0;
      for (let i = 0; i < 3; i++) before.push(await syncShard(`shard-${i}`, 3, i));
      await syncShard("single", 1, 0);
    }
    const devices = before.flat().sort();
    expect(devices).toHaveLength(12);
    expect(new Set(devices).size).toBe(12);
    const ownerBefore = new Map(before.flatMap((ids, shard) => ids.map((id) => [id, shard])));
    const beforePoints = [0, 1, 2].flatMap((i) => writtenPoints(join(dir, `shard-${i}.lp`)));

    // after: 4 shards, two hours later; pods 0..2 keep their state, pod 3 starts empty; the
    // re-shard procedure's SYNC_START covers the time since the last sync with margin
    nowMs = T0 + 3 * HOUR;
    for (let i = 0; i < 3; i++) rmSync(join(dir, `shard-${i}.lp`));
    const after: string[][] = [];
    for (let i = 0; i < 4; i++)
      after.push(await syncShard(`shard-${i}`, 4, i, { SYNC_START: "PT6H" }));
    await syncShard("single", 1, 0);

    // every device synced by exactly one shard
    const afterDevices = after.flat().sort();
    expect(afterDevices).toEqual(devices);
    const moved = after.flatMap((ids, shard) => ids.filter((id) => ownerBefore.get(id) !== shard));
    expect(moved.length).toBeGreaterThan(0);

    // nothing lost: the shards together wrote every point one process alone wrote
    const afterPoints = [0, 1, 2, 3].flatMap((i) => writtenPoints(join(dir, `shard-${i}.lp`)));
    const sharded = new Set([...beforePoints, ...afterPoints].map((p) => p.key));
    const single = writtenPoints(join(dir, "single.lp")).map((p) => p.key);
    expect(single.length).toBeGreaterThan(0);
    expect(single.filter((key) => !sharded.has(key))).toEqual([]);

    // re-reads: a device that kept its shard re-reads only its lookback (PT1H); a moved one
    // (no cursor on its new shard) reads from SYNC_START (PT6H), never its whole history
    const afterS = (T0 + 3 * HOUR) / 1000;
    for (const device of afterDevices) {
      const points = afterPoints.filter((p) => p.device === device);
      const earliest = Math.min(...points.map((p) => p.timeS));
      const newestBefore = Math.max(
        ...beforePoints.filter((p) => p.device === device).map((p) => p.timeS),
      );
      const bound = moved.includes(device) ? afterS - 6 * 3600 : newestBefore - 3600;
      expect({ device, earliest: earliest >= bound }).toEqual({ device, earliest: true });
    }
  });
});
