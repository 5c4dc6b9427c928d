import { existsSync, mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";

/**
 * Creates a directory and its missing parents one level at a time: `mkdirSync(…, {recursive:
 * true})` loops forever on some paths (under /proc) instead of failing with the OS's reason.
 */
export function ensureDirectory(dir: string): void {
  const missing: string[] = [];
  const existing = existingAncestor(dir);
  for (let at = resolve(dir); at !== existing; at = dirname(at)) missing.push(at);
  for (const path of missing.reverse()) mkdirSync(path);
}

/** `dir` (resolved) or its closest ancestor that exists (the root when none does). */
export function existingAncestor(dir: string): string {
  let current = resolve(dir);
  while (!existsSync(current) && dirname(current) !== current) current = dirname(current);
  return current;
}
