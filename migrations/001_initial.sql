-- 001_initial: the state of the ETL (see src/state/types.ts).
-- Data windows are epoch seconds (INTEGER); bookkeeping times are ISO-8601 strings (TEXT).
-- Applied by src/state/migrator.ts inside a transaction and recorded in schema_migrations.

-- How far each device's resource is synced: every record at or before synced_until is in the sink.
CREATE TABLE watermarks (
  device_id    TEXT    NOT NULL,
  resource_id  TEXT    NOT NULL,
  synced_until INTEGER NOT NULL,
  updated_at   TEXT    NOT NULL,
  PRIMARY KEY (device_id, resource_id)
) STRICT;

-- Value ids seen per device resource; a new one triggers a backfill of its history.
CREATE TABLE value_catalog (
  device_id   TEXT NOT NULL,
  resource_id TEXT NOT NULL,
  value_id    TEXT NOT NULL,
  first_seen  TEXT NOT NULL,
  last_seen   TEXT NOT NULL,
  PRIMARY KEY (device_id, resource_id, value_id)
) STRICT;

-- Backfill jobs; key = sha256 of the spec, so a re-run of the same spec continues the job.
CREATE TABLE backfill_jobs (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  key          TEXT    NOT NULL,
  device_id    TEXT    NOT NULL,
  resource_id  TEXT    NOT NULL,
  value_ids    TEXT    NOT NULL CHECK (json_valid(value_ids) AND json_type(value_ids) = 'array'),
  from_s       INTEGER NOT NULL,
  to_s         INTEGER NOT NULL,
  reason       TEXT    NOT NULL,
  status       TEXT    NOT NULL CHECK (status IN ('pending', 'running', 'done', 'failed')),
  chunks_total INTEGER NOT NULL CHECK (chunks_total >= 0),
  chunks_done  INTEGER NOT NULL DEFAULT 0 CHECK (chunks_done >= 0),
  points       INTEGER NOT NULL DEFAULT 0,
  requests     INTEGER NOT NULL DEFAULT 0,
  last_error   TEXT,
  created_at   TEXT    NOT NULL,
  updated_at   TEXT    NOT NULL,
  CHECK (from_s <= to_s)
) STRICT;

CREATE INDEX backfill_jobs_key_status ON backfill_jobs (key, status);
CREATE INDEX backfill_jobs_status ON backfill_jobs (status, id);

-- Chunks of a backfill job that are written to the sink (resume skips them).
CREATE TABLE backfill_chunks (
  job_id      INTEGER NOT NULL REFERENCES backfill_jobs (id) ON DELETE CASCADE,
  chunk_index INTEGER NOT NULL CHECK (chunk_index >= 0),
  points      INTEGER NOT NULL DEFAULT 0,
  done_at     TEXT    NOT NULL,
  PRIMARY KEY (job_id, chunk_index)
) STRICT;

-- One row per sync or backfill run; 'running' rows of a dead process become 'interrupted'.
CREATE TABLE runs (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  kind       TEXT    NOT NULL CHECK (kind IN ('sync', 'backfill')),
  started_at TEXT    NOT NULL,
  ended_at   TEXT,
  status     TEXT    NOT NULL CHECK (status IN ('running', 'ok', 'partial', 'failed', 'interrupted')),
  devices    INTEGER,
  requests   INTEGER,
  points     INTEGER,
  errors     INTEGER,
  detail     TEXT
) STRICT;

CREATE INDEX runs_kind ON runs (kind, id);
CREATE INDEX runs_status ON runs (status);
