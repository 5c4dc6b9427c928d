import { z } from "zod";
import { checked, urlProblem } from "../../config/values.js";
import {
  apiOfVersion,
  type InfluxApiSetting,
  InfluxPingError,
  type InfluxServer,
  isV1Server,
  pingInflux,
} from "../../influx/influx-connection.js";
import { registerSecret } from "../../logger.js";
import { messageOf } from "../../util/errors.js";
import type { CommandContext } from "../context.js";
import { type CliIo, UsageError, writeLine } from "../io.js";
import { askLine } from "../prompt.js";
import { checkValue, envValue, type Field, resolveField } from "./prompts.js";

/** Where points go: the compose stack's InfluxDB (today's .env), or one the operator has. */
export const INFLUX_MODES = ["compose", "existing"] as const;
export type InfluxMode = (typeof INFLUX_MODES)[number];

const CREDENTIALS =
  "put the token into INFLUX_TOKEN, or a 1.x user into INFLUX_USERNAME and its password into " +
  "INFLUX_PASSWORD";

/** A database or bucket name: the rollups go to `<name>/rollups`, so no `/` of its own. */
const nameSchema = envValue(z.string().trim()).refine(
  (s) => !s.includes("/"),
  "must be a database or bucket name without / (init puts the rollups into <name>/rollups)",
);

export const INFLUX_FIELDS = {
  url: {
    flag: "--influx-url",
    env: "INFLUX_URL",
    label: "InfluxDB URL",
    schema: checked(envValue(z.string().trim()), (s) => urlProblem(s, CREDENTIALS)),
  },
  token: { env: "INFLUX_TOKEN", label: "InfluxDB token", schema: envValue(z.string().trim()) },
  username: {
    flag: "--influx-username",
    env: "INFLUX_USERNAME",
    label: "InfluxDB user",
    schema: envValue(z.string().trim()),
  },
  password: { env: "INFLUX_PASSWORD", label: "InfluxDB password", schema: envValue(z.string()) },
  org: {
    flag: "--influx-org",
    env: "INFLUX_ORG",
    label: "InfluxDB organisation",
    schema: envValue(z.string().trim()),
  },
} satisfies Record<string, Field>;

const bucketField = (v1Server: boolean): Field => ({
  flag: "--influx-bucket",
  env: "INFLUX_BUCKET",
  label: v1Server ? "InfluxDB database" : "InfluxDB bucket",
  schema: nameSchema,
});

const MODE_QUESTION =
  "InfluxDB: the compose stack's (compose) or one you have (existing)? [compose/existing] ";

/** `--influx`, else asked first on a terminal (empty: compose), else compose as before. */
export async function chooseMode(io: CliIo, flag: InfluxMode | undefined): Promise<InfluxMode> {
  if (flag !== undefined || !io.stdin.isTTY) return flag ?? "compose";
  for (let tries = 1; ; tries++) {
    const answer = (await askLine(io, MODE_QUESTION)).trim().toLowerCase();
    if (answer === "" || answer === "c" || answer === "compose") return "compose";
    if (answer === "e" || answer === "existing") return "existing";
    if (tries >= 3) throw new UsageError("answer compose or existing (or pass --influx)");
    writeLine(io.stderr, "  answer compose or existing; try again.");
  }
}

/** An InfluxDB the operator has, as init found and was told it. */
export interface ExistingInflux extends InfluxServer {
  readonly url: string;
  /** INFLUX_API was set to v1 or v2 (written to .env); else found from `/ping` at each start. */
  readonly forcedApi: boolean;
  /**
   * The server is 1.x (1.8 too, which takes /api/v2/write): InfluxQL makes its database and
   * policy, and it takes a user and password; else (2.x, 3) a token and organisation.
   */
  readonly v1Server: boolean;
  /** 2.x/3: the token and organisation; 1.x: a user and password, or none (no auth). */
  readonly token: string;
  readonly org: string;
  readonly username: string;
  readonly password: string;
  /** The raw points' database (v1) or bucket (v2); the rollups go to `<database>/rollups`. */
  readonly database: string;
  readonly timeoutMs: number;
}

/** A member of what a library threw, without trusting its type (nor its realm). */
function memberOf(value: unknown, key: string): unknown {
  return typeof value === "object" && value !== null ? Reflect.get(value, key) : undefined;
}

/** Why a request got no answer: a timeout, or the system's code (ECONNREFUSED). */
function whyUnanswered(error: unknown, timeoutMs: number): string {
  if (memberOf(error, "name") === "TimeoutError") return `no answer within ${timeoutMs / 1000} s`;
  const code = memberOf(memberOf(error, "cause"), "code");
  return typeof code === "string" ? code : messageOf(error);
}

