// Rewrites the files derived from the configuration schema (src/config/schema.ts): config/default.json,
// config/schema.json and the settings table of docs/configuration.md. Run by `npm run docs:config`
// after a build; test/config/artefacts.test.ts fails while one of them is stale.
import { readFileSync, writeFileSync } from "node:fs";
import { CONFIG_ARTEFACTS } from "../dist/config/artefacts.js";

for (const { path, render } of CONFIG_ARTEFACTS) {
  const current = readFileSync(path, "utf8");
  const next = render(current);
  if (next === current) continue;
  writeFileSync(path, next);
  console.log(`wrote ${path}`);
}
