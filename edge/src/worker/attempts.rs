//! A job's attempts in D1 (`job_attempts`): when each started and ended, for billing every one
//! of them, and where each one's log begins. The rules are in `crate::attempts`.

use super::db::{self, n, s};
use super::http::ApiResult;
use super::jobs::row::JobRow;
use crate::attempts::{self, Attempt};
use crate::backends::adapter::RemoteStatus;
use crate::jobs::JobState;
use crate::time::format_rfc3339_ms;
use api::JobAttempt;
use worker::Env;

/// Every attempt the edge knows of, oldest first.
pub async fn list(env: &Env, job_id: &str) -> ApiResult<Vec<Attempt>> {
    db::all(
        env,
        "SELECT attempt, started_at, ended_at, log_offset, suspended_ms FROM job_attempts WHERE job_id = ? \
         ORDER BY attempt LIMIT 1000",
        &[s(job_id)],
    )
    .await
}

/// The attempts as the job page shows them; none for a job that ran once.
pub async fn wire(env: &Env, job_id: &str) -> ApiResult<Vec<JobAttempt>> {
    let list = list(env, job_id).await?;
    if list.iter().all(|a| a.attempt == 0) {
        return Ok(Vec::new());
    }
    Ok(list
        .into_iter()
        .map(|a| JobAttempt {
            attempt: a.attempt,
            started_at: a.started_at.map(format_rfc3339_ms),
            ended_at: a.ended_at.map(format_rfc3339_ms),
            // The first attempt's log starts the job's.
            log_offset: a
                .log_offset
                .or((a.attempt == 0).then_some(0))
                .and_then(|o| u64::try_from(o).ok()),
        })
        .collect())
}

/// When attempt `attempt` started, if the edge knows.
pub async fn started_at(env: &Env, job_id: &str, attempt: u32) -> ApiResult<Option<i64>> {
    #[derive(serde::Deserialize)]
    struct Start {
        started_at: Option<i64>,
    }
    Ok(db::first::<Start>(
        env,
        "SELECT started_at FROM job_attempts WHERE job_id = ? AND attempt = ?",
        &[s(job_id), n(i64::from(attempt))],
    )
    .await?
    .and_then(|r| r.started_at))
}

/// Records that attempt `attempt` started at `at` (the first word of it wins: the backend's
/// start, or the job's own report on the edge's clock).
pub async fn started(env: &Env, job_id: &str, attempt: u32, at: i64) -> ApiResult<()> {
    db::run(
        env,
        "INSERT INTO job_attempts (job_id, attempt, started_at) VALUES (?, ?, ?) \
         ON CONFLICT (job_id, attempt) DO UPDATE SET started_at = COALESCE(job_attempts.started_at, excluded.started_at)",
        &[s(job_id), n(i64::from(attempt)), n(at)],
    )
    .await?;
    Ok(())
}

/// What a backend's status says about the attempts of `job` (its row as it was before this
/// news): the ones before its attempt ended when the backend requeued the job
/// (`attempts::ended_ms`), the one the row followed with what it spent suspended by then, and a
/// running attempt started. Nothing for a backend that runs a job once.
pub async fn observe(env: &Env, job: &JobRow, st: &RemoteStatus, now: i64) -> ApiResult<()> {
    let job_id = job.id.as_str();
    let Some(k) = st.attempt else {
        return Ok(());
    };
    if k > 0 {
        let open = list(env, job_id)
            .await?
            .into_iter()
            .filter(|a| a.attempt < k && a.ended_at.is_none());
        for a in open {
            let Some(started) = a.started_at else {
                continue;
            };
            let ended = attempts::ended_ms(started, st.requeued_at_ms, now);
            let suspended = if i64::from(a.attempt) == job.attempt {
                job.suspended_until(ended)
            } else {
                0
            };
            db::run(
                env,
                "UPDATE job_attempts SET ended_at = ?, suspended_ms = ? \
                 WHERE job_id = ? AND attempt = ? AND ended_at IS NULL",
                &[n(ended), n(suspended), s(job_id), n(i64::from(a.attempt))],
            )
            .await?;
        }
    }
    if st.state == JobState::Running {
        started(env, job_id, k, st.started_at_ms.unwrap_or(now)).await?;
    }
    Ok(())
}

