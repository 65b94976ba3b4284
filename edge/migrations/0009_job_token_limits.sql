-- A job's time limit, so its token stops at its start plus the limit plus a grace whatever it
-- reports, and when the sweep last asked the job's backend about it, so every running job is
-- asked about on a bound (RECHECK_AFTER_S), not only the silent ones.
ALTER TABLE jobs ADD COLUMN time_limit_s INTEGER;
ALTER TABLE jobs ADD COLUMN checked_at INTEGER;
