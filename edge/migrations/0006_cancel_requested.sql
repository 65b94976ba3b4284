-- When the job's owner asked to cancel it (Unix ms), written before the edge calls the backend.
-- Whoever records the job's end afterwards (the cancel itself, a report, the reconcile sweep, a
-- page's refresh) reads it in the same UPDATE that ends the job: a job that ends cancelled after
-- its owner asked keeps the owner's wording, however the backend words it and whoever wins.
ALTER TABLE jobs ADD COLUMN cancel_requested_at INTEGER;
