-- What a job's newest attempt has spent suspended by its cluster (Slurm's `scontrol suspend`),
-- as the sweep last heard it: the suspensions that ended, in ms, and when the one going on began
-- (NULL when the job is not suspended). Neither is card time: a job billed without its backend's
-- own end (a cancel that cannot wait for it, a job its backend forgot) leaves them out, and its
-- token lasts that much longer. An attempt its cluster ran again keeps what it spent suspended
-- when it ended, which its bill leaves out.
ALTER TABLE jobs ADD COLUMN suspended_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN suspended_since INTEGER;
ALTER TABLE job_attempts ADD COLUMN suspended_ms INTEGER NOT NULL DEFAULT 0;
