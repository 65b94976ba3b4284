//! The runner's HTTP API. Every route needs `Authorization: Bearer <runner secret>`; every error
//! is the JSON error shape.
//!
//! - `POST /jobs` → 201 `{"id","state"}`; `GET /jobs`, `GET /jobs/{id}` → job views;
//! - `GET /jobs/{id}/logs?offset=N` → `{"offset","next_offset","text","eof"}`;
//! - `POST /jobs/{id}/cancel` → `{"id","state"}`; `GET /jobs/{id}/checkpoint` → the bytes;
//! - `GET /health` → identity and resources.

use crate::error::ApiError;
use crate::jobs::Runner;
use crate::wire::{Health, JobRef, JobRequest, JobView, LogChunk, Resources, SubmitWire};
use axum::body::Bytes;
use axum::extract::{Path, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;

/// Shared state of the HTTP handlers.
pub struct AppState {
    pub secret: String,
    pub runner: Arc<Runner>,
}

/// The most log text one request returns; the client pages on with `next_offset`.
pub const LOG_CHUNK_BYTES: u64 = 64 * 1024;

/// Largest request body: a spec and an environment, never data.
const MAX_BODY_BYTES: usize = 1024 * 1024;

pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/jobs", post(submit).get(list))
        .route("/jobs/{id}", get(job))
        .route("/jobs/{id}/logs", get(logs))
        .route("/jobs/{id}/cancel", post(cancel))
        .route("/jobs/{id}/checkpoint", get(checkpoint))
        .fallback(no_route)
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            require_secret,
        ))
        .with_state(state)
}

async fn health(State(s): State<Arc<AppState>>) -> Json<Health> {
    Json(Health {
        ok: true,
        service: "onramp-runner".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        resources: Resources {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            gpus: 0,
            memory_bytes: memory_bytes(),
            running_jobs: s.runner.running_jobs(),
        },
        sandbox: s.runner.sandbox.is_some(),
    })
}

/// Total memory from `/proc/meminfo` (0 where there is none).
fn memory_bytes() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

async fn submit(
    State(s): State<Arc<AppState>>,
    body: Bytes,
) -> Result<(StatusCode, Json<JobRef>), ApiError> {
    let wire: SubmitWire = serde_json::from_slice(&body).map_err(|e| {
        ApiError::bad_request("body", format!("the request body is not a valid job: {e}"))
            .with_details(serde_json::json!({
                "field": "body", "line": e.line(), "column": e.column()
            }))
    })?;
    let req = JobRequest::try_from(wire)?;
    let r = s.runner.submit(req)?;
    Ok((StatusCode::CREATED, Json(r)))
}

/// Every job, or with `?job_id=` only the one the edge submitted under that id (the edge asks
/// after a submission whose answer it never got).
async fn list(
    State(s): State<Arc<AppState>>,
    Query(q): Query<HashMap<String, String>>,
) -> Json<Vec<JobView>> {
    let mut jobs = s.runner.list();
    if let Some(job_id) = q.get("job_id") {
        jobs.retain(|j| &j.job_id == job_id);
    }
    Json(jobs)
}

async fn job(
    State(s): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Json<JobView>, ApiError> {
    s.runner.get(&id).map(Json)
}

async fn cancel(
    State(s): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Json<JobRef>, ApiError> {
    s.runner.cancel(&id).await.map(Json)
}

async fn logs(
    State(s): State<Arc<AppState>>,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<LogChunk>, ApiError> {
    let record = s
        .runner
        .record(&id)
        .ok_or_else(|| ApiError::no_such_job(&id))?;
    let offset = match q.get("offset") {
        None => 0,
        Some(v) => v.parse::<u64>().map_err(|_| {
            ApiError::bad_request("offset", format!("offset {v:?} is not a byte offset"))
        })?,
    };
    // Read the state before the file: a job that ended before this read has written all of it.
    let ended = record.state.is_terminal();
    let (bytes, len) = read_from(s.runner.store.open_log(&id), offset, LOG_CHUNK_BYTES)?;
    let (text, used) = utf8_prefix(&bytes, ended && offset + (bytes.len() as u64) >= len);
    let next_offset = offset + used as u64;
    Ok(Json(LogChunk {
        offset,
        next_offset,
        text,
        eof: ended && next_offset >= len,
    }))
}

/// Up to `max` bytes of the opened log from `offset`, and the file's length. A log that does not
/// exist yet (a queued job) is empty; one the job replaced by anything but a file is not read.
fn read_from(
    opened: std::io::Result<std::fs::File>,
    offset: u64,
    max: u64,
) -> Result<(Vec<u8>, u64), ApiError> {
    let mut f = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if offset > 0 {
                return Err(past_end(offset, 0));
            }
            return Ok((Vec::new(), 0));
        }
        Err(e) => {
            return Err(ApiError::conflict(format!(
                "the job's log cannot be read: the job put something other than a file in its \
                 place ({e})"
            )));
        }
    };
    let io = |e: std::io::Error| ApiError::internal(format!("cannot read the log: {e}"));
    let len = f.metadata().map_err(io)?.len();
    if offset > len {
        return Err(past_end(offset, len));
    }
    f.seek(SeekFrom::Start(offset)).map_err(io)?;
    let mut buf = Vec::new();
    f.take(max).read_to_end(&mut buf).map_err(io)?;
    Ok((buf, len))
}

fn past_end(offset: u64, len: u64) -> ApiError {
    ApiError::bad_request(
        "offset",
        format!("offset {offset} is past the end of the log ({len} bytes)"),
    )
}

/// The longest prefix of `bytes` that is whole UTF-8, and how many bytes it used. A character
/// cut by the chunk's end waits for the next request (the job may still be writing it); at the
/// end of a finished log, or where the bytes are not UTF-8 at all, they are replaced (U+FFFD) so
/// that reading always progresses.
pub fn utf8_prefix(bytes: &[u8], at_end: bool) -> (String, usize) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (s.to_string(), bytes.len()),
        Err(e) if e.error_len().is_none() && !at_end => {
            let n = e.valid_up_to();
            (String::from_utf8_lossy(&bytes[..n]).into_owned(), n)
        }
        Err(_) => (String::from_utf8_lossy(bytes).into_owned(), bytes.len()),
    }
}

