-- 003_leases_locks: who owns what, so two processes on one state file never do the same work.

-- A backfill job is claimed with a lease before any of its chunks runs; another process skips
-- it, and takes it over only after the lease expired (lease_until, epoch ms).
ALTER TABLE backfill_jobs ADD COLUMN lease_owner TEXT;
ALTER TABLE backfill_jobs ADD COLUMN lease_until INTEGER;

-- Which process ran a run, so that a live process's run is never marked interrupted.
ALTER TABLE runs ADD COLUMN owner_id TEXT;
ALTER TABLE runs ADD COLUMN owner_pid INTEGER;
ALTER TABLE runs ADD COLUMN owner_host TEXT;

-- Named locks with a lease: `service` is held by `energy-etl run` (and briefly by `sync`);
-- a holder renews expires_at (epoch ms) while it lives.
CREATE TABLE locks (
  name        TEXT    PRIMARY KEY,
  owner       TEXT    NOT NULL,
  pid         INTEGER NOT NULL,
  host        TEXT    NOT NULL,
  command     TEXT    NOT NULL,
  acquired_at TEXT    NOT NULL,
  expires_at  INTEGER NOT NULL
) STRICT;

-- A sync window that kept failing on its own (not the API or InfluxDB being down) is handed over
-- as a parked job; the cursor then reads on after it (parked_until, epoch s).
ALTER TABLE cursors ADD COLUMN parked_until INTEGER;
