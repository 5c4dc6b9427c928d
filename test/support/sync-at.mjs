// A child process for the reliability tests: one sync of the built pipeline (dist/) at a simulated
// time, configured from the environment like the CLI. Usage: node sync-at.mjs <epoch ms>
// It exists so that a test can SIGKILL a real process in the middle of a sync on a simulated day.

import { openPipeline } from "../../dist/cli/open-pipeline.js";
import { loadConfig } from "../../dist/config.js";
import { createLogger } from "../../dist/logger.js";
import { runSync } from "../../dist/pipeline/sync.js";

const nowMs = Number(process.argv[2]);
if (!Number.isSafeInteger(nowMs))
  throw new Error(`usage: sync-at.mjs <epoch ms>, got ${process.argv[2]}`);
const config = loadConfig({ env: process.env });
const { pipeline } = await openPipeline(config, createLogger(config.log.level), {
  now: () => new Date(nowMs),
});
try {
  const result = await runSync(pipeline);
  process.stdout.write(`${JSON.stringify({ status: result.status, points: result.points })}\n`);
} finally {
  await pipeline.close();
}
