-- The first schema: an empty start that proves migrations run. Accounts, ledger, jobs and
-- experiments arrive in later migrations.
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', '1');
