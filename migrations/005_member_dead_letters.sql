-- 005_member_dead_letters: dead letters gain the kind 'member', one requested member of a record
-- that failed validation while the record's other members were written. Its payload is the whole
-- row (for context) and value_ids names the member. SQLite cannot change a CHECK constraint, so the
-- table is rebuilt; ids continue their sequence and fingerprints stay as they are.
CREATE TABLE dead_letters_v5 (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  kind        TEXT    NOT NULL CHECK (kind IN ('row', 'member', 'line')),
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

INSERT INTO dead_letters_v5 (id, kind, device_id, resource_id, window_from, window_to, value_ids,
    payload, truncated, error, fingerprint, occurrences, retries, first_seen, last_seen)
  SELECT id, kind, device_id, resource_id, window_from, window_to, value_ids, payload, truncated,
    error, fingerprint, occurrences, retries, first_seen, last_seen
  FROM dead_letters;

DELETE FROM sqlite_sequence WHERE name = 'dead_letters_v5';
INSERT INTO sqlite_sequence (name, seq)
  SELECT 'dead_letters_v5', seq FROM sqlite_sequence WHERE name = 'dead_letters';

DROP TABLE dead_letters;
ALTER TABLE dead_letters_v5 RENAME TO dead_letters;
CREATE INDEX dead_letters_device ON dead_letters (device_id, resource_id, id);
