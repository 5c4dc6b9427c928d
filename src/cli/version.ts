import { readFileSync } from "node:fs";

/** energy-etl's version: package.json's, read when asked (`--version` loads nothing else). */
export function version(): string {
  const pkg: unknown = JSON.parse(
    readFileSync(new URL("../../package.json", import.meta.url), "utf8"),
  );
  if (typeof pkg === "object" && pkg !== null && "version" in pkg) {
    if (typeof pkg.version === "string") return pkg.version;
  }
  throw new Error("package.json names no version");
}
