/**
 * The Dockerfile's `FROM` image, stood in for when no registry can be reached: a Debian minbase
 * of the same release (debootstrap) with this machine's Node.js, npm, Node's headers (node-gyp
 * builds better-sqlite3 from them, offline) and CA bundle (npm ci reaches the registry through
 * it), imported into podman's storage and tagged as the `FROM` image. It stays there, labelled
 * with what it was made of, and is reused by the next run on the same machine.
 */
import { createHash } from "node:crypto";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { mustRun, podman, runCommand } from "./host-tools.js";

/** Bump when the recipe below changes: a cached stand-in of another recipe is rebuilt. */
const RECIPE = 1;
const LABEL = "energy-etl.stand-in";
const CA_IN_IMAGE = "/usr/local/share/energy-etl-stand-in-ca.crt";

/** The base images of a Dockerfile (its `FROM` lines that name an image, not a stage). */
export function baseImages(dockerfile: string): string[] {
  const stages = new Set<string>();
  const images = new Set<string>();
  for (const m of dockerfile.matchAll(/^FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?/gim)) {
    const [, image, stage] = m;
    if (image !== undefined && !stages.has(image)) images.add(image);
    if (stage !== undefined) stages.add(stage);
  }
  return [...images];
}

/** A short name as podman stores it (`node:24` is `docker.io/library/node:24`). */
function fullName(image: string): string {
  const [first = "", ...rest] = image.split("/");
  if (rest.length > 0 && /[.:]/.test(first)) return image;
  return rest.length === 0 ? `docker.io/library/${image}` : `docker.io/${image}`;
}

/** What this machine's Node is made of: the files to copy and a key naming them. */
function machineNode(): {
  node: string;
  npmRoot: string;
  headers: string;
  ca: string;
  key: string;
} {
  const node = realpathSync(process.execPath);
  const npmRoot = mustRun("npm", ["root", "-g"]);
  const headers = join(dirname(dirname(node)), "include", "node");
  const ca = process.env.NODE_EXTRA_CA_CERTS ?? "/etc/ssl/certs/ca-certificates.crt";
  for (const [what, path] of [
    ["npm", join(npmRoot, "npm", "bin", "npm-cli.js")],
    ["Node's headers (node-gyp)", join(headers, "node.h")],
    ["the CA bundle", ca],
  ] as const) {
    if (!existsSync(path)) throw new Error(`the stand-in base needs ${what}: ${path} is missing`);
  }
  const npm = mustRun("npm", ["--version"]);
  const caHash = createHash("sha256").update(readFileSync(ca)).digest("hex").slice(0, 12);
  const key = `recipe ${RECIPE}, node ${process.version}, npm ${npm}, ca ${caHash}`;
  return { node, npmRoot, headers, ca, key };
}

/** The Debian release a `*-bookworm-slim` style tag names (bookworm when it names none). */
function debianSuite(image: string): string {
  const tag = image.split(":").at(-1) ?? "";
  return ["trixie", "bookworm", "bullseye"].find((s) => tag.includes(s)) ?? "bookworm";
}

/** How the base was had, for the test's report. */
export interface BaseReport {
  readonly image: string;
  readonly how: "reused" | "built" | "real";
  readonly seconds: number;
}

/**
 * Makes sure `image` (a `FROM` image) is in podman's storage: a real one already there is used
 * as is; a stand-in made of this machine's Node of now is reused; otherwise a stand-in is built.
 */
export function ensureBase(image: string): BaseReport {
  const started = Date.now();
  const name = fullName(image);
  const done = (how: BaseReport["how"]) => ({
    image: name,
    how,
    seconds: (Date.now() - started) / 1000,
  });
  const machine = machineNode();
  if (runCommand("podman", ["image", "exists", name]).status === 0) {
    const label = podman("image", "inspect", "--format", `{{index .Labels "${LABEL}"}}`, name);
    if (label === "<no value>" || label === "") return done("real");
    if (label === machine.key) return done("reused");
    podman("rmi", "--force", name); // a stand-in of another Node (or recipe): made again below
  }
  const rootfs = mkdtempSync(join("/var/tmp", "energy-etl-stand-in-"));
  try {
    mustRun("debootstrap", ["--variant=minbase", debianSuite(image), rootfs]);
    const into = (path: string) => join(rootfs, path);
    cpSync(machine.node, into("usr/bin/node"));
    mkdirSync(into("usr/lib/node_modules"), { recursive: true });
    cpSync(join(machine.npmRoot, "npm"), into("usr/lib/node_modules/npm"), {
      recursive: true,
      verbatimSymlinks: true,
    });
    cpSync(machine.headers, into("usr/include/node"), { recursive: true });
    symlinkSync("../lib/node_modules/npm/bin/npm-cli.js", into("usr/bin/npm"));
    symlinkSync("../lib/node_modules/npm/bin/npx-cli.js", into("usr/bin/npx"));
    cpSync(machine.ca, into(CA_IN_IMAGE));
    // tar streams the file system into podman import (a pipe: no 400 MB buffer in this process)
    mustRun("bash", [
      "-o",
      "pipefail",
      "-c",
      'name=$1; shift; tar -C "$0" -cf - . | podman import "$@" - "$name"',
      rootfs,
      name,
      ...["--change", `ENV NODE_EXTRA_CA_CERTS=${CA_IN_IMAGE}`],
      ...["--change", `ENV npm_config_cafile=${CA_IN_IMAGE}`],
      ...["--change", "ENV npm_config_nodedir=/usr"],
      ...["--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
      ...["--change", `LABEL ${LABEL}="${machine.key}"`],
    ]);
  } finally {
    rmSync(rootfs, { recursive: true, force: true });
  }
  return done("built");
}
