import { z } from "zod";
import type { Config } from "../../config.js";
import {
  apiOfVersion,
  authHeaders,
  credentialSettings,
  type InfluxApi,
  pingInflux,
  writePath,
} from "../../influx/influx-connection.js";
import { quoteIdentifier } from "../../influx/influxql.js";
import { messageOf } from "../../util/errors.js";
import { blocking, type CheckResult, failure, ok, warning } from "./check.js";
import { bodyMessage, type HttpAnswer, type HttpProblem, httpRequest, tlsFix } from "./http.js";

/** The first InfluxDB check: the others are not made when it fails. */
export const REACHABLE = "InfluxDB reachable";
const WRITE = "InfluxDB write";
const RETENTION = "InfluxDB retention";
const RETENTION_FIX =
  "give INFLUX_TOKEN (or the 1.x user, INFLUX_USERNAME) read access too (the rollups and audit read with InfluxQL); the retention " +
  "must be longer than LATE_DATA_HORIZON, SYNC_START and any history you backfill";

/** Where doctor writes its one scratch point (and deletes it again). */
const SCRATCH_MEASUREMENT = "energy_etl_doctor";

export type Influx = Config["influx"];

/** Where points go; with INFLUX_URL, that InfluxDB answers, takes writes, and its retention. */
export async function influxChecks(config: Config): Promise<CheckResult[]> {
  const { influx } = config;
  if (influx.url === "") {
    return [
      config.output.file === ""
        ? failure(
            "output",
            "nothing to write to: neither INFLUX_URL nor OUTPUT_FILE is set " +
              "(sync, backfill and run refuse to start; sync and backfill take --output FILE)",
            "set INFLUX_URL, INFLUX_TOKEN, INFLUX_ORG and INFLUX_BUCKET, or OUTPUT_FILE for " +
              "line protocol in a file",
          )
        : ok(
            "output",
            `INFLUX_URL is not set: points go to the line-protocol file ${config.output.file}`,
          ),
    ];
  }
  const reachable = await reachableCheck(influx);
  if (reachable.status === "failure") {
    return blocking(reachable, "InfluxDB is not reachable", WRITE, RETENTION);
  }
  const missingFix =
    "create it (1.x: CREATE DATABASE, or `energy-etl init`), or fix INFLUX_BUCKET and INFLUX_ORG " +
    "(on InfluxDB 1.x: database[/retention-policy])";
  const write = await writeCheck(influx, { bucket: influx.bucket, check: WRITE, missingFix });
  return [reachable, write, await retentionCheck(influx)];
}

/** One request to InfluxDB with its credentials (authHeaders), bounded by INFLUX_TIMEOUT_MS. */
function request(
  influx: Influx,
  path: string,
  init: { method?: "GET" | "POST"; headers?: Record<string, string>; body?: string } = {},
): Promise<HttpAnswer | HttpProblem> {
  const headers: Record<string, string> = { ...init.headers, ...authHeaders(influx) };
  const url = `${influx.url.replace(/\/+$/, "")}${path}`;
  return httpRequest(url, { ...init, headers }, influx.timeoutMs);
}

/** Why a request did not succeed, for messages: `HTTP 404 on /api/v2/buckets: …`. */
function failed(answer: HttpAnswer | HttpProblem, path: string): string {
  return answer.kind === "problem"
    ? answer.message
    : `HTTP ${answer.status} on ${path}: ${bodyMessage(answer.body)}`;
}

const healthBody = z.object({ status: z.string().optional(), version: z.string().optional() });

type Pinged = { readonly version: string | undefined } | { readonly problem: string };

/**
 * `/ping` asked once per configuration (a doctor run: every check gets the same `influx`): the
 * server's version (what INFLUX_API=auto writes by), or why it gave none.
 */
const pinged = new WeakMap<Influx, Promise<Pinged>>();

function pingOnce(influx: Influx): Promise<Pinged> {
  let ping = pinged.get(influx);
  if (ping === undefined) {
    ping = pingInflux(influx).then(
      (version) => ({ version }),
      (error: unknown) => ({ problem: messageOf(error) }),
    );
    pinged.set(influx, ping);
  }
  return ping;
}

