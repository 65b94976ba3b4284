//! `POST /api/admin/refunds`: an operator refunds credit for a job the platform failed. The
//! handler checks the request and that the job exists; the job owner's account object
//! (`coordinator/refunds.rs`) checks the bound (what was captured for the job, minus earlier
//! refunds) and the idempotency key, and writes the `refund` ledger row, all in one synchronous
//! step so that two refunds racing for the same job cannot both pass the bound.

use super::access::Admin;
use super::coordinator;
use super::db::now_ms;
use super::http::{self, ApiResult};
use super::jobs::row;
use crate::coordinator::Op;
use crate::error::ApiError;
use crate::refunds::RefundRequest;
use crate::wire;
use crate::wire::Check;
use api::RefundAnswer;
use worker::{Env, Request, Response};

pub async fn create(_: Admin, mut req: Request, env: &Env) -> ApiResult<Response> {
    let key = wire::idempotency_key(http::header(&req, "idempotency-key").as_deref())?;
    let body = http::body(&mut req, wire::MAX_JSON_BYTES).await?;
    let r = wire::parse_json::<RefundRequest>(&body)?.check()?;
    let Some(job) = row::by_id(env, &r.job_id).await? else {
        return Err(ApiError::not_found(format!("no job {}", r.job_id)));
    };
    let op = Op::Refund {
        user_id: job.user_id,
        key,
        job_id: r.job_id,
        amount_fen: r.amount_fen,
        reason: r.reason,
        now_ms: now_ms(),
    };
    let answer: RefundAnswer = coordinator::call(env, &op).await?;
    // A repeated key answers what the first request did, as 200 rather than 201.
    let status = if answer.replayed { 200 } else { 201 };
    http::json(status, &answer).map_err(http::internal("response"))
}
