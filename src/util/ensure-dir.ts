import { existsSync, mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";

/**
 * Creates a directory and its missing parents, one level at a time, so that a path that cannot
 * be created fails at once with the operating system's reason (`mkdirSync(…, {recursive: true})`
 * loops forever on some paths, e.g. under /proc).
 */
export function ensureDirectory(dir: string): void {
  const missing: string[] = [];
  let current = resolve(dir);
  while (!existsSync(current)) {
    missing.push(current);
    const parent = dirname(current);
    if (parent === current) break;
    current = parent;
  }
  for (const path of missing.reverse()) mkdirSync(path);
}