/** The write API in use: INFLUX_API, or for `auto` the version `/ping` names; else why none. */
export async function apiInUse(influx: Influx): Promise<{ api: InfluxApi } | { problem: string }> {
  if (influx.api !== "auto") return { api: influx.api };
  const ping = await pingOnce(influx);
  return "problem" in ping ? ping : { api: apiOfVersion(ping.version) };
}

/** GET /health (InfluxDB 1.8+, 2.x, 3.x) and the one `/ping` (the version, the write API). */
async function reachableCheck(influx: Influx): Promise<CheckResult> {
  const health = await request(influx, "/health");
  if (health.kind === "problem") {
    return failure(
      REACHABLE,
      `${influx.url} is not reachable (${health.message})`,
      health.reason === "tls"
        ? tlsFix("INFLUX_URL")
        : "check INFLUX_URL and that InfluxDB is running",
    );
  }
  const path = health.status === 404 ? "/ping" : "/health";
  const ping = await pingOnce(influx);
  if ("problem" in ping && (path === "/ping" || influx.api === "auto")) {
    return failure(
      REACHABLE,
      `${influx.url} answers HTTP ${health.status} on /health, and /ping: ${ping.problem}`,
      "set INFLUX_URL to InfluxDB's base URL (http://host:8086, without /api/v2)",
    );
  }
  let parsed: z.infer<typeof healthBody> = {};
  try {
    parsed = path === "/health" ? healthBody.parse(JSON.parse(health.body)) : {};
  } catch {
    // not every server answers JSON
  }
  const pingVersion = "version" in ping ? ping.version : undefined;
  const version = pingVersion ?? health.header("x-influxdb-version") ?? parsed.version;
  const resolved = await apiInUse(influx);
  const api = "api" in resolved ? resolved.api : influx.api;
  const said = [
    parsed.status,
    `version ${version ?? "unknown"}`,
    `writes with ${api === "v1" ? "/write (v1)" : "/api/v2/write (v2)"}, INFLUX_API=${influx.api}`,
  ].filter(Boolean);
  const detail = `${influx.url} answers ${path}${said.length > 0 ? ` (${said.join(", ")})` : ""}`;
  if (path === "/health" && (health.status >= 500 || parsed.status === "fail")) {
    return failure(
      REACHABLE,
      `${influx.url} reports itself unhealthy on ${path} (HTTP ${health.status}: ${bodyMessage(health.body)})`,
      "see InfluxDB's log; check that INFLUX_URL points at InfluxDB",
    );
  }
  return ok(REACHABLE, detail);
}

/** One scratch point written to `target` on the api in use and deleted. */
export async function writeCheck(
  influx: Influx,
  target: { readonly bucket: string; readonly check: string; readonly missingFix: string },
): Promise<CheckResult> {
  const { bucket, check } = target;
  const nowS = Math.floor(Date.now() / 1000);
  const resolved = await apiInUse(influx);
  if ("problem" in resolved) {
    return failure(
      check,
      `the write API is unknown (${resolved.problem})`,
      "see InfluxDB reachable",
    );
  }
  const { api } = resolved;
  const answer = await request(influx, writePath(api, { org: influx.org, bucket }), {
    method: "POST",
    headers: { "content-type": "text/plain; charset=utf-8" },
    body: `${SCRATCH_MEASUREMENT} check=1i ${nowS}`,
  });
  if (answer.kind === "problem") {
    return failure(
      check,
      `the write to bucket ${bucket} got no answer (${answer.message})`,
      "check INFLUX_URL and that InfluxDB is running; raise INFLUX_TIMEOUT_MS if it is only slow",
    );
  }
  const { status } = answer;
  const said = `HTTP ${status}: ${bodyMessage(answer.body)}`;
  // the credentials in use (1.8 takes a user on /api/v2/write too), not the API's
  const { token, username } = influx;
  const byToken = token !== "" || (username === "" && api === "v2");
  const who = token !== "" ? "token" : username === "" ? "no user (auth off)" : `user ${username}`;
  if (status === 401 || status === 403) {
    return failure(
      check,
      `${byToken ? "token" : "user"} cannot write bucket ${bucket} (${said})`,
      byToken
        ? `set INFLUX_TOKEN to a token with read and write access to bucket ${bucket} ` +
            "(InfluxDB 2.x: `influx auth create --read-bucket BUCKET_ID --write-bucket BUCKET_ID`)"
        : `set ${credentialSettings("v1")} to a user with read and write access to database ` +
            `${bucket} (InfluxQL: GRANT ALL ON <database> TO <user>)`,
    );
  }
  const server = answer.header("x-influxdb-version");
  if (status === 404 && api === "v2" && server !== undefined && apiOfVersion(server) === "v1") {
    return failure(
      check,
      `InfluxDB ${server} has no /api/v2/write (${said})`,
      "set INFLUX_API=auto (or v1): InfluxDB 1.x is written on /write",
    );
  }
  if (status === 404 || (status === 500 && /retention policy not found/i.test(answer.body))) {
    return failure(check, `InfluxDB has no bucket ${bucket} (${said})`, target.missingFix);
  }
  if (status < 200 || status > 299) {
    return failure(
      check,
      `the write to bucket ${bucket} failed (${said})`,
      "see InfluxDB's log; check that INFLUX_URL points at InfluxDB",
    );
  }
  const wrote = `${who} can write bucket ${bucket} on ${api} (wrote one point to ${SCRATCH_MEASUREMENT}`;
  const deleted = await deleteScratch(influx, api, bucket, nowS);
  return ok(
    check,
    deleted.done
      ? `${wrote}, deleted it with ${deleted.how})`
      : `${wrote}; could not delete it: ${deleted.how})`,
  );
}

