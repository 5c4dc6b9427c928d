-- 004_catalog_cadence: the catalog (device list, resources, value lists) is kept between runs and
-- read again at most every CATALOG_REFRESH, so a steady sync issues data requests only.

-- The device list as GET /devices last answered: listed = 1 while it lists the device.
-- catalog_read_at: when its resources and value lists were last read (NULL: never, or marked
-- stale because a data answer said a value or the device is unknown).
CREATE TABLE devices (
  device_id       TEXT    PRIMARY KEY,
  listed          INTEGER NOT NULL DEFAULT 1 CHECK (listed IN (0, 1)),
  first_seen      TEXT    NOT NULL,
  last_seen       TEXT    NOT NULL,
  catalog_read_at TEXT
) STRICT;

-- The resources of a device as its last read listed them.
CREATE TABLE device_resources (
  device_id   TEXT    NOT NULL,
  resource_id TEXT    NOT NULL,
  listed      INTEGER NOT NULL DEFAULT 1 CHECK (listed IN (0, 1)),
  first_seen  TEXT    NOT NULL,
  last_seen   TEXT    NOT NULL,
  PRIMARY KEY (device_id, resource_id)
) STRICT;

-- A value id no longer listed keeps its row (first_seen stays; it is not new when it returns).
ALTER TABLE value_catalog ADD COLUMN listed INTEGER NOT NULL DEFAULT 1 CHECK (listed IN (0, 1));

-- When a list without an owner row was last read (name 'devices': GET /devices).
CREATE TABLE catalog_reads (
  name    TEXT PRIMARY KEY,
  read_at TEXT NOT NULL
) STRICT;

-- Runs gain the kind 'catalog' (a refresh of the catalogs that are due, between service ticks).
-- SQLite cannot change a CHECK constraint, so the table is rebuilt; ids continue their sequence.
CREATE TABLE runs_v4 (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  kind       TEXT    NOT NULL CHECK (kind IN ('sync', 'backfill', 'catalog')),
  started_at TEXT    NOT NULL,
  ended_at   TEXT,
  status     TEXT    NOT NULL CHECK (status IN ('running', 'ok', 'partial', 'failed', 'interrupted')),
  devices    INTEGER,
  requests   INTEGER,
  points     INTEGER,
  errors     INTEGER,
  detail     TEXT,
  owner_id   TEXT,
  owner_pid  INTEGER,
  owner_host TEXT
) STRICT;

INSERT INTO runs_v4 (id, kind, started_at, ended_at, status, devices, requests, points, errors,
    detail, owner_id, owner_pid, owner_host)
  SELECT id, kind, started_at, ended_at, status, devices, requests, points, errors, detail,
    owner_id, owner_pid, owner_host
  FROM runs;

DELETE FROM sqlite_sequence WHERE name = 'runs_v4';
INSERT INTO sqlite_sequence (name, seq)
  SELECT 'runs_v4', seq FROM sqlite_sequence WHERE name = 'runs';

DROP TABLE runs;
ALTER TABLE runs_v4 RENAME TO runs;
CREATE INDEX runs_kind ON runs (kind, id);
CREATE INDEX runs_status ON runs (status);
