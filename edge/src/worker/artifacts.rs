//! A job's artifacts in R2 (`ARTIFACTS`): the job uploads each file in parts with its own token,
//! every part streamed on to R2 as it arrives (never held whole); its owner lists, downloads
//! (with `Range`) and deletes them. D1 keeps each artifact's declaration and the parts that
//! arrived (R2's binding cannot list an upload's parts), so an upload cut off resumes. The
//! decisions are `crate::artifacts`'s, tested natively.

use super::access::User;
use super::db::{self, n, s};
use super::http::ApiResult;
use super::jobs;
use super::objects::{Object, bucket, r2, serve_object};
use crate::artifacts::{object_key, parse_name};
use crate::error::ApiError;
use crate::time::format_rfc3339_ms;
use api::artifacts::artifact_path;
use api::{Artifact, ArtifactDeleted, ArtifactList, Upload};
use serde::Deserialize;
use worker::{Env, Request, Response};

/// Bytes an account's artifacts may take when `ARTIFACT_QUOTA_BYTES` is not set (10 GiB).
const QUOTA_BYTES: i64 = 10 << 30;
/// How long an artifact is kept when `ARTIFACT_RETENTION` is not set: 30 days, in seconds.
const RETENTION_S: u64 = 30 * 86_400;
/// How long an unfinished upload counts against the quota at most (R2 ends it after seven days).
const UNFINISHED_S: u64 = 6 * 86_400;

#[derive(Debug, Deserialize)]
pub(super) struct Row {
    pub(super) job_id: String,
    pub(super) name: String,
    pub(super) size: i64,
    pub(super) sha256: String,
    pub(super) part_size: i64,
    pub(super) parts: i64,
    pub(super) upload_id: Option<String>,
    pub(super) state: String,
    pub(super) stored_at: Option<i64>,
    pub(super) created_at: i64,
}

const ROW: &str =
    "job_id, name, size, sha256, part_size, parts, upload_id, state, stored_at, created_at";

impl Row {
    pub(super) fn stored(&self) -> bool {
        self.state == "stored"
    }

    pub(super) fn upload(&self, received: u64) -> Upload {
        Upload {
            name: self.name.clone(),
            size: self.size as u64,
            sha256: self.sha256.clone(),
            part_size: self.part_size as u64,
            parts: self.parts as u64,
            received: if self.stored() {
                self.parts as u64
            } else {
                received
            },
            complete: self.stored(),
        }
    }
}

pub(super) fn quota(env: &Env) -> u64 {
    db::setting(env, "ARTIFACT_QUOTA_BYTES", QUOTA_BYTES).max(0) as u64
}

/// How long an artifact is kept after it is stored, in seconds (`ARTIFACT_RETENTION`, a duration).
fn retention_s(env: &Env) -> u64 {
    db::duration_setting(env, "ARTIFACT_RETENTION", RETENTION_S)
}

/// The retention as the account page shows it: in days, a part of a day counted as one.
fn retention_days(env: &Env) -> u64 {
    retention_s(env).div_ceil(86_400)
}

pub(super) async fn row(env: &Env, job_id: &str, name: &str) -> ApiResult<Option<Row>> {
    db::first(
        env,
        &format!("SELECT {ROW} FROM artifacts WHERE job_id = ? AND name = ?"),
        &[s(job_id), s(name)],
    )
    .await
}

/// How many parts arrived in order: parts 1..=k are all stored.
pub(super) async fn received(env: &Env, job_id: &str, name: &str) -> ApiResult<u64> {
    #[derive(Deserialize)]
    struct Part {
        part: i64,
    }
    let parts: Vec<Part> = db::all(
        env,
        "SELECT part FROM artifact_parts WHERE job_id = ? AND name = ? ORDER BY part",
        &[s(job_id), s(name)],
    )
    .await?;
    Ok(parts
        .iter()
        .zip(1i64..)
        .take_while(|(p, want)| p.part == *want)
        .count() as u64)
}

/// An account's use of its artifact quota (`GET /api/me`).
pub async fn usage(env: &Env, user_id: &str) -> ApiResult<api::ArtifactUsage> {
    Ok(api::ArtifactUsage {
        used_bytes: used_bytes(env, user_id).await?,
        quota_bytes: quota(env),
        retention_days: retention_days(env),
    })
}

/// The bytes an account's artifacts take, uploads under way included.
pub(super) async fn used_bytes(env: &Env, user_id: &str) -> ApiResult<u64> {
    let sql = "SELECT SUM(size) AS total FROM artifacts WHERE user_id = ?";
    db::total(env, sql, &[s(user_id)]).await
}

