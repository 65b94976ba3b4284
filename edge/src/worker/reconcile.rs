//! The reconcile sweep (the cron hook and `POST /api/admin/reconcile`): asks backends about
//! jobs that went silent, that were not asked about for long, that their backend never
//! confirmed or that claimed an end, and retries settlements that failed.

use super::access::Admin;
use super::backends;
use super::db::{self, n, now_ms, s};
use super::http::ApiResult;
use super::jobs::row::{self, JobRow};
use super::report::{Checked, check, settle};
use crate::wire;
use api::Reconciled;
use worker::{Env, Request};

pub async fn admin_reconcile(_: Admin, req: Request, env: &Env) -> ApiResult<Reconciled> {
    let url = req.url().ok();
    let query = url.as_ref().and_then(|u| u.query());
    let seconds = |name| -> ApiResult<Option<i64>> {
        let v = wire::query_u64(query, name, u64::MAX)?;
        Ok((v != u64::MAX).then(|| i64::try_from(v).unwrap_or(i64::MAX)))
    };
    reconcile(env, seconds("silent_after_s")?, seconds("recheck_after_s")?).await
}

/// Asks backends about running jobs with no report for `silent_after_s` (the SILENT_AFTER_S var,
/// default 120 s) and about every running job not asked about for `recheck_after_s`
/// (RECHECK_AFTER_S, 600 s), the longest unasked first, so a job that keeps reporting after its
/// backend ended it is caught; finishes the ones that ended, and retries settlements that failed.
pub async fn reconcile(
    env: &Env,
    silent_after_s: Option<i64>,
    recheck_after_s: Option<i64>,
) -> ApiResult<Reconciled> {
    let silent_s = silent_after_s.unwrap_or_else(|| db::setting(env, "SILENT_AFTER_S", 120));
    let recheck_s = recheck_after_s.unwrap_or_else(|| db::setting(env, "RECHECK_AFTER_S", 600));
    let now = now_ms();
    let cutoff = now.saturating_sub(silent_s.saturating_mul(1000));
    let recheck = now.saturating_sub(recheck_s.saturating_mul(1000));
    // Silent jobs, jobs not asked about for long, jobs their backend never confirmed, and jobs
    // that claimed an end.
    let live: Vec<JobRow> = db::all(
        env,
        &format!(
            "SELECT {} FROM jobs WHERE state IN ('dispatching', 'queued', 'running', 'requeued') \
             AND (COALESCE(last_report_at, created_at) <= ? OR COALESCE(checked_at, created_at) <= ? \
             OR remote_id IS NULL OR ending IS NOT NULL) ORDER BY COALESCE(checked_at, 0) LIMIT 100",
            row::COLUMNS
        ),
        &[n(cutoff), n(recheck)],
    )
    .await?;
    let (mut checked, mut finished, mut unreachable) = (0, 0, 0);
    let timeout = backends::timeout(env);
    for job in &live {
        checked += 1;
        db::run(
            env,
            "UPDATE jobs SET checked_at = ? WHERE id = ?",
            &[n(now), s(&job.id)],
        )
        .await?;
        match check(env, job, timeout).await? {
            Checked::Finished => finished += 1,
            Checked::Unreachable => unreachable += 1,
            Checked::Updated | Checked::Unchanged => {}
        }
    }
    #[derive(serde::Deserialize)]
    struct Unsettled {
        id: String,
        user_id: String,
        charged_fen: Option<i64>,
    }
    let unsettled: Vec<Unsettled> = db::all(
        env,
        "SELECT id, user_id, charged_fen FROM jobs WHERE settled = 0 AND state NOT IN ('dispatching', 'queued', 'running', 'requeued') LIMIT 100",
        &[],
    )
    .await?;
    for u in &unsettled {
        settle(env, &u.user_id, &u.id, u.charged_fen.unwrap_or(0)).await?;
    }
    Ok(Reconciled {
        checked,
        finished,
        unreachable,
        resettled: u32::try_from(unsettled.len()).unwrap_or(u32::MAX),
    })
}
