import { databaseAndPolicy } from "../../config/values.js";
import type { Config } from "../../config.js";
import { DAY_S } from "../../util/utc-time.js";
import { blocking, type CheckResult, notChecked, ok, warning } from "./check.js";
import {
  type BucketPolicy,
  formatRetention,
  type Influx,
  keeps,
  REACHABLE,
  readPolicy,
  writeCheck,
} from "./influx-checks.js";

export const ROLLUPS = "InfluxDB rollups";
const ROLLUPS_WRITE = "InfluxDB rollups write";
/** Shard groups this long or longer (52 weeks) hold a year of daily rollups in one or two. */
const YEAR_SHARDS_S = 364 * DAY_S;

/** A home for rollups: infinite retention, year-long shard groups (2.x: influx-cli#524). */
export function rollupHomeCommands(database: string, policy: string): string {
  return (
    `InfluxDB 1.8: CREATE RETENTION POLICY "${policy}" ON "${database}" DURATION INF ` +
    "REPLICATION 1 SHARD DURATION 520w; " +
    `2.x: influx bucket create --name ${database}/${policy} --retention 0, then influx bucket ` +
    "update --id <its ID> --retention 0 --shard-group-duration 87360h; " +
    `3: influxdb3 create database ${database}/${policy}`
  );
}

/** Where the rollups go: a warning without ROLLUP_BUCKET; else its write and shard check. */
export async function rollupChecks(config: Config, reachable: boolean): Promise<CheckResult[]> {
  const { influx, rollups } = config;
  if (!rollups.enabled || influx.url === "") return [];
  if (!reachable) return [notChecked(ROLLUPS, "InfluxDB is not reachable", REACHABLE)];
  const { database } = databaseAndPolicy(influx.bucket);
  if (rollups.bucket === "") {
    return [
      warning(
        ROLLUPS,
        `beside the raw points in bucket ${influx.bucket}: a year of daily energy reads every ` +
          "shard group of the raw points' year (a week each by default)",
        "give them a bucket of their own with year-long shard groups " +
          `(${rollupHomeCommands(database, "rollups")}), set ROLLUP_BUCKET=${database}/rollups ` +
          "and write their history there (energy-etl rollups --from <the first day>)",
      ),
    ];
  }
  const policy = databaseAndPolicy(rollups.bucket).retentionPolicy ?? "";
  const write = await writeCheck(influx, {
    bucket: rollups.bucket,
    check: ROLLUPS_WRITE,
    missingFix: `create it (${rollupHomeCommands(database, policy)}), or fix ROLLUP_BUCKET`,
  });
  if (write.status === "failure") {
    return blocking(write, `bucket ${rollups.bucket} takes no writes`, ROLLUPS);
  }
  return [write, await shardCheck(influx, rollups.bucket, database, policy)];
}

/** The rollups' bucket: its retention, and shard groups of about a year (else a warning). */
async function shardCheck(
  influx: Influx,
  bucket: string,
  database: string,
  policy: string,
): Promise<CheckResult> {
  const found = await readPolicy(influx, bucket);
  if ("unreadable" in found) {
    return warning(
      ROLLUPS,
      `the shard groups of bucket ${bucket} are not readable (${found.unreadable})`,
      "read them with a token that may read the bucket: they should be about a year long " +
        "(InfluxDB 3 has none: nothing to do)",
    );
  }
  const kept = `${found.name} ${keeps(found.everyS)}`;
  if (found.shardS === undefined) return ok(ROLLUPS, `${kept} (no shard group duration given)`);
  const shards = `in shard groups of ${formatRetention(found.shardS)}`;
  if (found.shardS >= YEAR_SHARDS_S) return ok(ROLLUPS, `${kept} ${shards}`);
  const opened = Math.ceil((365 * DAY_S) / found.shardS);
  // ten years when the rollups are kept forever; a year where the retention is finite (a shard
  // group may not outlast it)
  const [weeks, hours] = found.everyS === 0 ? ["520w", "87360h"] : ["52w", "8760h"];
  return warning(
    ROLLUPS,
    `${kept} ${shards}: a year of daily energy reads ${opened} of them`,
    "make them a year long or more (InfluxDB 1.8: ALTER RETENTION POLICY " +
      `"${policy}" ON "${database}" SHARD DURATION ${weeks}; 2.x: influx bucket update --id <its ID> ` +
      `--retention ${retentionArgument(found)} --shard-group-duration ${hours}); shard groups ` +
      "made afterwards take it",
  );
}

/** The retention as `influx bucket update --retention` takes it, so that it stays as it is. */
function retentionArgument(policy: BucketPolicy): string {
  if (policy.everyS === 0) return "0";
  return policy.everyS % DAY_S === 0 ? `${policy.everyS / DAY_S}d` : `${policy.everyS}s`;
}
