-- Accounts, sessions, API tokens, jobs, their metrics, and saved experiments. Money (ledger,
-- holds, promotion codes) lives in the Coordinator Durable Object, which serialises it.
CREATE TABLE users (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL UNIQUE,
  password_hash TEXT NOT NULL,
  salt TEXT NOT NULL,
  iterations INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE TABLE sessions (
  token_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id),
  expires_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE TABLE api_tokens (
  token_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id),
  name TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id),
  idempotency_key TEXT NOT NULL,
  name TEXT NOT NULL,
  spec TEXT NOT NULL,
  state TEXT NOT NULL,
  backend TEXT NOT NULL,
  remote_id TEXT,
  card TEXT NOT NULL,
  cards INTEGER NOT NULL,
  price_fen_per_hour INTEGER NOT NULL,
  hold_fen INTEGER NOT NULL,
  charged_fen INTEGER,
  settled INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  started_at INTEGER,
  ended_at INTEGER,
  last_report_at INTEGER,
  message TEXT,
  checkpoint INTEGER NOT NULL DEFAULT 0,
  token_hash TEXT NOT NULL,
  UNIQUE (user_id, idempotency_key)
);
CREATE INDEX jobs_by_user ON jobs (user_id, created_at);
CREATE INDEX jobs_active ON jobs (state, last_report_at);
CREATE TABLE job_metrics (
  job_id TEXT NOT NULL REFERENCES jobs (id),
  step INTEGER NOT NULL,
  loss REAL NOT NULL,
  val_loss REAL,
  lr REAL,
  tokens_per_s REAL,
  elapsed_s REAL NOT NULL,
  PRIMARY KEY (job_id, step)
);
CREATE TABLE experiments (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id),
  published INTEGER NOT NULL,
  snapshot TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