async fn checkpoint(
    State(s): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    s.runner
        .record(&id)
        .ok_or_else(|| ApiError::no_such_job(&id))?;
    let file = match s.runner.store.open_checkpoint(&id) {
        Ok(f) => f,
        // Missing, or anything but a regular file (a link the job put there): none to serve.
        Err(_) => {
            return Err(ApiError::not_found(format!(
                "job {id} has no checkpoint (yet)"
            )));
        }
    };
    let len = file
        .metadata()
        .map_err(|e| ApiError::internal(format!("cannot read the checkpoint: {e}")))?
        .len();
    // Streamed in 64 KiB pieces: a checkpoint of any size (or a sparse file of 64 GiB) never
    // sits in the runner's memory.
    let stream =
        futures_util::stream::unfold(tokio::fs::File::from_std(file), |mut f| async move {
            use tokio::io::AsyncReadExt;
            let mut buf = vec![0u8; 1 << 16];
            match f.read(&mut buf).await {
                Ok(0) => None,
                Ok(n) => {
                    buf.truncate(n);
                    Some((Ok(axum::body::Bytes::from(buf)), f))
                }
                Err(e) => Some((Err(e), f)),
            }
        });
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_string()),
            (header::CONTENT_LENGTH, len.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{id}-model.safetensors\""),
            ),
        ],
        axum::body::Body::from_stream(stream),
    )
        .into_response())
}

async fn no_route(req: Request) -> ApiError {
    ApiError::not_found(format!(
        "no route for {} {}",
        req.method(),
        req.uri().path()
    ))
}

/// Equality of two secrets in time that depends on neither: both are hashed first (which hides
/// their lengths) and the digests compared without an early exit.
fn same_secret(given: &str, expected: &str) -> bool {
    use sha2::{Digest, Sha256};
    let (a, b) = (Sha256::digest(given), Sha256::digest(expected));
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

async fn require_secret(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let expected = format!("Bearer {}", state.secret);
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if !given.is_some_and(|g| same_secret(g, &expected)) {
        let body = serde_json::json!({"error": {"code": "unauthorized",
            "message": "missing or wrong Authorization: Bearer <runner secret>", "details": null}});
        return (StatusCode::UNAUTHORIZED, Json(body)).into_response();
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("Bearer s3cret", "Bearer s3cret"));
        for other in [
            "Bearer s3cre",
            "Bearer s3cret ",
            "Bearer S3cret",
            "",
            "Bearer s3creu",
        ] {
            assert!(!same_secret(other, "Bearer s3cret"), "{other:?}");
        }
    }

    #[test]
    fn utf8_prefix_waits_for_a_cut_character_and_progresses_on_garbage() {
        let s = "añb".as_bytes(); // ñ is two bytes
        assert_eq!(utf8_prefix(&s[..2], false), ("a".to_string(), 1));
        assert_eq!(utf8_prefix(&s[..2], true), ("a\u{fffd}".to_string(), 2));
        assert_eq!(utf8_prefix(s, false), ("añb".to_string(), 4));
        assert_eq!(
            utf8_prefix(b"\xff\xfeok", false),
            ("\u{fffd}\u{fffd}ok".to_string(), 4)
        );
        assert_eq!(utf8_prefix(&s[1..2], false), (String::new(), 0));
        assert_eq!(utf8_prefix(&s[1..2], true), ("\u{fffd}".to_string(), 1));
    }
}
