//! What jobs tell the edge (`POST /api/jobs/{id}/report` with the job's own token), how a job
//! reaches a terminal state and settles its hold, and what one look at a live job's backend does
//! with it ([`check`], for the job page and the reconcile sweep in `reconcile.rs`).

use super::access::JobCaller;
use super::backends;
use super::coordinator;
use super::db::{self, n, now_ms, s};
use super::http::{self, ApiResult};
use super::jobs::row::{self, JobRow};
use crate::backends::adapter::{self, BackendError, Span, Submitted};
use crate::backends::slurm::state::SUSPENDED;
use crate::coordinator::{Op, Settled};
use crate::credits::settle_fen;
use crate::error::{ApiError, ErrorCode};
use crate::jobs::JobState;
use crate::wire::Check;
use crate::wire::{self, Report};
use api::ReportAccepted;
use worker::{Env, Request};

pub async fn report(caller: JobCaller, mut req: Request, env: &Env) -> ApiResult<ReportAccepted> {
    let job = caller.job();
    let body = http::body(&mut req, wire::MAX_SPEC_BYTES).await?;
    let lines = http::header(&req, "content-type")
        .is_some_and(|t| t.trim().starts_with(crate::metric_points::METRIC_LINES));
    let r: Report = if lines {
        crate::metric_points::parse_metric_lines(&body)?
    } else {
        wire::parse_json(&body)?
    };
    r.check()?;
    let message = r.message.as_deref().map(wire::clean_message);
    super::job_metrics::store(env, &job.id, &r.metrics).await?;
    let now = now_ms();
    db::run(
        env,
        // A job that reports runs: a suspension the sweep saw has ended by now at the latest.
        "UPDATE jobs SET last_report_at = ?, message = COALESCE(?, message), \
         suspended_ms = suspended_ms + MAX(0, ? - COALESCE(suspended_since, ?)), suspended_since = NULL, \
         reason = CASE WHEN reason = ? THEN NULL ELSE reason END WHERE id = ?",
        &[n(now), db::opt_s(message.as_deref()), n(now), n(now), s(SUSPENDED), s(&job.id)],
    )
    .await?;
    let current = job.state();
    match r.state {
        Some(next) if current.can_become(next) && next.is_terminal() => {
            // A job's word alone never ends its billing: the backend must agree that it ended,
            // and its times are what is billed. Until it does, the claim is kept, and the job page
            // and the reconcile sweep ask the backend again (a job usually reports just before
            // its process exits).
            match remote_status(env, job).await {
                Ok(st) if st.state.is_terminal() => {
                    ended(env, job, &st, message, Some(next)).await?;
                }
                _ => {
                    db::run(
                        env,
                        "UPDATE jobs SET ending = ? WHERE id = ? AND state IN ('dispatching', 'queued', 'running', 'requeued')",
                        &[s(next.as_str()), s(&job.id)],
                    )
                    .await?;
                }
            }
        }
        Some(JobState::Running) => running(env, job, r.attempt.unwrap_or(0), now).await?,
        _ => {}
    }
    let after = row::by_id(env, &job.id)
        .await?
        .map_or(current, |j| j.state());
    Ok(ReportAccepted {
        state: after,
        metrics_stored: r.metrics.len(),
    })
}

