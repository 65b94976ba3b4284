//! Logs pushed by jobs whose backend cannot serve them (Slurm): `POST /api/jobs/{id}/log?offset=N`
//! with the job's token stores a chunk in D1, and `GET /api/jobs/{id}/logs` reads it back. The
//! rules (retries, gaps, limits, byte offsets) are in `crate::job_logs`.

use super::access::JobCaller;
use super::db::{self, n, s};
use super::http::{self, ApiResult};
use crate::backends::adapter::LogChunk;
use crate::error::ApiError;
use crate::job_logs::{self, MAX_CHUNK_BYTES, MAX_LOG_BYTES, MAX_READ_BYTES};
use crate::wire;
use api::LogAccepted;
use serde::Deserialize;
use worker::{Env, Request};

/// The log's last stored piece, found by the primary key's order (pieces are contiguous, so it
/// ends where the log ends) without reading the others.
#[derive(Deserialize)]
struct Last {
    offset: i64,
    bytes: i64,
}

async fn last_piece(env: &Env, job_id: &str) -> ApiResult<Option<(u64, u64)>> {
    let row: Option<Last> = db::first(
        env,
        "SELECT offset, bytes FROM job_logs WHERE job_id = ? ORDER BY offset DESC LIMIT 1",
        &[s(job_id)],
    )
    .await?;
    Ok(row.map(|r| {
        let at = u64::try_from(r.offset).unwrap_or(0);
        (at, u64::try_from(r.bytes).unwrap_or(0))
    }))
}

async fn stored_bytes(env: &Env, job_id: &str) -> ApiResult<u64> {
    Ok(last_piece(env, job_id)
        .await?
        .map_or(0, |(at, bytes)| at + bytes))
}

/// Stores a chunk of the job's log. A job its cluster ran again pushes each attempt's log with
/// offsets of its own (`attempt=N`, Slurm's restart count): an attempt's log goes after the
/// ones before it, and a late chunk of an attempt that a newer one has followed is dropped.
pub async fn push(caller: JobCaller, mut req: Request, env: &Env) -> ApiResult<LogAccepted> {
    let job = caller.job();
    let query = req.url().ok();
    let query = query.as_ref().and_then(|u| u.query());
    let offset = wire::query_u64(query, "offset", 0)?;
    let attempt = wire::query_u64(query, "attempt", 0)?;
    let attempt = crate::attempts::check_attempt(attempt)?;
    let body = http::body(&mut req, MAX_CHUNK_BYTES).await?;
    let last = last_piece(env, &job.id).await?;
    let stored = last.map_or(0, |(at, bytes)| at + bytes);
    let Some(base) = super::attempts::log_base(env, &job.id, attempt, stored).await? else {
        return Ok(LogAccepted {
            next_offset: offset,
            stored: 0,
            dropped: body.len(),
            limit_bytes: MAX_LOG_BYTES,
        });
    };
    let plan = job_logs::plan_append(stored, base.saturating_add(offset), body.len())
        .map_err(|e| in_attempt(e, base))?;
    if plan.take > 0 {
        let text = job_logs::to_text(&body[plan.skip..plan.skip + plan.take]);
        let take = i64::try_from(plan.take).unwrap_or(i64::MAX);
        match last.filter(|(_, bytes)| job_logs::joins_last(*bytes, plan.take)) {
            // A small push joins the last piece, so tiny pushes do not make a row each. The
            // piece must still be as long as it was read: a racing duplicate changes nothing.
            Some((at, bytes)) => {
                db::run(
                    env,
                    "UPDATE job_logs SET text = text || ?, bytes = bytes + ? \
                     WHERE job_id = ? AND offset = ? AND bytes = ?",
                    &[
                        s(&text),
                        n(take),
                        s(&job.id),
                        n(i64::try_from(at).unwrap_or(i64::MAX)),
                        n(i64::try_from(bytes).unwrap_or(i64::MAX)),
                    ],
                )
                .await?;
            }
            // The primary key (job, offset) makes a racing duplicate of this piece a no-op.
            None => {
                db::run(
                    env,
                    "INSERT OR IGNORE INTO job_logs (job_id, offset, bytes, text) VALUES (?, ?, ?, ?)",
                    &[
                        s(&job.id),
                        n(i64::try_from(plan.offset).unwrap_or(i64::MAX)),
                        n(take),
                        s(&text),
                    ],
                )
                .await?;
            }
        }
    }
    let next = plan.offset + plan.take as u64;
    Ok(LogAccepted {
        next_offset: next.saturating_sub(base),
        stored: plan.take,
        dropped: plan.dropped,
        limit_bytes: MAX_LOG_BYTES,
    })
}

/// A refusal's `next_offset` counted in the attempt's own offsets, as the job sent its own.
fn in_attempt(mut e: ApiError, base: u64) -> ApiError {
    if let Some(next) = e
        .details
        .get("next_offset")
        .and_then(serde_json::Value::as_u64)
    {
        e.details["next_offset"] = serde_json::json!(next.saturating_sub(base));
        e.message = format!(
            "the edge has {} bytes of this attempt's log; a later chunk would leave a gap",
            next.saturating_sub(base)
        );
    }
    e
}

/// The last non-empty line of a pushed log (from its last 4 KiB), if the job pushed one: what a
/// failed job printed last says why it failed (the trainer's `onramp-train: error: …`).
pub async fn last_line(env: &Env, job_id: &str) -> ApiResult<Option<String>> {
    let stored = stored_bytes(env, job_id).await?;
    if stored == 0 {
        return Ok(None);
    }
    let tail = read(env, job_id, stored.saturating_sub(4096), true).await?;
    Ok(tail
        .text
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.chars().take(1000).collect()))
}

pub async fn read(env: &Env, job_id: &str, offset: u64, job_ended: bool) -> ApiResult<LogChunk> {
    #[derive(Deserialize)]
    struct Piece {
        offset: i64,
        text: String,
    }
    // Every piece that overlaps the window a read can return, [offset, offset + 64 KiB).
    let from = i64::try_from(offset).unwrap_or(i64::MAX);
    let rows: Vec<Piece> = db::all(
        env,
        "SELECT offset, text FROM job_logs WHERE job_id = ? AND offset + bytes > ? AND offset < ? \
         ORDER BY offset",
        &[
            s(job_id),
            n(from),
            n(from.saturating_add(i64::try_from(MAX_READ_BYTES).unwrap_or(i64::MAX))),
        ],
    )
    .await?;
    let pieces: Vec<(u64, String)> = rows
        .into_iter()
        .map(|p| (u64::try_from(p.offset).unwrap_or(0), p.text))
        .collect();
    let mut chunk = job_logs::read(&pieces, offset, job_ended);
    // The window may end before the log does: the end is where everything stored ends.
    chunk.eof = job_ended && chunk.next_offset >= stored_bytes(env, job_id).await?;
    Ok(chunk)
}
