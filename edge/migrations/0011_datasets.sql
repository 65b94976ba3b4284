-- An account's datasets in R2 (bucket ARTIFACTS, key datasets/<user id>/<sha256>), uploaded by
-- their owner in parts as artifacts are. A dataset is content-addressed within its account: its
-- id is made from its SHA-256, so the same file uploaded twice is one row and one object. A row
-- is 'uploading' from its declaration until its last part arrives, then 'stored'. Its counts are
-- what the checker found before the upload.
CREATE TABLE datasets (
  user_id TEXT NOT NULL REFERENCES users(id),
  id TEXT NOT NULL,
  name TEXT NOT NULL,
  size INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  format TEXT NOT NULL,
  examples INTEGER NOT NULL,
  tokens INTEGER NOT NULL,
  exact INTEGER NOT NULL,
  part_size INTEGER NOT NULL,
  parts INTEGER NOT NULL,
  upload_id TEXT,
  state TEXT NOT NULL CHECK (state IN ('uploading', 'stored')),
  created_at INTEGER NOT NULL,
  stored_at INTEGER,
  PRIMARY KEY (user_id, id)
);

-- The parts of a dataset's upload that arrived, with the etag R2 gave each.
CREATE TABLE dataset_parts (
  user_id TEXT NOT NULL,
  id TEXT NOT NULL,
  part INTEGER NOT NULL,
  etag TEXT NOT NULL,
  size INTEGER NOT NULL,
  PRIMARY KEY (user_id, id, part)
);