/** A failure no later step gets past (unreachable, credentials refused): init stops there. */
export class InfluxSetupStop extends Error {
  override readonly name = "InfluxSetupStop";
}

/** The unreachable server's error: where to look, and that nothing was written. */
function unreachable(url: string, why: string): InfluxSetupStop {
  return new InfluxSetupStop(
    `InfluxDB at ${url} is not reachable (${why}): check the InfluxDB URL (--influx-url or ` +
      "INFLUX_URL) and that InfluxDB is running; nothing was written",
  );
}

/**
 * The server's version from `/ping` (asked also when INFLUX_API is set: it decides the set-up;
 * then an answer that is not InfluxDB's leaves it unknown) and its write API: INFLUX_API as set,
 * else the version's.
 */
async function detect(url: string, setting: InfluxApiSetting, timeoutMs: number) {
  try {
    const version = await pingInflux({ url, timeoutMs });
    return { api: setting === "auto" ? apiOfVersion(version) : setting, version };
  } catch (error) {
    if (!(error instanceof InfluxPingError))
      throw unreachable(url, whyUnanswered(error, timeoutMs));
    if (setting === "auto") throw new InfluxSetupStop(`${error.message}; nothing was written`);
    return { api: setting, version: undefined };
  }
}

/** A 1.x user: the flag, the setting, or asked (empty: no auth); off a terminal none. */
async function gatherUser(io: CliIo, flag: string | undefined, setting: string): Promise<string> {
  const field = INFLUX_FIELDS.username;
  if (flag !== undefined) return checkValue(field, flag, "flag");
  if (setting !== "") return checkValue(field, setting, "setting");
  if (!io.stdin.isTTY) return "";
  const answer = await askLine(io, "InfluxDB user (empty: no auth): ");
  return answer.trim() === "" ? "" : checkValue(field, answer, "prompt");
}

/** The database or bucket: the flag or setting, else asked with `energy` as the default. */
async function gatherDatabase(io: CliIo, v1Server: boolean, context: CommandContext) {
  const field = bucketField(v1Server);
  const { config, origins } = context;
  const origin = origins.get("influx.bucket");
  if (origin !== undefined) {
    return checkValue(field, config.influx.bucket, origin.startsWith("flag") ? "flag" : "setting");
  }
  if (!io.stdin.isTTY) return checkValue(field, config.influx.bucket, "setting");
  const answer = (await askLine(io, `${field.label} [energy]: `)).trim();
  return checkValue(field, answer === "" ? "energy" : answer, "prompt");
}

/** The credentials: a token and organisation (2.x, 3), or on any 1.x a user and password. */
async function gatherCredentials(
  io: CliIo,
  v1Server: boolean,
  usernameFlag: string | undefined,
  { config }: CommandContext,
) {
  const { influx } = config;
  if (!v1Server) {
    const token = await resolveField(io, INFLUX_FIELDS.token, undefined, influx.token);
    registerSecret(token);
    const org = await resolveField(io, INFLUX_FIELDS.org, undefined, influx.org);
    return { token, org, username: "", password: "" };
  }
  const username = await gatherUser(io, usernameFlag, influx.username);
  if (username === "") return { token: "", org: "", username, password: "" };
  if (influx.password !== "") registerSecret(influx.password);
  const password = await resolveField(io, INFLUX_FIELDS.password, undefined, influx.password);
  registerSecret(password);
  registerSecret(`${username}:${password}`);
  return { token: "", org: "", username, password };
}

/** URL, the server's API (from `/ping`), credentials and database of an existing InfluxDB. */
export async function gatherInflux(
  io: CliIo,
  usernameFlag: string | undefined,
  context: CommandContext,
): Promise<ExistingInflux> {
  const { influx } = context.config;
  const url = await resolveField(io, INFLUX_FIELDS.url, undefined, influx.url);
  const { timeoutMs } = influx;
  const server = await detect(url, influx.api, timeoutMs);
  const how = server.api === "v1" ? "/write?db=&rp= (1.x)" : "/api/v2/write";
  const version = server.version === undefined ? "" : `, version ${server.version}`;
  writeLine(io.stdout, `InfluxDB: ${url}${version}: writes through ${how}`);
  const v1Server = isV1Server(server);
  const credentials = await gatherCredentials(io, v1Server, usernameFlag, context);
  const database = await gatherDatabase(io, v1Server, context);
  const forcedApi = influx.api !== "auto";
  return { url, ...server, forcedApi, v1Server, ...credentials, database, timeoutMs };
}