/// The job says it runs: its attempt `attempt` started (on the edge's clock, unless the backend
/// said first). A job waiting in a queue, or requeued, runs; one running an older attempt runs
/// this one; a report from an attempt older than the newest known changes nothing.
///
/// A job's word alone never starts a new attempt: each attempt has the whole time limit, its
/// token counts from the newest attempt's start, and a bill by the edge's clock counts from it,
/// so a job (or whoever holds its token) that could name attempt after attempt would keep its
/// token for ever and shorten its own bill. An attempt past the newest the edge knows counts
/// only once its backend says it has reached it; otherwise the report changes nothing, and the
/// sweep records the attempt when the backend shows it.
async fn running(env: &Env, job: &JobRow, attempt: u32, now: i64) -> ApiResult<()> {
    let k = i64::from(attempt);
    if k < job.attempt || job.state().is_terminal() {
        return Ok(());
    }
    if k > job.attempt {
        match remote_status(env, job).await {
            // What the backend says of the attempts counts first: the earlier ones end where it
            // requeued the job, and this one starts when it says.
            Ok(st) if st.attempt.is_some_and(|b| b >= attempt) => {
                super::attempts::observe(env, job, &st, now).await?;
            }
            _ => return Ok(()),
        }
    }
    super::attempts::started(env, &job.id, attempt, now).await?;
    db::run(
        env,
        "UPDATE jobs SET state = 'running', attempt = ?, started_at = COALESCE(started_at, ?), reason = NULL, \
         message = CASE WHEN reason IS NOT NULL OR state IN ('dispatching', 'requeued') THEN NULL ELSE message END, \
         suspended_ms = CASE WHEN attempt < ? THEN 0 ELSE suspended_ms END, suspended_since = NULL \
         WHERE id = ? AND attempt <= ? \
         AND (state IN ('dispatching', 'queued', 'requeued') OR (state = 'running' AND attempt < ?))",
        &[n(k), n(now), n(k), s(&job.id), n(k), n(k)],
    )
    .await?;
    Ok(())
}

/// Finishes a job its backend says has ended, by the backend's state and times; the message is
/// the job's own when it gave one. A job that says it stopped at its time limit (its trainer
/// saved a checkpoint at the warning Slurm sends before the limit) ended `timed_out`, though its
/// backend saw it exit first: it pays the card time it used, as a failed job does, not the
/// whole limit.
async fn ended(
    env: &Env,
    job: &JobRow,
    st: &adapter::RemoteStatus,
    own_message: Option<String>,
    own_state: Option<JobState>,
) -> ApiResult<()> {
    let said_state = own_state.or_else(|| job.ending.as_deref().and_then(JobState::parse));
    let (state, billed_as) = match (st.state, said_state) {
        (JobState::Failed, Some(JobState::TimedOut)) => (JobState::TimedOut, JobState::Failed),
        (s, _) => (s, s),
    };
    // A job that reported how it ended keeps its words over the backend's.
    let said = own_message.or_else(|| job.ending.as_ref().and(job.message.clone()));
    let mut message = said.or_else(|| st.end_words());
    // A failure known only by its exit code gets the last line the job printed, when the job
    // pushed its log here (a Slurm job's script reports just the code).
    let bare = message
        .as_deref()
        .is_none_or(|m| m.starts_with("exited with code") || m.starts_with("exit code"));
    // Earlier attempts end where the backend requeued them; the last one is billed by the
    // backend's times.
    super::attempts::observe(env, job, st, now_ms()).await?;
    if let Some(k) = st.attempt {
        super::attempts::reached(env, &job.id, k).await?;
    }
    if state == JobState::Failed
        && bare
        && let Some(line) = super::job_logs::last_line(env, &job.id).await?
    {
        message = Some(format!(
            "{}: {line}",
            message.as_deref().unwrap_or("failed")
        ));
    }
    finish_billed(env, job, (state, billed_as), st.span(), message.as_deref()).await?;
    if st.checkpoint {
        db::run(
            env,
            "UPDATE jobs SET checkpoint = 1 WHERE id = ?",
            &[s(&job.id)],
        )
        .await?;
    }
    Ok(())
}

async fn remote_status(env: &Env, job: &JobRow) -> Result<adapter::RemoteStatus, BackendError> {
    remote_status_within(env, job, backends::timeout(env)).await
}

/// The job as its backend knows it under the edge's job id, for a job whose submission was
/// never confirmed.
async fn find(
    env: &Env,
    job: &JobRow,
    timeout: std::time::Duration,
) -> Result<Option<Submitted>, BackendError> {
    let config =
        backends::named(env, &job.backend).map_err(|e| BackendError::Unavailable(e.message))?;
    let a = backends::adapter(env, &config)
        .await
        .map_err(|e| BackendError::Unavailable(e.message))?;
    let (status, body) = backends::send(&a.find(&job.id), timeout).await?;
    a.parse_find(&job.id, status, &body)
}

