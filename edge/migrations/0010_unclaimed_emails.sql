-- An email belongs to the account that verifies it first, not to whoever signs up with it first:
-- a sign-up with an email that already has an account makes a new, unverified account and answers
-- exactly as for a new email, so sign-up tells nobody which emails have accounts. Only one
-- account may hold an email verified (the partial unique index); verification refuses the rest,
-- and the cron sweep removes them (edge/src/worker/account_sweep.rs). SQLite cannot drop a
-- column's UNIQUE, so the table is rebuilt. The foreign keys into it are deferred, and the rows
-- go back into the new `users` itself (not into a table renamed to it), so that every session,
-- token and job finds its account again before the migration's transaction commits.
PRAGMA defer_foreign_keys = true;
CREATE TABLE users_copy AS
  SELECT id, email, password_hash, salt, iterations, created_at, email_verified_at FROM users;
DROP TABLE users;
CREATE TABLE users (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL,
  password_hash TEXT NOT NULL,
  salt TEXT NOT NULL,
  iterations INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  email_verified_at INTEGER
);
INSERT INTO users (id, email, password_hash, salt, iterations, created_at, email_verified_at)
  SELECT id, email, password_hash, salt, iterations, created_at, email_verified_at FROM users_copy;
DROP TABLE users_copy;
CREATE UNIQUE INDEX users_verified_email ON users (email) WHERE email_verified_at IS NOT NULL;
CREATE INDEX users_email ON users (email, created_at);
