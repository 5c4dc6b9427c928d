// Preloaded (`node --import`) into the energy-etl children the benchmarks run: at exit, one line
// on stderr with the process's own CPU time and peak RSS (getrusage), which the harness reads.
import { writeSync } from "node:fs";

process.on("exit", () => {
  const { userCPUTime, systemCPUTime, maxRSS } = process.resourceUsage();
  writeSync(
    2,
    `\n__usage ${JSON.stringify({ cpuUs: userCPUTime + systemCPUTime, maxRssKb: maxRSS })}\n`,
  );
});
