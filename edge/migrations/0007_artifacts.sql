-- A job's artifacts in R2 (bucket ARTIFACTS, key jobs/<job id>/<name>), uploaded by the job in
-- parts with its own token. A row is 'uploading' from the job's declaration (name, size,
-- sha256, part size) until its last part arrives, then 'stored'. Its owner's id is copied here
-- so that the account's quota is one indexed sum.
CREATE TABLE artifacts (
  job_id TEXT NOT NULL REFERENCES jobs(id),
  name TEXT NOT NULL,
  user_id TEXT NOT NULL,
  size INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  part_size INTEGER NOT NULL,
  parts INTEGER NOT NULL,
  -- R2's multipart upload id, while uploading.
  upload_id TEXT,
  state TEXT NOT NULL CHECK (state IN ('uploading', 'stored')),
  created_at INTEGER NOT NULL,
  stored_at INTEGER,
  PRIMARY KEY (job_id, name)
);
CREATE INDEX artifacts_by_user ON artifacts(user_id);
CREATE INDEX artifacts_by_age ON artifacts(created_at);

-- The parts of an upload that arrived, with the etag R2 gave each (R2's binding cannot list
-- them). Parts arrive in order: part n is accepted once parts 1..n-1 are here.
CREATE TABLE artifact_parts (
  job_id TEXT NOT NULL,
  name TEXT NOT NULL,
  part INTEGER NOT NULL,
  etag TEXT NOT NULL,
  size INTEGER NOT NULL,
  PRIMARY KEY (job_id, name, part)
);