/// Records the backend's id of a job it has accepted; a job that has not reported yet takes the
/// backend's state (one that already reported it runs keeps that). A job the backend says has
/// ended stays `dispatching`, to be finished by its status ([`check`]): taking the state here
/// would end it unbilled.
pub async fn adopt(env: &Env, job_id: &str, sub: &Submitted, now: i64) -> ApiResult<()> {
    let started = (sub.state == JobState::Running).then_some(now);
    let state = match sub.state {
        s if s.is_terminal() => JobState::Dispatching,
        s => s,
    };
    db::run(
        env,
        "UPDATE jobs SET remote_id = ?, last_report_at = ?, \
         started_at = CASE WHEN state = 'dispatching' THEN ? ELSE started_at END, \
         message = CASE WHEN state = 'dispatching' THEN NULL ELSE message END, \
         state = CASE WHEN state = 'dispatching' THEN ? ELSE state END \
         WHERE id = ? AND remote_id IS NULL AND state IN ('dispatching', 'queued', 'running', 'requeued')",
        &[
            s(&sub.remote_id),
            n(now),
            db::opt_n(started),
            s(state.as_str()),
            s(job_id),
        ],
    )
    .await?;
    Ok(())
}

/// The message of a job whose hold was not answered (`jobs::submit`): it was never sent, and
/// [`check`] fails it once a late hold has had time to land.
pub const HOLD_UNANSWERED: &str = "the account did not answer the hold of this job's maximum \
     cost in time, so the job was not sent to a backend; it ends as failed and whatever was held \
     is given back";

/// How long after a submission whose answer never came the edge waits for the backend to show
/// the job before it decides the job never arrived (and releases the hold): `DISPATCH_GRACE_S`,
/// else 120 s.
fn dispatch_grace_ms(env: &Env) -> i64 {
    env.var("DISPATCH_GRACE_S")
        .ok()
        .and_then(|v| v.to_string().trim().parse::<i64>().ok())
        .filter(|s| *s >= 0)
        .unwrap_or(120)
        .saturating_mul(1000)
}

/// What one look at a live job's backend did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checked {
    /// The job ended (its hold is settled).
    Finished,
    /// Its state, reason or backend id changed or was confirmed.
    Updated,
    /// Nothing to do yet.
    Unchanged,
    /// The backend did not answer.
    Unreachable,
}

/// Asks a live job's backend about it once and records the answer: a job the backend never
/// confirmed is looked up by its id (and failed, with nothing charged, once the backend shows
/// no such job after [`dispatch_grace_ms`]); any other job's status is read, and an ended one is
/// finished by the backend's state and times.
pub async fn check(env: &Env, job: &JobRow, timeout: std::time::Duration) -> ApiResult<Checked> {
    let now = now_ms();
    if job.remote_id.is_none() && job.message.as_deref() == Some(HOLD_UNANSWERED) {
        // Never sent (its hold was not answered): failed once a late hold has had time to land.
        if now - job.created_at <= dispatch_grace_ms(env) {
            return Ok(Checked::Unchanged);
        }
        let why = "the account did not answer the hold of this job's maximum cost in time, so \
                   the job was never sent; nothing was charged";
        finish(env, job, JobState::Failed, Span::default(), Some(why)).await?;
        return Ok(Checked::Finished);
    }
    if job.remote_id.is_none() {
        return match find(env, job, timeout).await {
            Ok(Some(sub)) => found(env, job, &sub, timeout).await,
            // One that reported it ran was there: its backend forgot it since.
            Ok(None)
                if now - job.created_at > dispatch_grace_ms(env) && job.started_at.is_some() =>
            {
                gone(env, job, "the backend no longer knows this job").await?;
                Ok(Checked::Finished)
            }
            Ok(None) if now - job.created_at > dispatch_grace_ms(env) => {
                finish(
                    env,
                    job,
                    JobState::Failed,
                    Span::default(),
                    Some("the backend never received the job; nothing was charged"),
                )
                .await?;
                Ok(Checked::Finished)
            }
            Ok(None) => {
                db::run(
                    env,
                    "UPDATE jobs SET last_report_at = ? WHERE id = ?",
                    &[n(now), s(&job.id)],
                )
                .await?;
                Ok(Checked::Unchanged)
            }
            // A backend that cannot be asked for it for a week past its time limit: lost.
            Err(_) => silent(env, job, now).await,
        };
    }
    match remote_status_within(env, job, timeout).await {
        Ok(st) if st.state.is_terminal() => {
            ended(env, job, &st, None, None).await?;
            Ok(Checked::Finished)
        }
        Ok(st) => {
            progress(env, job, &st, now).await?;
            super::attempts::limit_left(env, job, &st, timeout).await?;
            Ok(Checked::Updated)
        }
        Err(BackendError::NotFound) => {
            gone(env, job, "the backend no longer knows this job").await?;
            Ok(Checked::Finished)
        }
        Err(_) => silent(env, job, now).await,
    }
}

