/**
 * Migration 005 on a database at version 4 with dead letters and an AUTOINCREMENT sequence: the
 * letters keep their ids, rows and fingerprints (a lookback re-read is still an occurrence), the
 * kind `member` is accepted, any other kind refused, and ids are never reused.
 */
import { copyFileSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { DeadLetterStore } from "../../src/state/dead-letter-store.js";
import { MIGRATIONS_DIR, migrate } from "../../src/state/migrator.js";
import { T0, T1, useTempDir } from "./support.js";

const tmp = useTempDir("energy-etl-migration-005-");

const LETTER = {
  kind: "row" as const,
  deviceId: "d1",
  resourceId: "all_data",
  windowFromS: 1000,
  windowToS: 2000,
  valueIds: ["e_a", "e_b"],
  error: "e_a: must be a finite number",
};

function version4(): ReturnType<typeof tmp.raw> {
  const upTo4 = tmp.file("migrations-1-4");
  mkdirSync(upTo4);
  for (const file of readdirSync(MIGRATIONS_DIR).filter((f) => /^00[1-4]_/.test(f))) {
    copyFileSync(join(MIGRATIONS_DIR, file), join(upTo4, file));
  }
  const db = tmp.raw(tmp.file("state.db"));
  expect(migrate(db, upTo4)).toEqual([1, 2, 3, 4]);
  const old = new DeadLetterStore(db);
  old.add({ ...LETTER, payload: '{"timestamp":"2026-06-15T00:00:00","e_a":1e400}' }, T0);
  old.add({ ...LETTER, kind: "line", payload: "m,device_id=d1 value=1 1" }, T0);
  old.add({ ...LETTER, payload: "deleted" }, T0);
  db.prepare("DELETE FROM dead_letters WHERE payload = 'deleted'").run();
  return db;
}

it("keeps dead letters, their ids, fingerprints and sequence, and adds the kind member", () => {
  const db = version4();
  const before = db.prepare("SELECT * FROM dead_letters ORDER BY id").all();
  expect(before).toHaveLength(2);
  expect(migrate(db)).toEqual([5, 6, 7]);
  expect(db.prepare("SELECT * FROM dead_letters ORDER BY id").all()).toEqual(before);
  // ids are never reused: the deleted letter 3 stays taken
  expect(
    db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'dead_letters'").pluck().get(),
  ).toBe(3);

  const store = new DeadLetterStore(db);
  // the same row read again after the upgrade is an occurrence of the kept letter
  expect(
    store.add({ ...LETTER, payload: '{"timestamp":"2026-06-15T00:00:00","e_a":1e400}' }, T1),
  ).toBe(false);
  expect(
    store.add(
      {
        ...LETTER,
        kind: "member",
        valueIds: ["e_a"],
        payload: '{"timestamp":"2026-06-15T00:01:00","e_a":1e400,"e_b":1}',
      },
      T1,
    ),
  ).toBe(true);
  expect(store.list().map((l) => [l.id, l.kind, l.occurrences])).toEqual([
    [1, "row", 2],
    [2, "line", 1],
    [expect.any(Number), "member", 1],
  ]);
  expect(store.list()[2]?.id).toBeGreaterThan(3);
  expect(() =>
    db
      .prepare(
        `INSERT INTO dead_letters (kind, device_id, resource_id, window_from, window_to, value_ids,
           payload, error, fingerprint, first_seen, last_seen)
         VALUES ('other', 'd1', 'r', 1, 2, '[]', 'p', 'e', 'f', 'x', 'x')`,
      )
      .run(),
  ).toThrow(/CHECK constraint/);
  expect(
    db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'dead_letters'")
      .pluck()
      .all(),
  ).toEqual(expect.arrayContaining(["dead_letters_device"]));
  expect(db.prepare("PRAGMA integrity_check").pluck().get()).toBe("ok");
});
