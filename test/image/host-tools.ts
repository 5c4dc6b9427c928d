/**
 * The host programs the image test drives (podman, debootstrap, chroot, mount), installed with
 * apt-get when missing; a program that cannot be had fails the test run, naming what to install.
 */
import { spawnSync } from "node:child_process";

/** What a finished command printed and how it ended. */
export interface Ran {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** The longest any one host command may take (a build downloads and compiles); then SIGKILL. */
const COMMAND_TIMEOUT_MS = 20 * 60_000;

/**
 * Runs a command to its end (output kept up to 256 MB, killed after COMMAND_TIMEOUT_MS: a
 * synchronous call cannot be interrupted by jest); never throws.
 */
export function runCommand(
  command: string,
  args: readonly string[],
  options: { readonly env?: NodeJS.ProcessEnv } = {},
): Ran {
  const ran = spawnSync(command, args, {
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
    env: options.env ?? process.env,
    timeout: COMMAND_TIMEOUT_MS,
    killSignal: "SIGKILL",
  });
  return {
    status: ran.error ? null : ran.status,
    stdout: ran.stdout ?? "",
    stderr: ran.error ? String(ran.error) : (ran.stderr ?? ""),
  };
}

/** Runs a command and returns its trimmed stdout; throws with its stderr when it fails. */
export function mustRun(command: string, args: readonly string[]): string {
  const ran = runCommand(command, args);
  if (ran.status !== 0) {
    throw new Error(
      `${command} ${args.join(" ")} failed (exit ${ran.status}):\n${ran.stderr.slice(-3000)}`,
    );
  }
  return ran.stdout.trim();
}

/** `podman …`, its stdout. */
export const podman = (...args: string[]): string => mustRun("podman", args);

const has = (program: string): boolean =>
  runCommand("sh", ["-c", `command -v ${program}`]).status === 0;

/** The Debian package of each program the test needs. */
const PACKAGES: Record<string, string> = {
  podman: "podman",
  debootstrap: "debootstrap",
  chroot: "coreutils",
  mount: "mount",
};

/**
 * Makes sure every program the image test needs is on PATH, with `apt-get install` (after an
 * `apt-get update` when the first try fails). Throws, naming the packages, when that fails or
 * when the test does not run as root (podman's storage, chroot and mount need it).
 */
export function ensureHostTools(): void {
  if (process.getuid?.() !== 0) {
    throw new Error("the image test needs root (podman storage, chroot, mount): run it as root");
  }
  const missing = [...new Set(Object.keys(PACKAGES).filter((p) => !has(p)))];
  if (missing.length === 0) return;
  const packages = [...new Set(missing.map((p) => PACKAGES[p] ?? p))];
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const install = () => runCommand("apt-get", ["install", "-y", ...packages], { env });
  let ran = install();
  if (ran.status !== 0) {
    runCommand("apt-get", ["update"], { env });
    ran = install();
  }
  const still = missing.filter((p) => !has(p));
  if (still.length > 0) {
    throw new Error(
      `the image test needs ${still.join(", ")}: apt-get install -y ${packages.join(" ")} ` +
        `failed (exit ${ran.status}):\n${ran.stderr.slice(-2000)}`,
    );
  }
}
