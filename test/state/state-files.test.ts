/**
 * The state file on disk (issue 40, item 4): created 0600 with its -wal and -shm (it holds the
 * API's rows and lines), an existing looser one kept but warned about, and a write cut short by
 * a file-size limit (`ulimit -f`) named as such, with STATE_DB and a fix. Real SQLite files in
 * temp dirs; the limit on the built CLI in a child shell.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, statSync, writeFileSync } from "node:fs";
import { fileSizeLimit } from "../../src/state/state-error.js";
import { StateStore } from "../../src/state/state-store.js";
import { builtCli } from "../support/cli-child.js";
import { NO_ENV_DIR } from "../support/cli-io.js";
import { captureLogger } from "../support/log-capture.js";
import { useTempDir } from "./support.js";

const tmp = useTempDir("energy-etl-state-files-");
const modeOf = (path: string) => statSync(path).mode & 0o777;
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The built CLI's `migrate` on `state`, in a shell that first runs `limit` (e.g. `ulimit -f 16`). */
function migrateIn(state: string, limit = "true"): { status: number | null; stderr: string } {
  const done = spawnSync(
    "bash",
    ["-c", `${limit} && exec "$0" "$1" migrate`, process.execPath, builtCli()],
    {
      cwd: NO_ENV_DIR,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", STATE_DB: state, LOG_LEVEL: "warn" },
      encoding: "utf8",
      timeout: 30_000,
    },
  );
  return { status: done.status, stderr: done.stderr };
}

describe("the state file's mode", () => {
  it("the CLI creates STATE_DB 0600, whatever the umask lets through", () => {
    const state = tmp.file("state.db");
    const done = migrateIn(state, "umask 0000");
    expect(done).toMatchObject({ status: 0 });
    expect(modeOf(state).toString(8)).toBe("600");
  });

  it("the -wal and -shm SQLite makes next to it are 0600 too", () => {
    const state = tmp.file("state.db");
    const store = tmp.open(state);
    store.runs.recentFinished("sync", 1);
    for (const file of [state, `${state}-wal`, `${state}-shm`]) {
      expect([file, modeOf(file).toString(8)]).toEqual([file, "600"]);
    }
    store.close();
  });

  it("an existing file keeps its mode, with a warning when others may read it", () => {
    const state = tmp.file("state.db");
    tmp.open(state).close();
    chmodSync(state, 0o644);
    const { logger, lines } = captureLogger("warn");
    StateStore.open(state, { logger }).close();
    expect(modeOf(state).toString(8)).toBe("644");
    const warnings = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(warnings).toEqual([
      expect.objectContaining({
        level: "warn",
        path: state,
        mode: "0644",
        msg: expect.stringMatching(/may be read by other users.*chmod 600/),
      }),
    ]);

    // a private one opens without a word
    chmodSync(state, 0o600);
    const quiet = captureLogger("warn");
    StateStore.open(state, { logger: quiet.logger }).close();
    expect(quiet.lines).toEqual([]);
  });
});

describe("a file-size limit", () => {
  it("at first start: the error names STATE_DB, the limit and how to raise it", () => {
    const state = tmp.file("state.db");
    // bash counts -f in blocks of 1024 bytes: 16384 bytes, too little for the schema and the -shm
    const done = migrateIn(state, "ulimit -f 16");
    expect(done.status).toBe(1);
    expect(done.stderr).toMatch(
      new RegExp(
        `state database ${escapeRegExp(state)} \\(STATE_DB\\): .*this process may write files of at most 16384 bytes \\(ulimit -f, RLIMIT_FSIZE\\).*raise the limit \\(ulimit -f unlimited`,
      ),
    );
  });

  it("is read from /proc/self/limits: the soft limit when finite, else none", () => {
    const limits = tmp.file("limits");
    writeFileSync(
      limits,
      "Max file size             unlimited            unlimited            bytes\n",
    );
    expect(fileSizeLimit(limits)).toBeUndefined();
    writeFileSync(
      limits,
      "Max file size             8192                 16384                bytes\n",
    );
    expect(fileSizeLimit(limits)).toBe(8192);
    expect(fileSizeLimit(tmp.file("absent"))).toBeUndefined();
  });
});