/// Forgets an artifact: its R2 object or unfinished upload, its parts and its row.
pub(super) async fn forget(env: &Env, r: &Row) -> ApiResult<()> {
    let b = bucket(env)?;
    let key = object_key(&r.job_id, &r.name);
    match (&r.upload_id, r.stored()) {
        (Some(upload), false) => {
            // An upload R2 no longer knows (aborted, or expired) has nothing left to abort.
            if let Ok(u) = b.resume_multipart_upload(&key, upload) {
                let _ = u.abort().await;
            }
        }
        _ => b.delete(&key).await.map_err(r2("delete"))?,
    }
    db::run(
        env,
        "DELETE FROM artifact_parts WHERE job_id = ? AND name = ?",
        &[s(&r.job_id), s(&r.name)],
    )
    .await?;
    db::run(
        env,
        "DELETE FROM artifacts WHERE job_id = ? AND name = ?",
        &[s(&r.job_id), s(&r.name)],
    )
    .await?;
    Ok(())
}

/// `GET /api/jobs/{id}/artifacts`: the owner's stored artifacts of one job.
pub async fn list(user: User, env: &Env, id: &str) -> ApiResult<ArtifactList> {
    let job = jobs::owned(env, &user, id).await?;
    let rows: Vec<Row> = db::all(
        env,
        &format!("SELECT {ROW} FROM artifacts WHERE job_id = ? ORDER BY name"),
        &[s(&job.id)],
    )
    .await?;
    let used = used_bytes(env, &user.id).await?;
    let (stored, under_way): (Vec<Row>, Vec<Row>) = rows.into_iter().partition(Row::stored);
    let mut uploads = Vec::new();
    for r in under_way {
        let got = received(env, &r.job_id, &r.name).await?;
        uploads.push(r.upload(got));
    }
    Ok(ArtifactList {
        artifacts: stored
            .into_iter()
            .map(|r| Artifact {
                url: artifact_path(&r.job_id, &r.name),
                stored_at: format_rfc3339_ms(r.stored_at.unwrap_or(0)),
                name: r.name,
                size: r.size as u64,
                sha256: r.sha256,
            })
            .collect(),
        uploads,
        job_id: job.id,
        used_bytes: used,
        quota_bytes: quota(env),
        retention_days: retention_days(env),
    })
}

/// A job's stored artifacts, with the URLs `url_of(name)` gives them (an experiment's link
/// shares them under its own).
pub async fn stored_of(
    env: &Env,
    job_id: &str,
    url_of: impl Fn(&str) -> String,
) -> ApiResult<Vec<Artifact>> {
    let rows: Vec<Row> = db::all(
        env,
        &format!("SELECT {ROW} FROM artifacts WHERE job_id = ? AND state = 'stored' ORDER BY name"),
        &[s(job_id)],
    )
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| Artifact {
            url: url_of(&r.name),
            stored_at: format_rfc3339_ms(r.stored_at.unwrap_or(0)),
            name: r.name,
            size: r.size as u64,
            sha256: r.sha256,
        })
        .collect())
}

/// A stored artifact's bytes, read whole from R2, when it is at most `max` bytes; `None` for
/// one the job has not stored (or that is larger, or gone from the bucket).
pub async fn small(env: &Env, job_id: &str, name: &str, max: u64) -> ApiResult<Option<Vec<u8>>> {
    let Some(r) = row(env, job_id, name)
        .await?
        .filter(|r| r.stored() && r.size >= 0 && r.size as u64 <= max)
    else {
        return Ok(None);
    };
    let object = bucket(env)?
        .get(object_key(&r.job_id, &r.name))
        .execute()
        .await
        .map_err(r2("get"))?;
    match object.as_ref().and_then(|o| o.body()) {
        Some(body) => Ok(Some(body.bytes().await.map_err(r2("read"))?)),
        None => Ok(None),
    }
}

/// One artifact an experiment shares: served while the job still has it with the same bytes
/// (`sha256`) as when the snapshot was saved, else 404.
pub async fn serve_shared(
    env: &Env,
    job_id: &str,
    name: &str,
    sha256: &str,
    req: &Request,
) -> ApiResult<Response> {
    let r = row(env, job_id, name)
        .await?
        .filter(|r| r.stored() && r.sha256 == sha256)
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "the artifact {name:?} is no longer kept as it was when the experiment was saved"
            ))
        })?;
    let file = r.name.rsplit('/').next().unwrap_or("artifact").to_string();
    serve(env, &r, req, &file).await
}

