import { checkInflux } from "../../influx/influx-check.js";
import { InfluxQuery } from "../../influx/influx-query.js";
import { quoteIdentifier } from "../../influx/influxql.js";
import { InfluxWriteError } from "../../influx/write-errors.js";
import { messageOf } from "../../util/errors.js";
import { type CliIo, writeLine } from "../io.js";
import { type ExistingInflux, InfluxSetupStop } from "./influx-input.js";

/** The rollups' retention policy (ROLLUP_BUCKET `<database>/rollups`). */
export const ROLLUP_POLICY = "rollups";

/** A bucket or database that is not there (404): its step fails, the next ones still run. */
class Missing extends Error {}

/** The 1.x statement that makes the rollups' policy: infinite, shard groups of ten years. */
export const createPolicyStatement = (database: string) =>
  `CREATE RETENTION POLICY ${quoteIdentifier(ROLLUP_POLICY)} ON ${quoteIdentifier(database)} ` +
  "DURATION INF REPLICATION 1 SHARD DURATION 520w";

/** What the credentials were, for the message that says they were refused (never the secret). */
function credentialAdvice(influx: ExistingInflux): string {
  if (influx.token !== "") return "check INFLUX_TOKEN (it needs write and read access)";
  if (influx.username !== "") {
    return `check the user ${influx.username} (--influx-username or INFLUX_USERNAME) and INFLUX_PASSWORD`;
  }
  return "its auth is on: give a user (--influx-username or INFLUX_USERNAME) and INFLUX_PASSWORD";
}

/**
 * A write of zero lines through the write path of the server's API (checkInflux): it proves the
 * URL, the credentials and the bucket (database and policy) and stores nothing. Unreachable or
 * refused credentials stop init; a missing bucket is {@link Missing}; the rest fails its step.
 */
async function emptyWrite(influx: ExistingInflux, bucket: string) {
  try {
    await checkInflux({ ...influx, bucket });
  } catch (error) {
    if (!(error instanceof InfluxWriteError)) throw error;
    const { code, status, message } = error;
    if (code === "auth_failed") {
      throw new InfluxSetupStop(
        `InfluxDB at ${influx.url} refused the credentials (HTTP ${status}): ` +
          `${credentialAdvice(influx)}; nothing was written`,
      );
    }
    if (code === "bucket_not_found") throw new Missing(message);
    if (status === undefined) throw new InfluxSetupStop(`${message}; nothing was written`);
    throw error;
  }
}

/** Prints `name: ok, detail` or `name: failed: why -> fix`; true when ok. Stops rethrow. */
async function step(io: CliIo, name: string, fix: string, run: () => Promise<string>) {
  try {
    writeLine(io.stdout, `${name}: ok, ${await run()}`);
    return true;
  } catch (error) {
    if (error instanceof InfluxSetupStop) throw error;
    writeLine(io.stdout, `${name}: failed: ${messageOf(error)} -> ${fix}`);
    return false;
  }
}

/** 1.x: the database, made when the empty write finds none. */
async function ensureDatabase(query: InfluxQuery, influx: ExistingInflux) {
  try {
    await emptyWrite(influx, influx.database);
    return "exists";
  } catch (error) {
    if (!(error instanceof Missing)) throw error;
  }
  await query.query([`CREATE DATABASE ${quoteIdentifier(influx.database)}`], { change: true });
  return "created";
}

/** 1.x: the rollups' retention policy, made when the empty write to it finds none. */
async function ensurePolicy(query: InfluxQuery, influx: ExistingInflux) {
  try {
    await emptyWrite(influx, `${influx.database}/${ROLLUP_POLICY}`);
    return "exists (kept as it is)";
  } catch (error) {
    if (!(error instanceof Missing)) throw error;
  }
  await query.query([createPolicyStatement(influx.database)], { change: true });
  return "created (infinite, shard groups of 520w)";
}

/** 2.x/3: the commands that make the buckets and their InfluxQL mappings (init cannot). */
export function bucketCommands(influx: ExistingInflux): string[] {
  const { database, org } = influx;
  const rollups = `${database}/${ROLLUP_POLICY}`;
  if (/^v?3\./.test(influx.version ?? "")) {
    return [`influxdb3 create database ${database}`, `influxdb3 create database ${rollups}`];
  }
  const orgFlag = `--org ${org}`;
  return [
    `influx bucket create ${orgFlag} --name ${database} --retention 0`,
    `influx bucket create ${orgFlag} --name ${rollups} --retention 0`,
    `influx bucket update --id <the ID of ${rollups}> --retention 0 --shard-group-duration 87360h`,
    `influx v1 dbrp create ${orgFlag} --db ${database} --rp autogen --bucket-id <the ID of ${database}> --default`,
    `influx v1 dbrp create ${orgFlag} --db ${database} --rp ${ROLLUP_POLICY} --bucket-id <the ID of ${rollups}>`,
  ];
}

/**
 * Sets up an existing InfluxDB for energy-etl and checks it, one line per step: on any 1.x (by
 * its version, 1.8 too, whatever API it is written on) the database and the rollups' policy (made
 * when missing); on 2.x/3 the commands that make them are printed. Then an empty write to each
 * and a read. Unreachable or refused credentials throw (InfluxSetupStop); the names of the steps
 * that failed otherwise are returned.
 */
export async function setUpInflux(io: CliIo, influx: ExistingInflux): Promise<string[]> {
  const query = new InfluxQuery({ ...influx, bucket: influx.database });
  const { database } = influx;
  const rollups = `${database}/${ROLLUP_POLICY}`;
  const failed: string[] = [];
  const run = async (name: string, fix: string, work: () => Promise<string>) => {
    if (!(await step(io, name, fix, work))) failed.push(name);
  };
  if (influx.v1Server) {
    const admin = "run as an InfluxDB admin (influx -execute '...')";
    await run(
      `Database ${database}`,
      `${admin}: CREATE DATABASE ${quoteIdentifier(database)}`,
      () => ensureDatabase(query, influx),
    );
    await run(`Retention policy ${rollups}`, `${admin}: ${createPolicyStatement(database)}`, () =>
      ensurePolicy(query, influx),
    );
  } else {
    writeLine(io.stdout, "Make the buckets and their InfluxQL mappings, if not done yet:");
    for (const command of bucketCommands(influx)) writeLine(io.stdout, `  ${command}`);
  }
  const fix = `${influx.v1Server ? "fix the step above" : "run the commands above"}, then energy-etl doctor`;
  const empty = "an empty write, nothing stored";
  await run(`Write to ${database}`, fix, async () => {
    await emptyWrite(influx, database);
    return empty;
  });
  await run(`Write to ${rollups}`, fix, async () => {
    await emptyWrite(influx, rollups);
    return empty;
  });
  await run(`Read ${database}`, fix, async () => {
    const [series = []] = await query.query(["SHOW MEASUREMENTS"]);
    const count = series.reduce((sum, s) => sum + s.values.length, 0);
    return `SHOW MEASUREMENTS: ${count}`;
  });
  return failed;
}
