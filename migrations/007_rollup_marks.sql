-- 007_rollup_marks: the time ranges of a device resource whose raw points were written (and whose
-- rollups are therefore due): marked before the chunk that wrote them is recorded done, removed
-- once the hourly and daily rollups over them are written. A crash between the two leaves the
-- mark, and the next run writes the rollups. `request`: the `rollups` command's request (its range)
-- that made the mark, NULL for a write of raw points; the same command again continues its own.
CREATE TABLE rollup_marks (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  device_id   TEXT    NOT NULL,
  resource_id TEXT    NOT NULL,
  from_s      INTEGER NOT NULL,
  to_s        INTEGER NOT NULL CHECK (to_s >= from_s),
  request     TEXT
);
CREATE INDEX rollup_marks_by_resource ON rollup_marks (device_id, resource_id);
