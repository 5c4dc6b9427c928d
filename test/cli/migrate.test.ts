import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../../src/cli.js";
import { StateStore } from "../../src/state/state-store.js";
import { bufferIo } from "../support/cli-io.js";

/** The schema version the repository's migrations lead to: the number of the last one. */
const LATEST = Math.max(
  ...readdirSync("migrations").map((f) => Number(/^(\d+)_.*\.sql$/.exec(f)?.[1] ?? 0)),
);

describe("energy-etl migrate", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "energy-etl-migrate-cli-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("creates the state database, prints the applied migrations, then says it is up to date", async () => {
    const db = join(dir, "nested", "state.db");
    const first = bufferIo({ STATE_DB: db, LOG_LEVEL: "silent" });
    expect(await runCli(["migrate"], first)).toBe(0);
    expect(first.out()).toMatch(/^applied 001_initial$/m);
    expect(LATEST).toBeGreaterThanOrEqual(7);
    expect(first.out()).toMatch(new RegExp(`^applied 00${LATEST}_`, "m"));
    expect(first.out()).toContain(`state database ${db} is at schema version ${LATEST}`);
    expect(existsSync(db)).toBe(true);

    const second = bufferIo({ STATE_DB: db, LOG_LEVEL: "silent" });
    expect(await runCli(["migrate"], second)).toBe(0);
    expect(second.out()).toBe(`state database ${db} is up to date (schema version ${LATEST})\n`);

    const store = StateStore.open(db, { migrate: false });
    expect(store.schemaVersion()).toBe(LATEST);
    store.close();
  });

  it("--state-db overrides STATE_DB", async () => {
    const db = join(dir, "flag.db");
    const io = bufferIo({ STATE_DB: join(dir, "env.db"), LOG_LEVEL: "silent" });
    expect(await runCli(["--state-db", db, "migrate"], io)).toBe(0);
    expect(existsSync(db)).toBe(true);
    expect(existsSync(join(dir, "env.db"))).toBe(false);
  });

  it("a state database that cannot be created fails with exit 1 naming it", async () => {
    const file = join(dir, "not-a-dir");
    writeFileSync(file, "");
    const db = join(file, "state.db");
    const io = bufferIo({ STATE_DB: db, LOG_LEVEL: "silent" });
    expect(await runCli(["migrate"], io)).toBe(1);
    expect(io.err()).toContain(`energy-etl: error: cannot open state database ${db}`);
  });
});