/// A job whose submission was never confirmed, found at its backend: adopted, and when it has
/// already ended there, finished by its status and billed by the backend's times, as any ended
/// job is (else at the next look).
async fn found(
    env: &Env,
    job: &JobRow,
    sub: &Submitted,
    timeout: std::time::Duration,
) -> ApiResult<Checked> {
    adopt(env, &job.id, sub, now_ms()).await?;
    if !sub.state.is_terminal() {
        return Ok(Checked::Updated);
    }
    let Some(adopted) = row::by_id(env, &job.id).await? else {
        return Ok(Checked::Updated);
    };
    match remote_status_within(env, &adopted, timeout).await {
        Ok(st) if st.state.is_terminal() => {
            ended(env, &adopted, &st, None, None).await?;
            Ok(Checked::Finished)
        }
        _ => Ok(Checked::Updated),
    }
}

/// Ends a job its backend no longer knows (it forgot a job that ended, or lost it): as the job
/// said it ended, if it did, else lost; billed from its start until it was last heard of (its
/// backend's answers and its own reports), which it did run for, not until now.
async fn gone(env: &Env, job: &JobRow, why: &str) -> ApiResult<()> {
    let state = job
        .ending
        .as_deref()
        .and_then(JobState::parse)
        .filter(|s| s.is_terminal())
        .unwrap_or(JobState::Lost);
    let started = newest_start(env, job).await?;
    let ended = started.map(|st| job.last_report_at.unwrap_or(st).max(st));
    let message = match state {
        JobState::Lost => why.to_string(),
        s => format!("{why}; it said it {}", s.as_str()),
    };
    // One that said it stopped at its time limit pays the time it used, as in [`ended`].
    let billed_as = match state {
        JobState::TimedOut => JobState::Failed,
        s => s,
    };
    let span = job.span(started, ended);
    finish_billed(env, job, (state, billed_as), span, Some(&message)).await
}

/// When the job's newest attempt started: earlier attempts (a requeued job) are billed by their
/// own record.
async fn newest_start(env: &Env, job: &JobRow) -> ApiResult<Option<i64>> {
    let billed = super::attempts::billed(env, &job.id).await?;
    Ok(match billed.last {
        0 => job.started_at,
        _ => billed.last_started_at,
    })
}

/// A started job whose backend has not answered for an hour past the job's time limit (a week
/// for one never seen to start) cannot still be running: it is ended as lost, billed from its
/// start until it was last heard from (never past its limit), so that its hold does not stay
/// taken for ever and its owner, whose cancel cannot reach the backend either, is not stuck.
async fn silent(env: &Env, job: &JobRow, now: i64) -> ApiResult<Checked> {
    // Earlier attempts (a requeued job) are billed by their own record: this one from its start.
    let started = newest_start(env, job).await?;
    let times = crate::jobs::Times {
        created: job.created_at,
        started,
        last_heard: job.last_report_at,
        time_limit_s: job.time_limit_s,
        suspended_ms: job.suspended_until(job.last_report_at.unwrap_or(now)),
    };
    let Some((start, end)) = crate::jobs::silent_end(&times, now) else {
        return Ok(Checked::Unreachable);
    };
    finish(
        env,
        job,
        JobState::Lost,
        job.span(Some(start), Some(end)),
        Some(
            "its backend stopped answering and the job's time limit passed long ago; it was \
             billed until its backend last answered",
        ),
    )
    .await?;
    Ok(Checked::Finished)
}

