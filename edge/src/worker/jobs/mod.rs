//! Jobs: submission (validate, hold the maximum cost, dispatch), listing, one job, its logs,
//! metrics, cancellation and checkpoint. A user only ever sees their own jobs: every query is
//! scoped by the caller's id, and another user's job is "not found".

pub mod row;
mod submit;

pub use submit::submit;

use super::access::{Admin, User};
use super::backends;
use super::db::{self, now_ms, s};
use super::http::{self, ApiResult};
use super::job_logs;
use super::report;
use crate::backends::adapter;
use crate::error::{ApiError, ErrorCode};
use crate::jobs::{JobState, JobWire};
use crate::time::format_rfc3339_ms;
use crate::wire;
use api::{
    AdminBackend, AdminBackendList, CheckpointEntry, CheckpointList, JobList, LogChunk, MetricsPage,
};
use row::{COLUMNS, JobRow};
use worker::{Env, Request, Response};

/// The caller's job, or 404 (also for another user's job, so ids cannot be probed).
pub async fn owned(env: &Env, user: &User, id: &str) -> ApiResult<JobRow> {
    wire::check_id(id)?;
    db::first(
        env,
        &format!("SELECT {COLUMNS} FROM jobs WHERE id = ? AND user_id = ?"),
        &[s(id), s(&user.id)],
    )
    .await?
    .ok_or_else(|| ApiError::not_found(format!("no job {id}")))
}

pub async fn list(user: User, env: &Env) -> ApiResult<JobList> {
    let rows: Vec<JobRow> = db::all(
        env,
        &format!("SELECT {COLUMNS} FROM jobs WHERE user_id = ? ORDER BY created_at DESC LIMIT 200"),
        &[s(&user.id)],
    )
    .await?;
    Ok(JobList {
        jobs: rows.iter().map(JobRow::wire).collect(),
    })
}

pub async fn get(user: &User, env: &Env, id: &str) -> ApiResult<JobWire> {
    let mut job = owned(env, user, id).await?;
    if refresh(env, &job).await {
        job = owned(env, user, id).await?;
    }
    let mut wire = job.wire();
    if job.attempt > 0 {
        wire.attempts = super::attempts::wire(env, &job.id).await?;
    }
    Ok(wire)
}

/// A live job the edge cannot learn about from its reports: one its backend has not confirmed
/// (asked for by id every 2 s while a page looks), one that waits in a queue (why, every 5 s), and
/// one that claimed to have ended (whether the backend agrees, every second). A page reading it
/// makes the edge ask the backend, briefly; a backend that does not answer changes nothing here,
/// and the reconcile sweep deals with jobs that stay silent.
async fn refresh(env: &Env, job: &JobRow) -> bool {
    let every_ms = if job.state().is_terminal() {
        return false;
    } else if job.ending.is_some() {
        1_000
    } else if job.remote_id.is_none() {
        2_000
    } else if matches!(
        job.state(),
        JobState::Queued | JobState::Requeued | JobState::Dispatching
    ) {
        // Dispatching with its backend's id: one that had already ended there when found.
        5_000
    } else {
        return false;
    };
    let last = job.last_report_at.unwrap_or(job.created_at);
    if now_ms() - last < every_ms {
        return false;
    }
    matches!(
        report::check(env, job, std::time::Duration::from_secs(2)).await,
        Ok(report::Checked::Finished | report::Checked::Updated)
    )
}

async fn backend_of(env: &Env, job: &JobRow) -> ApiResult<(Box<dyn adapter::Backend>, String)> {
    let config = backends::named(env, &job.backend)?;
    let remote = job.remote_id.clone().ok_or_else(|| {
        ApiError::new(
            ErrorCode::NotDispatched,
            "the job has not reached its backend yet",
        )
    })?;
    Ok((backends::adapter(env, &config).await?, remote))
}

pub async fn logs(user: User, req: Request, env: &Env, id: &str) -> ApiResult<LogChunk> {
    let offset = wire::query_u64(req.url().ok().as_ref().and_then(|u| u.query()), "offset", 0)?;
    let job = owned(env, &user, id).await?;
    let (a, remote) = backend_of(env, &job).await?;
    let Some(call) = a.logs(&remote, offset) else {
        // This backend's jobs push their log to the edge.
        return job_logs::read(env, &job.id, offset, job.state().is_terminal()).await;
    };
    let (status, body) = backends::send(&call, backends::timeout(env))
        .await
        .map_err(|e| e.into_api(&job.backend))?;
    a.parse_logs(status, &body)
        .map_err(|e| e.into_api(&job.backend))
}

pub async fn metrics(user: User, req: Request, env: &Env, id: &str) -> ApiResult<MetricsPage> {
    let since = wire::query_u64(req.url().ok().as_ref().and_then(|u| u.query()), "since", 0)?;
    let job = owned(env, &user, id).await?;
    let points = super::job_metrics::metrics_after(env, &job.id, since).await?;
    // `since` is inclusive, so the next poll asks from one past the last step seen.
    let next = points.last().map_or(since, |p| p.step + 1);
    Ok(MetricsPage {
        state: job.state(),
        job_id: job.id,
        metrics: points,
        next_since: next,
    })
}

