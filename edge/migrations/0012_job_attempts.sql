-- The runs of a job that its cluster started again (a Slurm requeue, a preemption, a node that
-- died): each attempt's start and end on the backend's clock, both billed, and where its log
-- begins in the job's stored log. A job that ran once has at most one row, attempt 0. `attempt`
-- on the job is the newest attempt the edge has heard of, so that news of an older one (a late
-- answer) cannot move the job back.
CREATE TABLE job_attempts (
  job_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  started_at INTEGER,
  ended_at INTEGER,
  log_offset INTEGER,
  PRIMARY KEY (job_id, attempt)
);
ALTER TABLE jobs ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;