/// The backend's view of a job, asked with a deadline.
pub async fn remote_status_within(
    env: &Env,
    job: &JobRow,
    timeout: std::time::Duration,
) -> Result<adapter::RemoteStatus, BackendError> {
    let config =
        backends::named(env, &job.backend).map_err(|e| BackendError::Unavailable(e.message))?;
    let a = backends::adapter(env, &config)
        .await
        .map_err(|e| BackendError::Unavailable(e.message))?;
    let remote = job.remote_id.as_deref().ok_or(BackendError::NotFound)?;
    let (status, body) = backends::send(&a.status(remote), timeout).await?;
    a.parse_status(status, &body)
}

/// Records what a backend says about a job that has not ended: its state and, while it waits,
/// why (the backend's reason code and its message).
pub async fn progress(
    env: &Env,
    job: &JobRow,
    st: &adapter::RemoteStatus,
    now: i64,
) -> ApiResult<()> {
    let waiting = matches!(st.state, JobState::Queued | JobState::Requeued);
    // Why it waits, or that the cluster holds it suspended: said while it lasts.
    let why = waiting || (st.state == JobState::Running && st.reason.as_deref() == Some(SUSPENDED));
    let k = st.attempt.map(i64::from);
    // Only a move the state machine allows (a job that ran never goes back to the queue), and
    // never news of an older attempt: a requeue of attempt k does not undo attempt k running.
    db::run(
        env,
        &format!(
            "UPDATE jobs SET state = ?, attempt = MAX(attempt, COALESCE(?, attempt)), \
             started_at = COALESCE(started_at, ?), last_report_at = ?, reason = ?, \
             message = CASE WHEN ? THEN ? WHEN ? THEN message \
             WHEN reason IS NOT NULL AND reason != ? THEN NULL ELSE message END, \
             suspended_ms = CASE WHEN ? THEN ? WHEN COALESCE(?, attempt) > attempt THEN 0 ELSE suspended_ms END, \
             suspended_since = ? \
             WHERE id = ? AND state IN ({}) \
             AND (? IS NULL OR (attempt <= ? AND NOT (state = 'running' AND attempt = ? AND ? = 'requeued')))",
            JobState::sources_sql(st.state)
        ),
        &[
            s(st.state.as_str()),
            db::opt_n(k),
            // A waiting job has not started, whatever start time a backend forecasts.
            db::opt_n(st.started_at_ms.filter(|_| !waiting)),
            n(now),
            db::opt_s(st.reason.as_deref().filter(|_| why)),
            // Why it waits replaces the message; a suspension keeps the job's own words.
            n(i64::from(waiting && st.message.is_some())),
            db::opt_s(st.message.as_deref().map(wire::clean_message).as_deref()),
            n(i64::from(waiting)),
            s(SUSPENDED),
            // What the running attempt has spent suspended (a new attempt starts at none).
            n(i64::from(st.state == JobState::Running)),
            n(st.suspended_ms),
            db::opt_n(k),
            db::opt_n(st.suspended_since_ms.filter(|_| st.state == JobState::Running)),
            s(&job.id),
            db::opt_n(k),
            db::opt_n(k),
            db::opt_n(k),
            s(st.state.as_str()),
        ],
    )
    .await?;
    if k.is_none_or(|k| k >= job.attempt) {
        super::attempts::observe(env, job, st, now).await?;
    }
    Ok(())
}

/// The message of a job that ended cancelled after its owner asked for it.
pub const CANCELLED_BY_USER: &str = "cancelled by the user";

