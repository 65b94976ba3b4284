//! The `Coordinator` Durable Objects, which serialise money and limits: how the rest of the worker
//! talks to them (one typed operation to its own object, [`call`], and the rate limit built on
//! it), the class itself (`object.rs`), and each kind of object's synchronous operations: an
//! account's ledger, holds and credited redemptions (`account.rs`) and its refunds
//! (`refunds.rs`), a promotion code's counter, claims and sweep (`code.rs`), a rate-limit or
//! login key's counts (`limit.rs`), and the trial grant's mailboxes and hourly cap
//! (`trials.rs`); `storage.rs` is what they share.

mod account;
mod code;
mod limit;
mod object;
mod refunds;
mod storage;
mod trials;

use super::http::ApiResult;
use crate::coordinator::{Counted, Op, Outcome};
use crate::error::ApiError;
use worker::{Env, Request};

/// Sends one operation to its own object ([`Op::object`]) and returns its typed answer.
pub async fn call<T: serde::de::DeserializeOwned>(env: &Env, op: &Op) -> ApiResult<T> {
    let ns = env
        .durable_object("COORDINATOR")
        .map_err(|e| ApiError::internal(format!("binding COORDINATOR: {e}")))?;
    let stub = ns
        .id_from_name(&op.object().name())
        .and_then(|id| id.get_stub())
        .map_err(|e| ApiError::internal(format!("Durable Object stub: {e}")))?;
    let body = serde_json::to_string(op).map_err(crate::coordinator::unreadable)?;
    let mut init = worker::RequestInit::new();
    init.with_method(worker::Method::Post)
        .with_body(Some(body.into()));
    let req = Request::new_with_init("https://coordinator/op", &init)
        .map_err(|e| ApiError::internal(format!("coordinator request: {e}")))?;
    let call = async {
        let mut resp = stub
            .fetch_with_request(req)
            .await
            .map_err(|e| ApiError::internal(format!("coordinator: {e}")))?;
        let outcome: Outcome = resp.json().await.map_err(crate::coordinator::unreadable)?;
        Ok(outcome)
    };
    let limit = super::db::store_limit(env);
    super::deadline::within("a coordinator object", limit, call)
        .await?
        .into_result()
}

/// Counts one attempt against `key`; 429 with `retry_after_s` once `limit` is reached in the window.
pub async fn rate_limit(env: &Env, key: &str, limit: i64, window_s: i64) -> ApiResult<()> {
    let op = Op::Rate {
        key: key.to_string(),
        limit,
        window_s,
        now_ms: super::db::now_ms(),
    };
    call::<Counted>(env, &op).await.map(|_| ())
}
