-- Why a queued job waits, as its backend names it (Slurm's state_reason, e.g. "Resources"), so a
-- page can say it in the user's language; the English text goes in `message`.
ALTER TABLE jobs ADD COLUMN reason TEXT;

-- Logs that jobs push to the edge, for backends that cannot serve their output (Slurm). Pieces are
-- contiguous: each starts where the previous ended; `bytes` is the piece's length in the job's
-- own output (the text keeps every byte's place, see edge/src/job_logs.rs).
CREATE TABLE job_logs (
  job_id TEXT NOT NULL REFERENCES jobs (id),
  offset INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  text TEXT NOT NULL,
  PRIMARY KEY (job_id, offset)
);
