/**
 * Migration 004 on a database at version 3 with runs, value catalog rows and an AUTOINCREMENT
 * sequence: runs keep their ids and rows and accept the kind `catalog`; the catalog rows stay
 * listed; nothing counts as read, so the first run after the upgrade reads the catalog.
 */
import { copyFileSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { MIGRATIONS_DIR, migrate } from "../../src/state/migrator.js";
import { T0, useTempDir } from "./support.js";

const tmp = useTempDir("energy-etl-migration-004-");

function version3(): ReturnType<typeof tmp.raw> {
  const upTo3 = tmp.file("migrations-1-3");
  mkdirSync(upTo3);
  for (const file of readdirSync(MIGRATIONS_DIR).filter((f) => /^00[123]_/.test(f))) {
    copyFileSync(join(MIGRATIONS_DIR, file), join(upTo3, file));
  }
  const db = tmp.raw(tmp.file("state.db"));
  expect(migrate(db, upTo3)).toEqual([1, 2, 3]);
  const insertRun = db.prepare(
    `INSERT INTO runs (kind, started_at, ended_at, status, devices, requests, points, errors,
       detail, owner_id, owner_pid, owner_host)
     VALUES (?, ?, ?, 'ok', 3, 19, 100, 0, NULL, 'h:1:2:r', 1, 'h')`,
  );
  for (let i = 0; i < 5; i++)
    insertRun.run(i % 2 ? "backfill" : "sync", T0.toISOString(), T0.toISOString());
  db.prepare("DELETE FROM runs WHERE id = 5").run();
  db.prepare(
    `INSERT INTO value_catalog (device_id, resource_id, value_id, first_seen, last_seen)
     VALUES ('d1', 'all_data', 'e_a', ?, ?)`,
  ).run(T0.toISOString(), T0.toISOString());
  return db;
}

it("keeps runs and their sequence, adds the kind catalog, and keeps catalog rows listed", () => {
  const db = version3();
  expect(migrate(db)).toEqual([4, 5, 6, 7]);
  expect(db.prepare("SELECT id, kind, requests, owner_host FROM runs ORDER BY id").all()).toEqual([
    { id: 1, kind: "sync", requests: 19, owner_host: "h" },
    { id: 2, kind: "backfill", requests: 19, owner_host: "h" },
    { id: 3, kind: "sync", requests: 19, owner_host: "h" },
    { id: 4, kind: "backfill", requests: 19, owner_host: "h" },
  ]);
  // ids are never reused: the deleted run 5 stays taken
  const id = db
    .prepare(
      "INSERT INTO runs (kind, started_at, status) VALUES ('catalog', ?, 'running') RETURNING id",
    )
    .pluck()
    .get(T0.toISOString());
  expect(id).toBe(6);
  expect(() =>
    db
      .prepare("INSERT INTO runs (kind, started_at, status) VALUES ('other', ?, 'running')")
      .run(T0.toISOString()),
  ).toThrow(/CHECK constraint/);
  expect(db.prepare("SELECT value_id, listed FROM value_catalog").all()).toEqual([
    { value_id: "e_a", listed: 1 },
  ]);
  expect(db.prepare("SELECT count(*) FROM devices").pluck().get()).toBe(0);
  expect(db.prepare("SELECT count(*) FROM catalog_reads").pluck().get()).toBe(0);
  expect(db.prepare("PRAGMA foreign_key_check").all()).toEqual([]);
  expect(db.prepare("PRAGMA integrity_check").pluck().get()).toBe("ok");
});
