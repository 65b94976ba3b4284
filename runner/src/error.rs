//! The one error shape of the runner's API: `{"error": {"code", "message", "details"}}` with the
//! right HTTP status, the same shape the edge uses.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// An API failure: what went wrong, for the edge and for a person reading its logs.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub details: Value,
}

impl ApiError {
    /// 400: the request itself is wrong; `field` names the part at fault.
    pub fn bad_request(field: &str, message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            code: "bad_request",
            message: message.into(),
            details: json!({ "field": field }),
        }
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::NOT_FOUND,
            code: "not_found",
            message: message.into(),
            details: Value::Null,
        }
    }

    /// 404 for a job id this runner has no record of: the one 404 that tells the edge the job
    /// is gone (a route this runner does not have is `not_found`, and says nothing of any job).
    pub fn no_such_job(id: &str) -> Self {
        ApiError {
            status: StatusCode::NOT_FOUND,
            code: "no_such_job",
            message: format!("no job {id:?} on this runner"),
            details: Value::Null,
        }
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::CONFLICT,
            code: "conflict",
            message: message.into(),
            details: Value::Null,
        }
    }

    /// 503: the runner cannot do this now (e.g. the tiny-train assets are missing).
    pub fn unavailable(code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            code,
            message: message.into(),
            details: Value::Null,
        }
    }

    /// 500: the runner's own storage failed; the message says which file.
    pub fn internal(message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            code: "internal",
            message: message.into(),
            details: Value::Null,
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {
            "code": self.code, "message": self.message, "details": self.details
        }});
        (self.status, Json(body)).into_response()
    }
}