const seriesBody = z.object({
  columns: z.array(z.string()),
  values: z.array(z.array(z.unknown())),
});
const influxqlResult = z.object({
  error: z.string().optional(),
  series: z.array(seriesBody).optional(),
});
const influxqlBody = z.object({ results: z.array(influxqlResult) });

/** InfluxQL over /query (1.x natively, 2.x/3.x through their v1 API), as one result. */
export async function influxql(
  influx: Influx,
  q: string,
  method: "GET" | "POST",
): Promise<z.infer<typeof influxqlResult> | string> {
  const [db = "", rp] = influx.bucket.split("/");
  const params = new URLSearchParams({ db, q });
  if (rp) params.set("rp", rp);
  const answer = await request(influx, `/query?${params}`, { method });
  if (answer.kind === "problem" || answer.status !== 200) return failed(answer, "/query");
  try {
    const result = influxqlBody.parse(JSON.parse(answer.body)).results[0];
    if (!result) return "no result from /query";
    return result.error ?? result;
  } catch {
    return `an unexpected answer from /query: ${bodyMessage(answer.body)}`;
  }
}

/** The v2 delete API, else (and on v1 at once) InfluxQL DROP MEASUREMENT (InfluxDB 1.x). */
async function deleteScratch(
  influx: Influx,
  api: InfluxApi,
  bucket: string,
  atS: number,
): Promise<{ done: boolean; how: string }> {
  if (api === "v1") {
    const dropped = await dropScratch(influx);
    return typeof dropped === "string"
      ? { done: false, how: `DROP MEASUREMENT: ${dropped}` }
      : { done: true, how: "InfluxQL DROP MEASUREMENT" };
  }
  const query = new URLSearchParams({ org: influx.org, bucket });
  const answer = await request(influx, `/api/v2/delete?${query}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      start: new Date((atS - 1) * 1000).toISOString(),
      stop: new Date((atS + 1) * 1000).toISOString(),
      predicate: `_measurement="${SCRATCH_MEASUREMENT}"`,
    }),
  });
  if (answer.kind === "answer" && answer.status >= 200 && answer.status <= 299) {
    return { done: true, how: "/api/v2/delete" };
  }
  const v2 = failed(answer, "/api/v2/delete");
  const dropped = await dropScratch(influx);
  if (typeof dropped !== "string") return { done: true, how: "InfluxQL DROP MEASUREMENT" };
  return { done: false, how: `${v2}; DROP MEASUREMENT: ${dropped}` };
}

function dropScratch(influx: Influx): ReturnType<typeof influxql> {
  return influxql(influx, `DROP MEASUREMENT ${quoteIdentifier(SCRATCH_MEASUREMENT)}`, "POST");
}

const retentionRule = z.object({
  everySeconds: z.number(),
  shardGroupDurationSeconds: z.number().optional(),
});
const bucketBody = z.object({
  name: z.string(),
  retentionRules: z.array(retentionRule).optional(),
});
const bucketsBody = z.object({ buckets: z.array(bucketBody) });

/** How long a bucket keeps its data and how long its shard groups are (when InfluxDB says). */
export interface BucketPolicy {
  /** `bucket energy` (InfluxDB 2.x) or `retention policy autogen` (1.x). */
  readonly name: string;
  /** 0: forever. */
  readonly everyS: number;
  readonly shardS?: number;
}

/** A bucket's retention and shard groups by /api/v2/buckets (2.x), else InfluxQL; or why not. */
export async function readPolicy(
  influx: Influx,
  bucket: string,
): Promise<BucketPolicy | { unreadable: string }> {
  const query = new URLSearchParams({ name: bucket });
  if (influx.org !== "") query.set("org", influx.org);
  const answer = await request(influx, `/api/v2/buckets?${query}`);
  if (answer.kind === "answer" && answer.status === 200) {
    try {
      const found = bucketsBody
        .parse(JSON.parse(answer.body))
        .buckets.find((b) => b.name === bucket);
      if (!found) return { unreadable: `/api/v2/buckets does not list bucket ${bucket}` };
      const rule = found.retentionRules?.[0];
      const shardS = rule?.shardGroupDurationSeconds;
      return { name: `bucket ${bucket}`, everyS: rule?.everySeconds ?? 0, shardS };
    } catch {
      return { unreadable: "an unexpected answer from /api/v2/buckets" };
    }
  }
  const v2 = failed(answer, "/api/v2/buckets");
  const policies = await influxql(influx, "SHOW RETENTION POLICIES", "GET");
  if (typeof policies === "string") return { unreadable: `${v2}; ${policies}` };
  const [, rp] = bucket.split("/");
  const series = policies.series?.[0];
  const column = (name: string): number => series?.columns.indexOf(name) ?? -1;
  const row = series?.values.find((v) =>
    rp ? v[column("name")] === rp : v[column("default")] === true,
  );
  const seconds = (name: string): number | undefined => {
    const text = row?.[column(name)];
    return typeof text === "string" ? durationSeconds(text) : undefined;
  };
  const everyS = seconds("duration");
  if (!row || everyS === undefined) {
    return { unreadable: `no retention policy ${rp ?? "(default)"} found` };
  }
  const name = `retention policy ${String(row[column("name")])}`;
  return { name, everyS, shardS: seconds("shardGroupDuration") };
}

async function retentionCheck(influx: Influx): Promise<CheckResult> {
  const policy = await readPolicy(influx, influx.bucket);
  if ("unreadable" in policy) {
    return warning(RETENTION, `not readable (${policy.unreadable})`, RETENTION_FIX);
  }
  return ok(RETENTION, `${policy.name} ${keeps(policy.everyS)}`);
}

/** `keeps data forever`, `keeps data for 90 d`. */
export function keeps(everyS: number): string {
  return everyS === 0 ? "keeps data forever" : `keeps data for ${formatRetention(everyS)}`;
}

/** Seconds as `364 d`, `36 h`, `90 s`. */
export function formatRetention(totalS: number): string {
  if (totalS % 86_400 === 0) return `${totalS / 86_400} d`;
  if (totalS % 3600 === 0) return `${totalS / 3600} h`;
  return `${totalS} s`;
}

/** InfluxQL's duration (`168h0m0s`, `0s`) in seconds. */
function durationSeconds(text: string): number | undefined {
  const units: Record<string, number> = { w: 604_800, d: 86_400, h: 3600, m: 60, s: 1 };
  let total = 0;
  let rest = text;
  for (const [, amount, unit] of text.matchAll(/(\d+)([wdhms])/g)) {
    total += Number(amount) * (units[unit ?? ""] ?? 0);
    rest = rest.replace(`${amount}${unit}`, "");
  }
  return rest === "" ? total : undefined;
}
