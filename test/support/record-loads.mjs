// `node --import ./test/support/record-loads.mjs …`: appends the URL of every module the process
// loads through the module loader (ESM, and CommonJS entered by an import) to the file
// $RECORD_LOADS, a line each. test/cli/lazy-imports.test.ts reads it to see what a command loads.
import { register } from "node:module";

const hooks = `
import { appendFileSync } from "node:fs";
export async function load(url, context, nextLoad) {
  appendFileSync(process.env.RECORD_LOADS, url + "\\n");
  return nextLoad(url, context);
}
`;
if (!process.env.RECORD_LOADS) throw new Error("record-loads.mjs: set RECORD_LOADS to a file");
register(`data:text/javascript,${encodeURIComponent(hooks)}`);
