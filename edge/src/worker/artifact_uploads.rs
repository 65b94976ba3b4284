//! A job's artifacts as the job uploads them (`artifacts.rs` keeps them): each file declared,
//! then sent in parts with the job's own token, every part streamed on to R2 as it arrives
//! (never held whole), the last one completing it; a declaration again resumes the upload.

use super::access::JobCaller;
use super::artifacts::{Row, forget, quota, received, row, used_bytes};
use super::db::{self, n, now_ms, s};
use super::http::{self, ApiResult};
use super::jobs::row::JobRow;
use super::objects::{self, bucket, holds, r2};
use crate::artifacts::{
    UploadState, check_part, check_quota, check_sha256, object_key, parse_name,
};
use crate::error::{ApiError, ErrorCode};
use crate::wire;
use api::artifacts::{artifact_path, choose_part_size, part_count};
use api::{NewUpload, Upload};
use serde::Deserialize;
use worker::{Bucket, Env, Request};

/// `POST /api/jobs/{id}/artifacts/{name}`: starts an upload, or resumes the one with the same
/// declaration (size, sha256 and, when given, part size); another declaration starts it over.
pub async fn start(
    caller: JobCaller,
    mut req: Request,
    env: &Env,
    segment: &str,
) -> ApiResult<Upload> {
    let job = caller.job();
    let name = parse_name(segment)?;
    let body = http::body(&mut req, wire::MAX_JSON_BYTES).await?;
    let d: NewUpload = wire::parse_json(&body)?;
    check_sha256(&d.sha256)?;
    let part_size = choose_part_size(d.size, d.part_size)
        .map_err(|m| ApiError::new(ErrorCode::InvalidField, m).with_field("part_size"))?;
    let existing = row(env, &job.id, &name).await?;
    if let Some(r) = &existing {
        let same = r.size as u64 == d.size
            && r.sha256 == d.sha256
            && d.part_size.is_none_or(|p| p == r.part_size as u64);
        if same {
            let got = received(env, &job.id, &name).await?;
            return Ok(r.upload(got));
        }
    }
    // The file this one replaces stays until the new one is known to fit: a refusal loses nothing.
    let replaced = existing.as_ref().map_or(0, |r| r.size.max(0) as u64);
    let used = used_bytes(env, &job.user_id)
        .await?
        .saturating_sub(replaced);
    check_quota(used, d.size, quota(env))?;
    if let Some(r) = &existing {
        forget(env, r).await?;
    }
    let key = object_key(&job.id, &name);
    let upload = bucket(env)?
        .create_multipart_upload(&key)
        .execute()
        .await
        .map_err(r2("create multipart upload"))?;
    let upload_id = upload.upload_id().await;
    let parts = part_count(d.size, part_size);
    let row_of = (
        d.size,
        d.sha256.as_str(),
        part_size,
        parts,
        upload_id.as_str(),
    );
    if insert(env, job, &name, row_of).await? == 0 {
        // A declaration of the same name at the same moment won: its upload is the one.
        let _ = upload.abort().await;
        return match row(env, &job.id, &name).await? {
            Some(r) if r.size as u64 == d.size && r.sha256 == d.sha256 => {
                Ok(r.upload(received(env, &job.id, &name).await?))
            }
            // The clients declare again on this answer.
            _ => Err(ApiError::new(
                ErrorCode::UploadExpired,
                format!("another declaration of {name:?} came at the same moment; declare again"),
            )),
        };
    }
    // Uploads declared at the same moment each saw room: counted together, one past the quota
    // withdraws.
    let total = used_bytes(env, &job.user_id).await?;
    if let Err(no) = check_quota(total - d.size.min(total), d.size, quota(env)) {
        if let Some(r) = row(env, &job.id, &name).await? {
            forget(env, &r).await?;
        }
        return Err(no);
    }
    Ok(Upload {
        name,
        size: d.size,
        sha256: d.sha256,
        part_size,
        parts,
        received: 0,
        complete: false,
    })
}

/// The row of a new upload (size, sha256, part size, parts, R2's upload id), unless the name
/// has one already (a declaration at the same moment): how many rows it wrote.
async fn insert(
    env: &Env,
    job: &JobRow,
    name: &str,
    (size, sha256, part_size, parts, upload_id): (u64, &str, u64, u64, &str),
) -> ApiResult<u64> {
    db::run(
        env,
        "INSERT INTO artifacts (job_id, name, user_id, size, sha256, part_size, parts, upload_id, state, created_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'uploading', ?) ON CONFLICT DO NOTHING",
        &[
            s(&job.id),
            s(name),
            s(&job.user_id),
            n(size as i64),
            s(sha256),
            n(part_size as i64),
            n(parts as i64),
            s(upload_id),
            n(now_ms()),
        ],
    )
    .await
}

