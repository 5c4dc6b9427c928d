import { type Command, Option } from "commander";
import { z } from "zod";
import { checked, hostProblem } from "../../config/values.js";
import type { GatewayOutage, Simulator } from "../../simulator/server.js";
import {
  DEFAULT_EXTRA_MEMBERS,
  DEFAULT_NEW_VALUE_SHARE,
  DEFAULT_SIM_API_KEY,
  DEFAULT_SIM_USERS,
} from "../../util/demo-defaults.js";
import { counted } from "../../util/text.js";
import { isoSeconds, parseUtcInstant } from "../../util/utc-time.js";
import { createContext } from "../context.js";
import { type CliIo, UsageError, writeLine } from "../io.js";

const SHARE = "must be a share from 0 to 1";
const share = z.coerce.number({ error: SHARE }).min(0, SHARE).max(1, SHARE);
const count = z.coerce
  .number({ error: "must be a whole number" })
  .int("must be a whole number")
  .min(1, "must be at least 1")
  .max(100_000, "must be at most 100000");

const OUTAGE_FORMAT =
  "expected DEVICE,FROM,TO[,VISIBLE_AT] (ISO date-times; VISIBLE_AT may be never)";

/** `DEVICE,FROM,TO[,VISIBLE_AT]`; the device id may hold commas (the times are the last fields). */
const outageSpec = z.string().transform((spec, ctx): GatewayOutage => {
  const fail = (message: string): never => {
    ctx.addIssue({ code: "custom", message: `${message} in "${spec}": ${OUTAGE_FORMAT}` });
    return z.NEVER;
  };
  const parts = spec.split(",");
  if (parts.length < 3) return fail("too few fields");
  const fourFields = parts.length >= 4 && /^\d{4}-/.test(parts[parts.length - 3] ?? "");
  const [fromText = "", toText = "", visibleText] = parts.slice(fourFields ? -3 : -2);
  const deviceId = parts.slice(0, parts.length - (fourFields ? 3 : 2)).join(",");
  if (deviceId === "") return fail("no device id");
  const from = parseUtcInstant(fromText);
  if (!from) return fail(`FROM "${fromText}" is not an ISO date-time`);
  const to = parseUtcInstant(toText);
  if (!to) return fail(`TO "${toText}" is not an ISO date-time`);
  if (to <= from) return fail("TO must be after FROM");
  const outage = { deviceId, fromS: from.getTime() / 1000, toS: to.getTime() / 1000 };
  if (visibleText === undefined) return outage;
  if (visibleText.trim().toLowerCase() === "never") return { ...outage, visibleAtS: Infinity };
  const visibleAt = parseUtcInstant(visibleText);
  if (!visibleAt) return fail(`VISIBLE_AT "${visibleText}" is not an ISO date-time or never`);
  if (visibleAt < to) return fail("VISIBLE_AT must not be before TO");
  return { ...outage, visibleAtS: visibleAt.getTime() / 1000 };
});

const optionsSchema = z.object({
  port: z.coerce.number().int().min(0).max(65_535),
  host: checked(z.string(), hostProblem),
  seed: z.coerce.number().int(),
  resolution: z.coerce.number().int().min(1).max(86_400),
  tokenTtl: z.coerce.number().int().min(1),
  rateLimit: z.coerce.number().int().min(1).optional(),
  errorRate: share,
  dropRate: share,
  malformedRate: share,
  echoHeaders: z.boolean().optional(),
  poisonRate: share,
  extraMemberRate: share,
  extraMembers: count,
  devices: count,
  newValueShare: share,
  outOfWindowRate: share,
  duplicateRate: share,
  outage: z.array(outageSpec),
  latencyMs: z.coerce.number().int().min(0),
  apiKey: z.string().min(1),
  user: z.string().min(1),
  password: z.string().min(1),
  otp: z.string().min(1),
});

type SimulateOptions = z.infer<typeof optionsSchema>;

/** An epoch second as `2026-11-20T10:00:00Z`. */
const instantText = (s: number): string => isoSeconds(s).replace(/\.000Z$/, "Z");

/** Device ids shown at startup: all of up to 8, else the first 5, "…" and the last. */
function shownDevices(ids: readonly string[]): string {
  if (ids.length <= 8) return ids.join(", ");
  return [...ids.slice(0, 5), "…", ids[ids.length - 1]].join(", ");
}

