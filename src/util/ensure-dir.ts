import { existsSync, mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";

/**
 * Creates a directory and its missing parents one level at a time: `mkdirSync(…, {recursive:
 * true})` loops forever on some paths (under /proc) instead of failing with the OS's reason.
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
