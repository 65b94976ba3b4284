//! Deadlines on the edge's calls to what it depends on (the storage deadline itself is
//! `db::store_limit`, `STORE_TIMEOUT_S`). Every call to the database (D1) and to a
//! coordinator object goes through [`within`], and so do the health probe's; calls to backends
//! and to the mail service have their own (`BACKEND_TIMEOUT_S` and `backends::TIMEOUT`, in
//! `worker/backends.rs`). A call that has not answered by its deadline
//! is left behind and the request is answered at once: 503 `unavailable` in the error envelope,
//! with a request id (`x-request-id`, also in the operator's log) and `Retry-After`, never
//! silence. Whether the call still takes effect afterwards is not known: the code's
//! documentation says so, and the money routes' Idempotency-Keys make sending them again safe.

use super::http::ApiResult;
use crate::error::ApiError;
use futures_util::future::{Either, select};
use std::future::Future;
use std::time::Duration;

/// `call`'s answer, or `unavailable` naming `what` once `limit` has passed without one.
pub async fn within<T>(
    what: &str,
    limit: Duration,
    call: impl Future<Output = ApiResult<T>>,
) -> ApiResult<T> {
    let call = std::pin::pin!(call);
    let timer = std::pin::pin!(worker::Delay::from(limit));
    match select(call, timer).await {
        Either::Left((answer, _)) => answer,
        Either::Right(((), _)) => Err(ApiError::unavailable(what, limit.as_secs())),
    }
}
