import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

/** The simulator running as a process of its own, as a remote API would: its URL, and a stop. */
interface SimulatorProcess {
  readonly url: string;
  readonly pid: number;
  /** Stops it (SIGTERM) and waits for it to exit. */
  stop(): Promise<void>;
}

/** `energy-etl simulate --port 0 …args` as a child (apart, as the real API), once it listens. */
export function startSimulatorProcess(args: readonly string[]): Promise<SimulatorProcess> {
  const cli = process.argv[1] ?? "";
  const child = spawn(
    process.execPath,
    [...process.execArgv, cli, "simulate", "--port", "0", ...args],
    {
      env: { ...process.env, LOG_FORMAT: "json", LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  // a process.exit() (a reader that closed stdout: `energy-etl demo | head -1`) skips stop():
  // the simulator must not outlive energy-etl
  const end = (): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
  };
  process.once("exit", end);
  const stop = async (): Promise<void> => {
    process.removeListener("exit", end);
    end();
    await exited;
  };
  return new Promise<SimulatorProcess>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error("the simulator did not start")), 30_000);
    const fail = (error: Error): void => {
      clearTimeout(timer);
      void stop();
      reject(error);
    };
    child.once("error", fail);
    child.once("exit", (code) =>
      fail(new Error(`the simulator exited (code ${code}) before it listened`)),
    );
    const lines = createInterface({ input: child.stdout });
    lines.on("line", (line) => {
      const url = /listening on (\S+)/.exec(line)?.[1];
      if (url === undefined) return;
      clearTimeout(timer);
      child.removeAllListeners("exit");
      lines.close();
      // the rest of its output is not ours to show
      child.stdout.resume();
      resolve({ url, pid: child.pid ?? 0, stop });
    });
  });
}
