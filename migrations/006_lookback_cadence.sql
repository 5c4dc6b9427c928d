-- 006_lookback_cadence: when a sync last re-read a resource's lookback (SYNC_LOOKBACK) and
-- committed it, epoch seconds by the API's clock. Ticks in between read from the newest record on;
-- the lookback is read again once per SYNC_LOOKBACK_EVERY. NULL: never (the next sync reads it).
ALTER TABLE cursors ADD COLUMN looked_back_at INTEGER;
