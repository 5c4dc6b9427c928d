/**
 * An image's file system run as the image would run it, where containers cannot be started (crun
 * cannot set rlimits in this sandbox): `podman create` + `podman mount`, /proc and /dev mounted
 * into it, then `chroot --userspec=UID:GID` with only the image's environment (and what a test
 * adds), in its working directory, its entrypoint first. Its network is the host's: a process
 * started so answers on the host's loopback, and reaches the tests' simulator and influxd there.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { podman, type Ran, runCommand } from "./host-tools.js";

/** What `podman image inspect` says of the image's runtime. */
export interface ImageConfig {
  readonly User: string;
  readonly Env: readonly string[];
  readonly Entrypoint: readonly string[];
  readonly Cmd: readonly string[];
  readonly WorkingDir: string;
  readonly Healthcheck?: { readonly Test: readonly string[] };
}

/** The image's runtime configuration (the Docker format keeps HEALTHCHECK). */
function imageConfig(image: string): ImageConfig {
  const parsed: unknown = JSON.parse(
    podman("image", "inspect", "--format", "{{json .Config}}", image),
  );
  if (typeof parsed !== "object" || parsed === null) throw new Error(`no config in ${image}`);
  const config = parsed as Partial<ImageConfig>;
  const healthcheck = JSON.parse(
    podman("image", "inspect", "--format", "{{json .HealthCheck}}", image),
  ) as ImageConfig["Healthcheck"] | null;
  return {
    User: config.User ?? "",
    Env: config.Env ?? [],
    Entrypoint: config.Entrypoint ?? [],
    Cmd: config.Cmd ?? [],
    WorkingDir: config.WorkingDir ?? "/",
    ...(healthcheck ? { Healthcheck: healthcheck } : {}),
  };
}

/** What `podman diff` lists: every path the container's processes added, changed or deleted. */
export interface RootDiff {
  readonly added: string[];
  readonly changed: string[];
  readonly deleted: string[];
}

/** A container's file system, mounted; close() unmounts and removes it. */
export class ImageRoot {
  private constructor(
    readonly image: string,
    readonly config: ImageConfig,
    readonly id: string,
    readonly path: string,
  ) {}

  /** A new container of `image`, its file system mounted with /proc and /dev. */
  static open(image: string): ImageRoot {
    const id = podman("create", image);
    try {
      const path = podman("mount", id);
      const root = new ImageRoot(image, imageConfig(image), id, path);
      const proc = runCommand("mount", ["-t", "proc", "proc", join(path, "proc")]);
      const dev = runCommand("mount", ["--bind", "/dev", join(path, "dev")]);
      if (proc.status !== 0 || dev.status !== 0) {
        root.close();
        throw new Error(`mounting /proc and /dev into ${path}: ${proc.stderr}${dev.stderr}`);
      }
      return root;
    } catch (error) {
      runCommand("podman", ["rm", "--force", id]);
      throw error;
    }
  }

  /** The uid and gid of a user of the image (its /etc/passwd), by name or number. */
  uidOf(user: string): { uid: number; gid: number } {
    const name = user.split(":")[0] ?? user;
    for (const line of this.read("/etc/passwd").split("\n")) {
      const [login, , uid, gid] = line.split(":");
      if (login === name || uid === name) return { uid: Number(uid), gid: Number(gid) };
    }
    throw new Error(`user ${user} is not in ${this.image}'s /etc/passwd`);
  }

  /** The text of a file of the image. */
  read(path: string): string {
    return readFileSync(join(this.path, path), "utf8");
  }

  /** The image's environment as a map, with `extra` on top. */
  env(extra: Record<string, string> = {}): Record<string, string> {
    const env = Object.fromEntries(
      this.config.Env.map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
    );
    return { ...env, ...extra };
  }

  /** chroot's arguments running `argv` as the image's user, its env only, in its WorkingDir. */
  private chrootArgs(argv: readonly string[], env: Record<string, string>, user: string): string[] {
    const { uid, gid } = this.uidOf(user);
    return [
      `--userspec=${uid}:${gid}`,
      this.path,
      "/usr/bin/env",
      "-i",
      ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
      "/bin/sh",
      "-c",
      'cd "$0" && exec "$@"',
      this.config.WorkingDir,
      ...argv,
    ];
  }

  /** Starts `argv` in the image (the image's user unless `user`), stdout and stderr piped. */
  spawn(
    argv: readonly string[],
    extraEnv: Record<string, string> = {},
    user = this.config.User,
  ): ChildProcess {
    return spawn("chroot", this.chrootArgs(argv, this.env(extraEnv), user), {
      stdio: ["ignore", "pipe", "pipe"],
    });
  }

  /** Runs `argv` in the image to its end. */
  run(
    argv: readonly string[],
    extraEnv: Record<string, string> = {},
    user = this.config.User,
  ): Ran {
    return runCommand("chroot", this.chrootArgs(argv, this.env(extraEnv), user));
  }

  /** The image's entrypoint and `args` (its CMD when none). */
  command(args: readonly string[] = this.config.Cmd): string[] {
    return [...this.config.Entrypoint, ...args];
  }

  /** What the container's processes changed in its file system. */
  diff(): RootDiff {
    const parsed = JSON.parse(podman("diff", "--format", "json", this.id)) as Partial<RootDiff>;
    return {
      added: parsed.added ?? [],
      changed: parsed.changed ?? [],
      deleted: parsed.deleted ?? [],
    };
  }

  /** Unmounts /proc, /dev and the file system, and removes the container. */
  close(): void {
    for (const mounted of ["proc", "dev"]) {
      // lazily when busy (a process of a failed test still inside): never left mounted
      const path = join(this.path, mounted);
      if (runCommand("umount", [path]).status !== 0) runCommand("umount", ["--lazy", path]);
    }
    runCommand("podman", ["umount", this.id]);
    runCommand("podman", ["rm", "--force", this.id]);
  }
}
