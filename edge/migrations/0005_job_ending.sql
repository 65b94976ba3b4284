-- A terminal state a job reported about itself while its backend still said it ran: the edge
-- settles the job only once the backend agrees that it ended (and by the backend's times), so a
-- job's own token cannot end its billing early. NULL when the job has claimed nothing.
ALTER TABLE jobs ADD COLUMN ending TEXT;
