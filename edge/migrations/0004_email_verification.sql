-- The trial credit is given when the owner of an account's email opens the mailed link
-- (edge/src/email_link.rs), not at sign-up: when that happened, epoch ms; NULL until then.
ALTER TABLE users ADD COLUMN email_verified_at INTEGER;

-- Mail of MAIL_SENDER=outbox (local development and the tests): kept here instead of sent,
-- printed to the log, and readable by the operator at GET /api/admin/outbox?to=<email>.
CREATE TABLE outbox (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  to_email TEXT NOT NULL,
  subject TEXT NOT NULL,
  text TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX outbox_to ON outbox (to_email, id);
