//! A job's metric points in D1: stored as its reports bring them (never rewriting the past,
//! capped per job) and read back in step order.

use super::db::{self, n, s};
use super::http::{self, ApiResult};
use crate::wire::MetricPoint;
use worker::Env;

/// Stores a report's points, all or none.
pub async fn store(env: &Env, job_id: &str, points: &[MetricPoint]) -> ApiResult<()> {
    if points.is_empty() {
        return Ok(());
    }
    #[derive(serde::Deserialize)]
    struct Count {
        n: i64,
    }
    let limit = db::setting(env, "METRICS_PER_JOB", 50_000);
    let stored = db::first::<Count>(
        env,
        "SELECT COUNT(*) AS n FROM job_metrics WHERE job_id = ?",
        &[s(job_id)],
    )
    .await?
    .map_or(0, |c| c.n);
    if stored + i64::try_from(points.len()).unwrap_or(i64::MAX) > limit {
        return Err(db::limit_reached("metric points per job", limit));
    }
    let db = db::db(env)?;
    let mut stmts = Vec::with_capacity(points.len());
    for p in points {
        let opt =
            |v: Option<f64>| v.map_or(wasm_bindgen::JsValue::NULL, wasm_bindgen::JsValue::from_f64);
        let step = n(i64::try_from(p.step).unwrap_or(i64::MAX));
        // A point never rewrites the past: it goes after the last step stored, or, for that
        // last step itself, only adds the validation loss it did not have (the trainer sends
        // a step's line again with its eval loss); one for an earlier step is dropped. The cap
        // holds in the statement itself, so reports racing past the count above cannot pass it.
        stmts.push(
            db.prepare(
                "INSERT INTO job_metrics (job_id, step, loss, val_loss, lr, tokens_per_s, elapsed_s) \
                 SELECT ?, ?, ?, ?, ?, ?, ? \
                 WHERE ? >= COALESCE((SELECT MAX(step) FROM job_metrics WHERE job_id = ?), -1) \
                 AND (SELECT COUNT(*) FROM job_metrics WHERE job_id = ?) < ? \
                 ON CONFLICT (job_id, step) DO UPDATE SET val_loss = COALESCE(job_metrics.val_loss, excluded.val_loss)",
            )
            .bind(&[
                s(job_id),
                step.clone(),
                wasm_bindgen::JsValue::from_f64(p.loss),
                opt(p.val_loss),
                opt(p.lr),
                opt(p.tokens_per_s),
                wasm_bindgen::JsValue::from_f64(p.elapsed_s),
                step,
                s(job_id),
                s(job_id),
                n(limit),
            ])
            .map_err(http::internal("metrics"))?,
        );
    }
    // One batch is one transaction: a report's metrics are stored whole or not at all.
    let call = async {
        db.batch(stmts)
            .await
            .map_err(http::internal("storing metrics"))
    };
    super::deadline::within(db::DATABASE, db::store_limit(env), call).await?;
    Ok(())
}

/// Metric points with `step >= since`, in step order, at most a page
/// ([`api::jobs::METRICS_PAGE_POINTS`]).
pub async fn metrics_after(env: &Env, job_id: &str, since: u64) -> ApiResult<Vec<MetricPoint>> {
    db::all(
        env,
        "SELECT step, loss, val_loss, lr, tokens_per_s, elapsed_s FROM job_metrics WHERE job_id = ? AND step >= ? \
         ORDER BY step LIMIT ?",
        &[
            s(job_id),
            n(i64::try_from(since).unwrap_or(i64::MAX)),
            n(api::jobs::METRICS_PAGE_POINTS as i64),
        ],
    )
    .await
}
