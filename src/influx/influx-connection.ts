import { InfluxDB } from "@influxdata/influxdb-client";
import { z } from "zod";
import { databaseAndPolicy } from "../config/values.js";
import { excerpt } from "../util/text.js";
import { clampTimerMs } from "../util/timers.js";

/** How points are written: `v1` is `/write?db=&rp=` (InfluxDB 1.x), `v2` is `/api/v2/write`. */
export type InfluxApi = "v1" | "v2";

/** INFLUX_API as set: `auto` asks the server (see {@link resolveInfluxApi}). */
export type InfluxApiSetting = InfluxApi | "auto";

/** Where InfluxDB is and who we are to it: a token, or a 1.x user and password, or nothing. */
export interface InfluxConnection {
  readonly url: string;
  readonly token: string;
  /** A 1.x user (INFLUX_USERNAME), taken when there is no token; empty or absent: none. */
  readonly username?: string;
  readonly password?: string;
  /** Timeout of one request. */
  readonly timeoutMs: number;
}

/**
 * The Authorization header for `connection`: a token as `Token <token>`; without one, a 1.x user
 * and password as HTTP Basic (what 1.x takes beside `u=`/`p=`, and never in a URL we log); else none.
 */
export function authHeaders(connection: InfluxConnection): Record<string, string> {
  const { token, username = "", password = "" } = connection;
  if (token !== "") return { authorization: `Token ${token}` };
  if (username === "") return {};
  return { authorization: `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}` };
}

/** influxdb-client's client for `connection`, with {@link authHeaders}. */
export function influxClient(connection: InfluxConnection): InfluxDB {
  const { url, timeoutMs } = connection;
  return new InfluxDB({ url, timeout: timeoutMs, headers: authHeaders(connection) });
}

/**
 * The settings to fix when InfluxDB refuses our credentials: those `connection` uses (a token, or
 * a user and password), else (none given, or no connection) those of `api`.
 */
export function credentialSettings(
  api: InfluxApi,
  connection?: Pick<InfluxConnection, "token" | "username">,
): string {
  if (connection?.token) return "INFLUX_TOKEN";
  if (connection?.username) return "INFLUX_USERNAME and INFLUX_PASSWORD";
  return api === "v1" ? "INFLUX_USERNAME and INFLUX_PASSWORD" : "INFLUX_TOKEN";
}

/** The server's version from `/ping` (`X-Influxdb-Version`), and the write API it takes. */
export interface InfluxServer {
  readonly api: InfluxApi;
  /** As the server says it (`1.6.7`, `v2.7.4`); undefined when it says none. */
  readonly version: string | undefined;
}

/** The write API for a version: 1.x before 1.8 has no `/api/v2/write`; 1.8+, 2.x and 3 do. */
export function apiOfVersion(version: string | undefined): InfluxApi {
  const match = /^v?(\d+)\.(\d+)/.exec(version ?? "");
  if (!match) return "v2";
  const [major, minor] = [Number(match[1]), Number(match[2])];
  return major === 1 && minor < 8 ? "v1" : "v2";
}

/** `/ping` did not answer as InfluxDB does (not 2xx, or a version header that is no version). */
export class InfluxPingError extends Error {
  override readonly name = "InfluxPingError";
}

/** The server is InfluxDB 1.x (any minor, 1.8 too): set up with InfluxQL, user and password. */
export const isV1Server = (server: InfluxServer): boolean =>
  server.api === "v1" || /^v?1\./.test(server.version ?? "");

/** X-Influxdb-Version: `1.8.10`, `v2.7.4`, `3.0.1`; absent on servers that name none. */
const versionHeader = z
  .string()
  .regex(/^v?\d+\.\d+/, "is not a version")
  .optional();

/** `base` + `path` as the writer joins them: a path prefix of INFLUX_URL is kept. */
export const influxUrlOf = (base: string, path: string): string =>
  `${base.replace(/\/+$/, "")}${path}`;

/**
 * The server's version by `GET /ping` (no auth needed on any version), under INFLUX_URL's path as
 * the writer writes there. Throws InfluxPingError on an answer other than 2xx or a version header
 * that is none; else what the request threw (unreachable, timeout): the caller words it.
 */
export async function pingInflux(
  connection: Pick<InfluxConnection, "url" | "timeoutMs">,
  signal?: AbortSignal,
): Promise<string | undefined> {
  const timeout = AbortSignal.timeout(clampTimerMs(connection.timeoutMs));
  const url = influxUrlOf(connection.url, "/ping");
  const answer = await fetch(url, {
    signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
  });
  await answer.body?.cancel();
  const fix =
    "set INFLUX_URL to InfluxDB's base URL (with the path prefix of a proxy before it), or " +
    "INFLUX_API=v1 or v2 to name its write API";
  if (answer.status < 200 || answer.status > 299) {
    throw new InfluxPingError(
      `${url} answered HTTP ${answer.status}, not InfluxDB's /ping (2xx): ${fix}`,
    );
  }
  const header = answer.headers.get("x-influxdb-version") ?? undefined;
  const version = versionHeader.safeParse(header);
  if (!version.success) {
    throw new InfluxPingError(
      `${url} names its version "${excerpt(header ?? "")}" (X-Influxdb-Version), not a version: ${fix}`,
    );
  }
  return version.data;
}

/**
 * INFLUX_API resolved: `v1` or `v2` as set, or for `auto` the server's version by {@link
 * pingInflux}. A server that names no version is taken for `v2`.
 */
export async function resolveInfluxApi(
  connection: InfluxConnection,
  setting: InfluxApiSetting,
  signal?: AbortSignal,
): Promise<InfluxServer> {
  if (setting !== "auto") return { api: setting, version: undefined };
  const version = await pingInflux(connection, signal);
  return { api: apiOfVersion(version), version };
}

/** The write request's path and query for `bucket` (`database[/retention-policy]` on `v1`). */
export function writePath(
  api: InfluxApi,
  target: { readonly org: string; readonly bucket: string },
): string {
  if (api === "v2") {
    const { org, bucket } = target;
    return `/api/v2/write?${new URLSearchParams({ org, bucket, precision: "s" })}`;
  }
  const { database, retentionPolicy } = databaseAndPolicy(target.bucket);
  const query = new URLSearchParams({ db: database, precision: "s" });
  if (retentionPolicy !== undefined) query.set("rp", retentionPolicy);
  return `/write?${query}`;
}
