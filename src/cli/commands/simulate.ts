import type { Command } from "commander";
import { z } from "zod";
import { createLogger } from "../../logger.js";
import { DEFAULT_SIM_API_KEY, DEFAULT_SIM_USERS, startSimulator } from "../../simulator/server.js";
import { type CliIo, UsageError, writeLine } from "../io.js";

const share = z.coerce.number().min(0).max(1);
const optionsSchema = z.object({
  port: z.coerce.number().int().min(0).max(65_535),
  host: z.string().min(1),
  seed: z.coerce.number().int(),
  resolution: z.coerce.number().int().min(1).max(86_400),
  tokenTtl: z.coerce.number().int().min(1),
  rateLimit: z.coerce.number().int().min(1).optional(),
  errorRate: share,
  dropRate: share,
  malformedRate: share,
  latencyMs: z.coerce.number().int().min(0),
  apiKey: z.string().min(1),
  user: z.string().min(1),
  password: z.string().min(1),
  otp: z.string().min(1),
});

/** `simulate`: the API simulator as a server, for the demo and for trying energy-etl out. */
export function registerSimulateCommand(program: Command, io: CliIo): void {
  const demo = DEFAULT_SIM_USERS[0];
  program
    .command("simulate")
    .description("run the Energy Monitoring Data API simulator (deterministic data from a seed)")
    .option("-p, --port <port>", "port to listen on (0: any free port)", "8099")
    .option("--host <host>", "address to listen on (0.0.0.0 in a container)", "127.0.0.1")
    .option("--seed <seed>", "seed of the data and the faults", "1")
    .option("--resolution <seconds>", "spacing of the records", "60")
    .option("--token-ttl <seconds>", "validity of access tokens", "43200")
    .option("--rate-limit <n>", "answer 429 past n requests per second")
    .option("--error-rate <share>", "share of requests answered 5xx (0..1)", "0")
    .option("--drop-rate <share>", "share of connections dropped (0..1)", "0")
    .option("--malformed-rate <share>", "share of answers with a truncated body (0..1)", "0")
    .option("--latency-ms <ms>", "latency added to every answer", "0")
    .option("--api-key <key>", "API key the simulator accepts", DEFAULT_SIM_API_KEY)
    .option("--user <user>", "username", demo?.user ?? "demo")
    .option("--password <password>", "the user's password, already set", demo?.password ?? "demo")
    .option("--otp <otp>", "one-time password for set-password", demo?.otp ?? "123456")
    .action(async (rawOpts: unknown) => {
      const parsed = optionsSchema.safeParse(rawOpts);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new UsageError(`--${String(issue?.path[0])}: ${issue?.message ?? "invalid"}`);
      }
      const o = parsed.data;
      const logger = createLogger("info");
      const simulator = await startSimulator({
        port: o.port,
        host: o.host,
        seed: o.seed,
        resolutionS: o.resolution,
        tokenTtlS: o.tokenTtl,
        rateLimit: o.rateLimit === undefined ? undefined : { perSecond: o.rateLimit },
        faults: { errorRate: o.errorRate, dropRate: o.dropRate, malformedRate: o.malformedRate },
        latencyMs: o.latencyMs,
        apiKey: o.apiKey,
        users: [{ user: o.user, password: o.password, otp: o.otp }],
      });
      writeLine(io.stdout, `Energy Monitoring Data API simulator listening on ${simulator.url}`);
      writeLine(io.stdout, `  ENERGY_API_URL=${simulator.url}`);
      writeLine(io.stdout, `  ENERGY_API_KEY=${o.apiKey}`);
      writeLine(io.stdout, `  ENERGY_API_USER=${o.user}`);
      writeLine(io.stdout, `  ENERGY_API_PASSWORD=${o.password}`);
      writeLine(io.stdout, `  one-time password for set-password: ${o.otp}`);
      writeLine(io.stdout, `  devices: ${simulator.fleet.deviceIds().join(", ")}`);
      logger.info({ url: simulator.url, seed: o.seed }, "simulator started");
      await new Promise<void>((resolve) => {
        const stop = (): void => {
          logger.info("simulator stopping");
          simulator.close().then(resolve, resolve);
        };
        process.once("SIGINT", stop);
        process.once("SIGTERM", stop);
      });
    });
}