/// `PUT /api/jobs/{id}/artifacts/{name}?part=N`: one part, streamed on to R2; the last one
/// completes the artifact. The entry does not buffer this route's body (`routes::streams_body`).
pub async fn put_part(
    caller: JobCaller,
    req: Request,
    env: &Env,
    segment: &str,
) -> ApiResult<Upload> {
    let job = caller.job();
    let name = parse_name(segment)?;
    let query = req.url().ok();
    let query = query.as_ref().and_then(|u| u.query());
    if !query.is_some_and(|q| q.split('&').any(|kv| kv.starts_with("part="))) {
        return Err(ApiError::new(
            ErrorCode::InvalidQuery,
            "say which part this is: ?part=N, from 1",
        )
        .with_details(serde_json::json!({"parameter": "part"})));
    }
    let part = wire::query_u64(query, "part", 0)?;
    let r = row(env, &job.id, &name).await?.ok_or_else(|| {
        ApiError::not_found(format!(
            "job {} has no upload of {name:?}: start it with POST {} first",
            job.id,
            artifact_path(&job.id, &name)
        ))
    })?;
    if r.stored() && (1..=r.parts as u64).contains(&part) {
        // The answer to the last part was lost and the job sent it again: it is stored.
        return Ok(r.upload(r.parts as u64));
    }
    let got = received(env, &job.id, &name).await?;
    let state = UploadState {
        size: r.size as u64,
        part_size: r.part_size as u64,
        parts: r.parts as u64,
        received: got,
    };
    let length = http::header(&req, "content-length").and_then(|l| l.trim().parse::<u64>().ok());
    check_part(&state, part, length)?;
    let upload_id = r
        .upload_id
        .as_deref()
        .ok_or_else(|| ApiError::internal("an upload without its id"))?;
    let key = object_key(&job.id, &name);
    let b = bucket(env)?;
    let upload = b
        .resume_multipart_upload(&key, upload_id)
        .map_err(r2("resume upload"))?;
    let data = match req.inner().body() {
        Some(stream) if length != Some(0) => worker::Data::ReadableStream(stream),
        _ => worker::Data::Bytes(Vec::new()),
    };
    let uploaded = match upload.upload_part(part as u16, data).await {
        Ok(uploaded) => uploaded,
        Err(e) if crate::artifacts::upload_gone(&e.to_string()) => return expired(env, &r).await,
        Err(e) => return Err(objects::part_not_taken(part, &e)),
    };
    let took = (part, uploaded.etag(), length.unwrap_or(0));
    let recorded = objects::record_part(
        env,
        ("artifacts", "artifact_parts"),
        [("job_id", &job.id), ("name", &name)],
        upload_id,
        (took.0, &took.1, took.2),
    )
    .await?;
    if !recorded {
        // The upload was forgotten meanwhile: answered as one storage ended.
        return expired(env, &r).await;
    }
    let got = got.max(part);
    if got < state.parts {
        return Ok(r.upload(got));
    }
    complete(env, &b, &r, upload_id).await?;
    let done = row(env, &job.id, &name)
        .await?
        .ok_or_else(|| ApiError::internal("artifact row vanished"))?;
    Ok(done.upload(state.parts))
}

/// R2 no longer knows the upload: `Ok` when another request just completed it, else storage
/// ended it (the bucket's lifecycle), and it is forgotten: declared again, it starts over.
async fn expired(env: &Env, r: &Row) -> ApiResult<Upload> {
    // Unless declared again meanwhile: that upload is not this one's to forget.
    let mine = row(env, &r.job_id, &r.name)
        .await?
        .is_some_and(|now| !now.stored() && now.upload_id == r.upload_id);
    if mine
        && holds(
            env,
            r.created_at,
            &object_key(&r.job_id, &r.name),
            r.size as u64,
        )
        .await?
    {
        mark_stored(env, r).await?;
    } else if mine {
        forget(env, r).await?;
    }
    if let Some(now) = row(env, &r.job_id, &r.name).await?.filter(Row::stored) {
        return Ok(now.upload(now.parts as u64));
    }
    Err(ApiError::new(
        ErrorCode::UploadExpired,
        format!(
            "storage ended the unfinished upload of {:?} before its last part came; declare it \
             again with POST {} and send every part",
            r.name,
            artifact_path(&r.job_id, &r.name)
        ),
    ))
}

/// Completes an upload whose parts all arrived: R2 joins them, and the artifact is stored.
async fn complete(env: &Env, b: &Bucket, r: &Row, upload_id: &str) -> ApiResult<()> {
    #[derive(Deserialize)]
    struct Part {
        part: i64,
        etag: String,
    }
    let parts: Vec<Part> = db::all(
        env,
        "SELECT part, etag FROM artifact_parts WHERE job_id = ? AND name = ? ORDER BY part",
        &[s(&r.job_id), s(&r.name)],
    )
    .await?;
    let key = object_key(&r.job_id, &r.name);
    let upload = b
        .resume_multipart_upload(&key, upload_id)
        .map_err(r2("resume upload"))?;
    let completed = upload
        .complete(
            parts
                .into_iter()
                .map(|p| worker::UploadedPart::new(p.part as u16, p.etag)),
        )
        .await;
    match completed {
        Err(e) if crate::artifacts::upload_gone(&e.to_string()) => {
            return expired(env, r).await.map(drop);
        }
        other => other.map_err(r2("complete upload"))?,
    };
    mark_stored(env, r).await
}

/// The row of an upload R2 has joined, while it is still this upload's: stored, its parts
/// forgotten.
async fn mark_stored(env: &Env, r: &Row) -> ApiResult<()> {
    let tables = ("artifacts", "artifact_parts");
    let key = [("job_id", r.job_id.as_str()), ("name", r.name.as_str())];
    objects::mark_stored(env, tables, key, r.upload_id.as_deref()).await
}