/// A job its backend will run again (`requeued`, attempt `k` > 0) may run for what its earlier
/// attempts left of its time limit, no more: the backend is told so, on a backend that takes
/// it from the edge. Best effort, asked again at every sweep while the job waits: a refusal is
/// logged, and the hold still caps what is charged.
pub async fn limit_left(
    env: &Env,
    job: &super::jobs::row::JobRow,
    st: &RemoteStatus,
    timeout: std::time::Duration,
) -> ApiResult<()> {
    let (Some(remote), Some(limit_s)) = (job.remote_id.as_deref(), job.time_limit_s) else {
        return Ok(());
    };
    if st.state != JobState::Requeued || st.attempt.is_none_or(|k| k == 0) {
        return Ok(());
    }
    let billed = billed(env, &job.id).await?;
    let minutes = attempts::minutes_left(limit_s, billed.earlier_ms);
    let Ok(config) = super::backends::named(env, &job.backend) else {
        return Ok(());
    };
    let Ok(a) = super::backends::adapter(env, &config).await else {
        return Ok(());
    };
    let Some(call) = a.limit_time(remote, minutes) else {
        return Ok(());
    };
    let answer = super::backends::send(&call, timeout)
        .await
        .and_then(|(status, body)| crate::backends::adapter::common_status(status, &body));
    if let Err(e) = answer {
        worker::console_warn!(
            "job {}: the backend did not take its time limit of {minutes} min: {e:?}",
            job.id
        );
    }
    Ok(())
}

/// What the attempts before the newest one add to a job's bill.
pub struct Billed {
    /// The newest attempt the edge has heard of.
    pub last: u32,
    /// The card time of the attempts before it.
    pub earlier_ms: i64,
    /// When it started, if it did.
    pub last_started_at: Option<i64>,
}

pub async fn billed(env: &Env, job_id: &str) -> ApiResult<Billed> {
    #[derive(serde::Deserialize)]
    struct Last {
        attempt: i64,
    }
    let last = db::first::<Last>(env, "SELECT attempt FROM jobs WHERE id = ?", &[s(job_id)])
        .await?
        .map_or(0, |l| u32::try_from(l.attempt).unwrap_or(0));
    if last == 0 {
        return Ok(Billed {
            last,
            earlier_ms: 0,
            last_started_at: None,
        });
    }
    let list = list(env, job_id).await?;
    Ok(Billed {
        last,
        earlier_ms: attempts::earlier_ms(&list, last),
        last_started_at: list
            .iter()
            .find(|a| a.attempt == last)
            .and_then(|a| a.started_at),
    })
}

/// Records that the backend has run attempt `attempt` (news of an older one changes nothing).
pub async fn reached(env: &Env, job_id: &str, attempt: u32) -> ApiResult<()> {
    db::run(
        env,
        "UPDATE jobs SET attempt = ? WHERE id = ? AND attempt < ?",
        &[n(i64::from(attempt)), s(job_id), n(i64::from(attempt))],
    )
    .await?;
    Ok(())
}

/// Where a chunk of attempt `attempt`'s log goes in the job's log, which has `stored` bytes:
/// the first chunk of an attempt after the first sets its start there. `None` when a newer
/// attempt has begun its log.
pub async fn log_base(
    env: &Env,
    job_id: &str,
    attempt: u32,
    stored: u64,
) -> ApiResult<Option<u64>> {
    let mut list = list(env, job_id).await?;
    let known = list
        .iter()
        .any(|a| a.attempt == attempt && a.log_offset.is_some());
    // The first attempt's log starts at 0 (no row to write); a later one's where the log ends
    // when its first chunk comes.
    if !known && attempt > 0 {
        let at = i64::try_from(stored).unwrap_or(i64::MAX);
        db::run(
            env,
            "INSERT INTO job_attempts (job_id, attempt, log_offset) VALUES (?, ?, ?) \
             ON CONFLICT (job_id, attempt) DO UPDATE SET log_offset = COALESCE(job_attempts.log_offset, excluded.log_offset)",
            &[s(job_id), n(i64::from(attempt)), n(at)],
        )
        .await?;
        list = self::list(env, job_id).await?;
    }
    Ok(attempts::log_base(&list, attempt).and_then(|b| u64::try_from(b).ok()))
}
