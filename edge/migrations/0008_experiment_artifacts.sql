-- The job whose artifacts an experiment shares with its link (its owner asked, with
-- share_artifacts), kept beside the snapshot: the snapshot itself names no job.
ALTER TABLE experiments ADD COLUMN artifacts_job_id TEXT;
