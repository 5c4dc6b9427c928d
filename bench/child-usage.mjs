// Preloaded (`node --import`) into the energy-etl children the benchmarks run: at exit, one line
// on stderr with the process's own CPU time (getrusage) and peak RSS, which the harness reads.
// The peak is /proc/self/status's VmHWM, not getrusage's maxRSS: on Linux a child's maxRSS
// starts at its parent's RSS at fork (the kernel carries the forked copy's high-water mark
// across exec), so a bench process holding 180 MB made every child report >= 180 MB.
import { readFileSync, writeSync } from "node:fs";

/** This process's peak resident size in kB: VmHWM where /proc has it, maxRSS elsewhere. */
function peakRssKb(maxRSS) {
  try {
    const hwm = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync("/proc/self/status", "utf8"));
    return hwm ? Number(hwm[1]) : maxRSS;
  } catch {
    return maxRSS;
  }
}

process.on("exit", () => {
  const { userCPUTime, systemCPUTime, maxRSS } = process.resourceUsage();
  writeSync(
    2,
    `\n__usage ${JSON.stringify({ cpuUs: userCPUTime + systemCPUTime, maxRssKb: peakRssKb(maxRSS) })}\n`,
  );
});