function dataFaultLines(f: SimulateOptions): string[] {
  const rates: string[] = [];
  if (f.poisonRate) rates.push(`poison rows ${f.poisonRate}`);
  if (f.extraMemberRate)
    rates.push(`extra members ${f.extraMemberRate} (${f.extraMembers} per row)`);
  if (f.outOfWindowRate) rates.push(`out-of-window rows ${f.outOfWindowRate}`);
  if (f.duplicateRate) rates.push(`duplicate rows ${f.duplicateRate}`);
  const lines = rates.length > 0 ? [`  data faults: ${rates.join(", ")}`] : [];
  for (const o of f.outage) {
    const visible =
      o.visibleAtS === undefined
        ? "visible when the uplink is back"
        : o.visibleAtS === Infinity
          ? "never visible (dead gateway)"
          : `visible at ${instantText(o.visibleAtS)}`;
    lines.push(
      `  outage: ${o.deviceId} from ${instantText(o.fromS)} to ${instantText(o.toS)}, ${visible}`,
    );
  }
  return lines;
}

/** A flag of `simulate` with its default (none: undefined, as commander's `option`). */
const flag = (flags: string, description: string, defaultValue?: unknown): Option =>
  new Option(flags, description).default(defaultValue);

/** A `--NAME <share>` flag: the share of `what` (0..1), default 0. */
const rate = (name: string, what: string): Option =>
  flag(`--${name} <share>`, `share of ${what} (0..1)`, "0");

/** The flags of `simulate`, in the order its help lists them (new ones for each program). */
function simulateFlags(): Option[] {
  const demo = DEFAULT_SIM_USERS[0];
  return [
    flag("-p, --port <port>", "port to listen on (0: any free port)", "8099"),
    flag("--host <host>", "address to listen on (0.0.0.0 in a container)", "127.0.0.1"),
    flag("--seed <seed>", "seed of the data and the faults", "1"),
    flag("--resolution <seconds>", "spacing of the records", "60"),
    flag("--devices <n>", "devices to serve: the 4 default ones, then generated site-00005 …", "4"),
    flag(
      "--new-value-share <share>",
      "share of generated devices that list a new value id within 7 days of the start (0..1)",
      String(DEFAULT_NEW_VALUE_SHARE),
    ),
    flag("--token-ttl <seconds>", "validity of access tokens", "43200"),
    flag("--rate-limit <n>", "answer 429 past n requests per second"),
    rate("error-rate", "requests answered 5xx"),
    rate("drop-rate", "connections dropped"),
    rate("malformed-rate", "answers with a truncated body"),
    flag(
      "--echo-headers",
      "error answers echo the request's headers (Authorization, x-api-key) in their body",
    ),
    rate("poison-rate", "rows with a member sent as 1e400"),
    rate("extra-member-rate", "rows with unrequested members"),
    flag("--extra-members <n>", "unrequested members per such row", String(DEFAULT_EXTRA_MEMBERS)),
    rate("out-of-window-rate", "data answers with rows at 2300-01-01 and 0000-01-01"),
    rate("duplicate-rate", "rows sent twice, the copy + 1"),
    flag(
      "--outage <spec>",
      "a gateway outage DEVICE,FROM,TO[,VISIBLE_AT] (VISIBLE_AT: never for a dead gateway); repeatable",
      [] as string[],
    ).argParser((spec: string, previous: string[]) => [...previous, spec]),
    flag("--latency-ms <ms>", "latency added to every answer", "0"),
    flag("--api-key <key>", "API key the simulator accepts", DEFAULT_SIM_API_KEY),
    flag("--user <user>", "username", demo?.user ?? "demo"),
    flag("--password <password>", "the user's password, already set", demo?.password ?? "demo"),
    flag("--otp <otp>", "one-time password for set-password", demo?.otp ?? "123456"),
  ];
}

export function registerSimulateCommand(program: Command, io: CliIo): void {
  const simulate = program
    .command("simulate")
    .description("run the Energy Monitoring Data API simulator (deterministic data from a seed)");
  for (const option of simulateFlags()) simulate.addOption(option);
  simulate.action(async (rawOpts: Record<string, unknown>, command: Command) =>
    runSimulator(io, parseSimulateOptions(rawOpts), command),
  );
}

