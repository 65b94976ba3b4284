//! What the operations of every kind of `Coordinator` object share: a storage failure as the
//! API's error, and an operation's answer as the JSON the object sends back.

use crate::error::ApiError;
use crate::worker::http::ApiResult;
use serde_json::Value;

pub fn sql_err(e: worker::Error) -> ApiError {
    ApiError::internal(format!("coordinator storage: {e}"))
}

/// An operation's answer as the JSON the object sends back.
pub fn answer<T: serde::Serialize>(value: T) -> ApiResult<Value> {
    serde_json::to_value(value).map_err(|e| ApiError::internal(format!("coordinator answer: {e}")))
}
