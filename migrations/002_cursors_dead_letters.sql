-- 002_cursors_dead_letters: cursors that follow the data, dead letters, retried and parked jobs.
-- See src/state/types.ts. Data times are epoch seconds (INTEGER); bookkeeping times ISO-8601 (TEXT).

-- What the data says per device resource (replaces watermarks):
--   newest_record_at: the newest record timestamp written (capped at the API's clock); NULL until
--                     a record arrived. The next sync starts here minus SYNC_LOOKBACK.
--   fetched_until:    the end of the last fully fetched window (capped at the API's clock).
--   started_at:       where the cursor began (SYNC_START at its first sync).
--   next_probe_at:    set while the resource is silent (no record for SILENT_AFTER): it is only
--                     probed, at most once per SILENT_PROBE_INTERVAL.
--   failures, retry_at, last_error: a failing resource waits retry_at before its next attempt.
CREATE TABLE cursors (
  device_id        TEXT    NOT NULL,
  resource_id      TEXT    NOT NULL,
  newest_record_at INTEGER,
  fetched_until    INTEGER NOT NULL,
  started_at       INTEGER NOT NULL,
  next_probe_at    INTEGER,
  failures         INTEGER NOT NULL DEFAULT 0 CHECK (failures >= 0),
  retry_at         INTEGER,
  last_error       TEXT,
  updated_at       TEXT    NOT NULL,
  PRIMARY KEY (device_id, resource_id)
) STRICT;

-- An old watermark said "everything up to here is in the sink": the same as a newest record there,
-- so the first sync after the upgrade reads [watermark + 1 - SYNC_LOOKBACK, now] as before.
INSERT INTO cursors (device_id, resource_id, newest_record_at, fetched_until, started_at, updated_at)
  SELECT device_id, resource_id, synced_until, synced_until, synced_until, updated_at FROM watermarks;
DROP TABLE watermarks;

-- Rows that failed validation and lines InfluxDB refused for good; one row per distinct payload,
-- however often it comes back (lookback re-reads count as occurrences).
CREATE TABLE dead_letters (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  kind        TEXT    NOT NULL CHECK (kind IN ('row', 'line')),
  device_id   TEXT    NOT NULL,
  resource_id TEXT    NOT NULL,
  window_from INTEGER NOT NULL,
  window_to   INTEGER NOT NULL,
  value_ids   TEXT    NOT NULL CHECK (json_valid(value_ids) AND json_type(value_ids) = 'array'),
  payload     TEXT    NOT NULL,
  truncated   INTEGER NOT NULL DEFAULT 0 CHECK (truncated IN (0, 1)),
  error       TEXT    NOT NULL,
  fingerprint TEXT    NOT NULL UNIQUE,
  occurrences INTEGER NOT NULL DEFAULT 1,
  retries     INTEGER NOT NULL DEFAULT 0,
  first_seen  TEXT    NOT NULL,
  last_seen   TEXT    NOT NULL
) STRICT;

CREATE INDEX dead_letters_device ON dead_letters (device_id, resource_id, id);

-- Backfill jobs gain retries with a growing delay, a parked state, and the newest record they
-- wrote. SQLite cannot change a CHECK constraint, so both job tables are rebuilt (chunks first,
-- so that no cascade touches them).
CREATE TABLE backfill_jobs_v2 (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  key              TEXT    NOT NULL,
  device_id        TEXT    NOT NULL,
  resource_id      TEXT    NOT NULL,
  value_ids        TEXT    NOT NULL CHECK (json_valid(value_ids) AND json_type(value_ids) = 'array'),
  from_s           INTEGER NOT NULL,
  to_s             INTEGER NOT NULL,
  reason           TEXT    NOT NULL,
  status           TEXT    NOT NULL CHECK (status IN ('pending', 'running', 'done', 'failed', 'parked')),
  chunks_total     INTEGER NOT NULL CHECK (chunks_total >= 0),
  chunks_done      INTEGER NOT NULL DEFAULT 0 CHECK (chunks_done >= 0),
  points           INTEGER NOT NULL DEFAULT 0,
  requests         INTEGER NOT NULL DEFAULT 0,
  last_error       TEXT,
  attempts         INTEGER NOT NULL DEFAULT 0,
  next_attempt_at  INTEGER,
  newest_record_at INTEGER,
  created_at       TEXT    NOT NULL,
  updated_at       TEXT    NOT NULL,
  CHECK (from_s <= to_s)
) STRICT;

INSERT INTO backfill_jobs_v2 (id, key, device_id, resource_id, value_ids, from_s, to_s, reason,
    status, chunks_total, chunks_done, points, requests, last_error, created_at, updated_at)
  SELECT id, key, device_id, resource_id, value_ids, from_s, to_s, reason, status, chunks_total,
    chunks_done, points, requests, last_error, created_at, updated_at
  FROM backfill_jobs;

-- ids are never reused: the new table continues the old one's AUTOINCREMENT sequence
DELETE FROM sqlite_sequence WHERE name = 'backfill_jobs_v2';
INSERT INTO sqlite_sequence (name, seq)
  SELECT 'backfill_jobs_v2', seq FROM sqlite_sequence WHERE name = 'backfill_jobs';

CREATE TABLE backfill_chunks_v2 (
  job_id      INTEGER NOT NULL REFERENCES backfill_jobs_v2 (id) ON DELETE CASCADE,
  chunk_index INTEGER NOT NULL CHECK (chunk_index >= 0),
  points      INTEGER NOT NULL DEFAULT 0,
  done_at     TEXT    NOT NULL,
  PRIMARY KEY (job_id, chunk_index)
) STRICT;

INSERT INTO backfill_chunks_v2 (job_id, chunk_index, points, done_at)
  SELECT job_id, chunk_index, points, done_at FROM backfill_chunks;

DROP TABLE backfill_chunks;
DROP TABLE backfill_jobs;
ALTER TABLE backfill_jobs_v2 RENAME TO backfill_jobs;
ALTER TABLE backfill_chunks_v2 RENAME TO backfill_chunks;

CREATE INDEX backfill_jobs_key_status ON backfill_jobs (key, status);
CREATE INDEX backfill_jobs_status ON backfill_jobs (status, id);