/** The options, or a usage error naming the first bad flag and what it got. */
function parseSimulateOptions(rawOpts: Record<string, unknown>): SimulateOptions {
  const parsed = optionsSchema.safeParse(rawOpts);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const flag = issue?.path[0];
  const given = typeof flag === "string" ? rawOpts[flag] : undefined;
  const shown = typeof given === "string" ? ` (got "${given}")` : "";
  // the flag of an option key: `tokenTtl` -> `--token-ttl`
  const name = `--${String(flag).replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
  throw new UsageError(`${name}: ${issue?.message ?? "invalid"}${shown}`, { pointAtHelp: true });
}

/** Serves the simulator of `o` until SIGINT/SIGTERM, after lines saying how to reach it. */
async function runSimulator(io: CliIo, o: SimulateOptions, command: Command): Promise<void> {
  const simulator = await simulatorOf(o);
  const devices = simulator.fleet.deviceIds();
  const unknown = o.outage.find((outage) => !simulator.fleet.hasDevice(outage.deviceId));
  if (unknown) {
    throw new UsageError(
      `--outage: unknown device "${unknown.deviceId}" (devices: ${shownDevices(devices)})`,
    );
  }
  const { logger } = createContext(command, io);
  await simulator.listen(o.port, o.host);
  // listening for signals before the startup lines: a client may stop it as soon as it reads them
  const stopped = new Promise<void>((resolve) => {
    const stop = (): void => {
      logger.info("simulator stopping");
      simulator.close().then(resolve, resolve);
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  for (const line of startupLines(o, simulator)) writeLine(io.stdout, line);
  logger.info({ url: simulator.url, seed: o.seed, devices: devices.length }, "simulator started");
  await stopped;
}

/** The simulator of `o`, loaded here: no other command (nor `--help`) loads src/simulator. */
async function simulatorOf(o: SimulateOptions): Promise<Simulator> {
  const server = await import("../../simulator/server.js");
  return new server.Simulator({
    seed: o.seed,
    resolutionS: o.resolution,
    devices: o.devices,
    newValueShare: o.newValueShare,
    // enough to look at, bounded for long runs
    maxLoggedRequests: 10_000,
    tokenTtlS: o.tokenTtl,
    rateLimit: o.rateLimit === undefined ? undefined : { perSecond: o.rateLimit },
    faults: {
      errorRate: o.errorRate,
      dropRate: o.dropRate,
      malformedRate: o.malformedRate,
      echoHeaders: o.echoHeaders === true,
    },
    latencyMs: o.latencyMs,
    apiKey: o.apiKey,
    users: [{ user: o.user, password: o.password, otp: o.otp }],
    dataFaults: {
      outages: o.outage,
      poisonRate: o.poisonRate,
      extraMemberRate: o.extraMemberRate,
      extraMembers: o.extraMembers,
      outOfWindowRate: o.outOfWindowRate,
      duplicateRate: o.duplicateRate,
    },
  });
}

function startupLines(o: SimulateOptions, simulator: Simulator): string[] {
  const devices = simulator.fleet.deviceIds();
  const scheduled = simulator.fleet.scheduledValues();
  const [first, last] = [scheduled[0], scheduled[scheduled.length - 1]];
  return [
    `Energy Monitoring Data API simulator listening on ${simulator.url}`,
    `  ENERGY_API_URL=${simulator.url}`,
    `  ENERGY_API_KEY=${o.apiKey}`,
    `  ENERGY_API_USER=${o.user}`,
    `  ENERGY_API_PASSWORD=${o.password}`,
    `  one-time password for set-password: ${o.otp}`,
    ...(o.echoHeaders ? ["  error answers echo the request headers (--echo-headers)"] : []),
    ...dataFaultLines(o),
    ...(first !== undefined && last !== undefined
      ? [
          `  new value ids: ${counted(scheduled.length, "device")}, from ${instantText(first.atS)} to ${instantText(last.atS)}`,
        ]
      : []),
    `  devices: ${devices.length} (${shownDevices(devices)})`,
  ];
}