/// Moves a job to a terminal state (only the first caller wins) and settles its hold: the real
/// card-time × price is captured (the whole hold for a job killed at its time limit, see
/// [`settle_fen`]), the rest released.
pub async fn finish(
    env: &Env,
    job: &JobRow,
    state: JobState,
    span: Span,
    message: Option<&str>,
) -> ApiResult<()> {
    finish_billed(env, job, (state, state), span, message).await
}

/// [`finish`], the job settled as if it had ended `billed_as` (`(state, billed_as)`).
async fn finish_billed(
    env: &Env,
    job: &JobRow,
    (state, billed_as): (JobState, JobState),
    span: Span,
    message: Option<&str>,
) -> ApiResult<()> {
    let Span {
        started_ms,
        ended_ms,
        suspended_ms,
    } = span;
    // A backend's message may quote the job's own output (the runner gives the log's last line).
    let message = message.map(wire::clean_message);
    let message = message.as_deref();
    // Card time is measured on one clock: the backend's when it reports both ends (it saw the
    // process run), else the edge's own (the attempt's first "running" until now). A job that
    // never started, or waits to run again, used no card time since. Attempts before the last
    // (the cluster ran the job again) add theirs; the hold caps the sum. The time the backend
    // held the job suspended is no card time.
    let billed = super::attempts::billed(env, &job.id).await?;
    let (started, ended, suspended) = match (started_ms, ended_ms) {
        (Some(st), Some(en)) => (st, en, suspended_ms),
        _ => {
            let now = now_ms();
            let start = match (job.state(), billed.last) {
                (JobState::Requeued, _) => now,
                (_, 0) => job.started_at.unwrap_or(now),
                _ => billed.last_started_at.unwrap_or(now),
            };
            (start, now, job.suspended_until(now))
        }
    };
    let used = billed
        .earlier_ms
        .saturating_add(Span::ran_ms(started, ended, suspended));
    let capture = settle_fen(
        billed_as,
        job.hold_fen,
        u64::try_from(job.price_fen_per_hour).unwrap_or(0),
        u32::try_from(job.cards).unwrap_or(0),
        used,
    );
    let changed = db::run(
        env,
        "UPDATE jobs SET state = ?, ended_at = ?, started_at = COALESCE(?, started_at), charged_fen = ?, \
         message = CASE WHEN ? = 'cancelled' AND cancel_requested_at IS NOT NULL THEN ? \
         ELSE COALESCE(?, CASE WHEN reason IS NOT NULL AND reason != ? THEN NULL ELSE message END) END, reason = NULL \
         WHERE id = ? AND state IN ('dispatching', 'queued', 'running', 'requeued')",
        &[
            s(state.as_str()),
            n(ended),
            // Both ends on the clock that was billed, so the job never shows ending before it
            // started; without the backend's times, the edge's own first "running". A job run
            // again keeps its first start.
            db::opt_n(match (started_ms, ended_ms) {
                _ if billed.last > 0 => None,
                (Some(_), Some(_)) => Some(started),
                _ => job.started_at.or(started_ms),
            }),
            n(capture),
            // The owner's cancel wins over the backend's words, whoever records the end.
            s(state.as_str()),
            s(CANCELLED_BY_USER),
            db::opt_s(message),
            s(SUSPENDED), // a job suspended at its end keeps its own words
            s(&job.id),
        ],
    )
    .await?;
    if changed == 0 {
        return Ok(());
    }
    settle(env, &job.user_id, &job.id, capture).await
}

pub(super) async fn settle(env: &Env, user_id: &str, job_id: &str, capture: i64) -> ApiResult<()> {
    let op = Op::Settle {
        user_id: user_id.to_string(),
        job_id: job_id.to_string(),
        capture_fen: capture,
        now_ms: now_ms(),
    };
    let result = coordinator::call::<Settled>(env, &op).await;
    match result {
        // No hold means the job never held anything (dispatch stopped before): nothing to settle.
        Ok(_)
        | Err(ApiError {
            code: ErrorCode::NotFound,
            ..
        }) => {
            db::run(
                env,
                "UPDATE jobs SET settled = 1 WHERE id = ?",
                &[s(job_id)],
            )
            .await?;
            Ok(())
        }
        Err(e) => Err(e),
    }
}