/// One stored artifact of a job, served as [`download`] does; 404 when it is not stored. (The
/// caller has checked who may read it: `resume.rs`.)
pub async fn serve_stored(
    env: &Env,
    job_id: &str,
    name: &str,
    req: &Request,
) -> ApiResult<Response> {
    let r = row(env, job_id, name)
        .await?
        .filter(Row::stored)
        .ok_or_else(|| ApiError::not_found(format!("job {job_id} has no artifact {name:?}")))?;
    let file = r.name.rsplit('/').next().unwrap_or("artifact").to_string();
    serve(env, &r, req, &file).await
}

/// The owner's artifact, stored or under way, or 404 (another account's job is not found
/// either).
async fn owned_any(user: &User, env: &Env, id: &str, segment: &str) -> ApiResult<Row> {
    let job = jobs::owned(env, user, id).await?;
    let name = parse_name(segment)?;
    row(env, &job.id, &name)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("job {id} has no artifact {name:?}")))
}

/// The owner's stored artifact, or 404.
async fn owned(user: &User, env: &Env, id: &str, segment: &str) -> ApiResult<Row> {
    let r = owned_any(user, env, id, segment).await?;
    if r.stored() {
        return Ok(r);
    }
    Err(ApiError::not_found(format!(
        "job {id}'s artifact {:?} is still uploading",
        r.name
    )))
}

/// `GET /api/jobs/{id}/artifacts/{name}`: the file, streamed from R2 (one range when asked).
pub async fn download(
    user: User,
    req: Request,
    env: &Env,
    id: &str,
    segment: &str,
) -> ApiResult<Response> {
    let r = owned(&user, env, id, segment).await?;
    let file = r.name.rsplit('/').next().unwrap_or("artifact").to_string();
    serve(env, &r, &req, &file).await
}

/// `GET /api/jobs/{id}/checkpoint`: the checkpoint a tiny-train job pushed
/// (`model.safetensors`), streamed from R2 as `{id}.bin`; else the backend's, as it has it.
pub async fn job_checkpoint(user: User, req: Request, env: &Env, id: &str) -> ApiResult<Response> {
    let job = jobs::owned(env, &user, id).await?;
    match row(env, &job.id, CHECKPOINT).await?.filter(Row::stored) {
        Some(r) => serve(env, &r, &req, &format!("{id}.bin")).await,
        None => jobs::checkpoint_from_backend(env, &job).await,
    }
}

/// The artifact a tiny-train job pushes its checkpoint as (`runner/src/tiny_train.rs`).
pub const CHECKPOINT: &str = "model.safetensors";

/// One stored artifact's bytes from R2, whole or the range asked for, named `file`.
async fn serve(env: &Env, r: &Row, req: &Request, file: &str) -> ApiResult<Response> {
    let object = Object {
        key: object_key(&r.job_id, &r.name),
        size: r.size as u64,
        sha256: &r.sha256,
        file,
    };
    serve_object(env, object, req, || {
        format!("job {} has no artifact {:?}", r.job_id, r.name)
    })
    .await
}

/// `DELETE /api/jobs/{id}/artifacts/{name}`.
pub async fn delete(user: User, env: &Env, id: &str, segment: &str) -> ApiResult<ArtifactDeleted> {
    // An upload the job never finished is deleted too: it counts towards the quota.
    let r = owned_any(&user, env, id, segment).await?;
    forget(env, &r).await?;
    Ok(ArtifactDeleted {
        freed_bytes: r.size as u64,
        name: r.name,
    })
}

/// The cron sweep's share: artifacts stored longer ago than the retention, and uploads started
/// six days ago (before R2 ends them; the job's token wrote nothing long before) or that long
/// ago and never finished, are deleted. At most `limit` per run; how many went.
pub async fn sweep(env: &Env, limit: i64) -> ApiResult<u64> {
    let cutoff = db::ago_ms(retention_s(env));
    let unfinished = db::ago_ms(retention_s(env).min(UNFINISHED_S));
    let rows: Vec<Row> = db::all(
        env,
        &format!(
            "SELECT {ROW} FROM artifacts WHERE (state = 'stored' AND stored_at < ?) OR (state = 'uploading' AND created_at < ?) LIMIT ?"
        ),
        &[n(cutoff), n(unfinished), n(limit)],
    )
    .await?;
    let mut gone = 0;
    for r in &rows {
        forget(env, r).await?;
        gone += 1;
    }
    Ok(gone)
}