pub async fn cancel(user: User, env: &Env, id: &str) -> ApiResult<JobWire> {
    let job = owned(env, &user, id).await?;
    if job.state().is_terminal() {
        return Err(ApiError::new(
            ErrorCode::AlreadyFinished,
            format!("the job is already {}", job.state().as_str()),
        ));
    }
    let (a, remote) = backend_of(env, &job).await?;
    mark_cancel_requested(env, &job.id).await?;
    let (status, body) = backends::send(&a.cancel(&remote), backends::timeout(env))
        .await
        .map_err(|e| e.into_api(&job.backend))?;
    a.parse_cancel(status, &body)
        .map_err(|e| e.into_api(&job.backend))?;
    // Billed by the backend's times when it already says the job stopped (and how: a job that
    // ended on its own before the cancel arrived keeps its own end); else by the edge's clock,
    // up to this moment, while the backend is still stopping it.
    let stopped = report::remote_status_within(env, &job, std::time::Duration::from_secs(2))
        .await
        .ok()
        .filter(|st| st.state.is_terminal())
        .map(|mut st| {
            // A job that never left the queue used no card time, whatever times the backend
            // keeps for it (Slurm gives a cancelled pending job its forecast start).
            if job.state() != JobState::Running {
                st.started_at_ms = None;
                st.ended_at_ms = None;
                st.suspended_ms = 0;
            }
            st
        });
    match stopped {
        Some(st) if st.state != JobState::Cancelled => {
            let message = st.end_words();
            report::finish(env, &job, st.state, st.span(), message.as_deref()).await?;
        }
        Some(st) => {
            report::finish(
                env,
                &job,
                JobState::Cancelled,
                st.span(),
                Some(report::CANCELLED_BY_USER),
            )
            .await?;
        }
        None => {
            report::finish(
                env,
                &job,
                JobState::Cancelled,
                Default::default(),
                Some(report::CANCELLED_BY_USER),
            )
            .await?;
        }
    }
    get(&user, env, id).await
}

/// Records the owner's wish before the backend hears of it: a sweep, a report or a page that
/// sees the job end from now on (the backend may stop it before its answer to the cancel comes
/// back) ends it with the owner's words, since `report::finish` reads the mark in the same
/// statement that ends the job. The mark stays when the backend does not answer: it may have
/// stopped the job all the same.
async fn mark_cancel_requested(env: &Env, id: &str) -> ApiResult<()> {
    db::run(
        env,
        "UPDATE jobs SET cancel_requested_at = COALESCE(cancel_requested_at, ?) \
         WHERE id = ? AND state IN ('dispatching', 'queued', 'running', 'requeued')",
        &[db::n(now_ms()), s(id)],
    )
    .await?;
    Ok(())
}

/// The checkpoint as the job's backend has it (one the job pushed to R2 is served by
/// `artifacts::job_checkpoint` before it asks here).
pub async fn checkpoint_from_backend(env: &Env, job: &JobRow) -> ApiResult<Response> {
    let id = job.id.as_str();
    let (a, remote) = backend_of(env, job).await?;
    let call = a
        .checkpoint(&remote)
        .ok_or_else(|| ApiError::not_found("this backend serves no checkpoints"))?;
    let mut answer = backends::open(&call, backends::timeout(env))
        .await
        .map_err(|e| e.into_api(&job.backend))?;
    let status = answer.status_code();
    if !(200..300).contains(&status) {
        // An error's body is the backend's few words.
        let body = answer.bytes().await.unwrap_or_default();
        adapter::common_status(status, &body)
            .map_err(|e| e.into_api(&job.backend))
            .map_err(|e| {
                if e.status == 404 {
                    ApiError::not_found(format!("job {id} has no checkpoint"))
                } else {
                    e
                }
            })?;
    }
    // tiny-train's checkpoint: one safetensors file (a trainer's result is the job's artifacts),
    // passed on as it comes, never held here whole.
    let (ctype, name) = ("application/octet-stream", format!("{id}.bin"));
    let body = match answer.body() {
        worker::ResponseBody::Stream(stream) => worker::ResponseBody::Stream(stream.clone()),
        worker::ResponseBody::Body(bytes) => worker::ResponseBody::Body(bytes.clone()),
        worker::ResponseBody::Empty => worker::ResponseBody::Empty,
    };
    let mut resp = Response::from_body(body).map_err(http::internal("response"))?;
    let h = resp.headers_mut();
    h.set("content-type", ctype)
        .map_err(http::internal("header"))?;
    h.set(
        "content-disposition",
        &format!("attachment; filename=\"{name}\""),
    )
    .map_err(http::internal("header"))?;
    Ok(resp)
}

pub async fn checkpoints(user: User, env: &Env) -> ApiResult<CheckpointList> {
    let rows: Vec<JobRow> = db::all(
        env,
        &format!("SELECT {COLUMNS} FROM jobs WHERE user_id = ? AND checkpoint = 1 ORDER BY created_at DESC"),
        &[s(&user.id)],
    )
    .await?;
    let checkpoints = rows
        .into_iter()
        .map(|j| CheckpointEntry {
            url: format!("/api/jobs/{}/checkpoint", j.id),
            ended_at: j.ended_at.map(format_rfc3339_ms),
            job_id: j.id,
            name: j.name,
        })
        .collect();
    Ok(CheckpointList { checkpoints })
}

/// The configured backends without their secrets.
pub fn admin_backends(_: Admin, env: &Env) -> ApiResult<AdminBackendList> {
    let backends = backends::configured(env)?
        .into_iter()
        .map(|b| AdminBackend {
            name: b.name,
            kind: b.kind,
            url: b.url,
            cards: b.cards,
        })
        .collect();
    Ok(AdminBackendList { backends })
}
