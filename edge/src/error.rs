//! The one error shape of the API: `{"error": {"code", "message", "details"}}` with an HTTP status
//! that the code decides (see `api::ErrorCode`).

pub use api::ErrorCode;

/// An error answered to a client. `code` is stable and machine-readable; `message` is for people.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// Always `code.status()`; kept as a field so handlers and tests read it directly.
    pub status: u16,
    pub code: ErrorCode,
    pub message: String,
    pub details: serde_json::Value,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            status: code.status(),
            code,
            message: message.into(),
            details: serde_json::Value::Null,
        }
    }

    pub fn with_details(mut self, details: serde_json::Value) -> Self {
        self.details = details;
        self
    }

    /// `details` naming the request field at fault: `{"field": name}`.
    pub fn with_field(self, name: &str) -> Self {
        self.with_details(serde_json::json!({ "field": name }))
    }

    /// `details` from a wire type of the contract (e.g. `api::InvalidSpecDetails`).
    pub fn with_typed_details<T: serde::Serialize>(self, details: &T) -> Self {
        let value = serde_json::to_value(details).unwrap_or(serde_json::Value::Null);
        self.with_details(value)
    }

    pub fn not_found(what: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, what)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }

    /// A store (`what`) that did not answer within `limit_s` seconds (`worker/deadline.rs`).
    pub fn unavailable(what: &str, limit_s: u64) -> Self {
        Self::new(
            ErrorCode::Unavailable,
            format!("{what} did not answer within {limit_s} s; try again in a moment"),
        )
        .with_details(serde_json::json!({ "retry_after_s": 1 }))
    }

    /// The wire form.
    pub fn envelope(&self) -> api::ErrorEnvelope {
        api::ErrorEnvelope {
            error: api::ErrorBody {
                code: self.code,
                message: self.message.clone(),
                details: self.details.clone(),
            },
        }
    }

    /// What a client may see of this error. An internal error's message can hold what only
    /// the operator should read (SQL, bindings, runtime traces): the client gets a generic
    /// message and the request id under which the whole message is logged.
    /// An `unavailable` answer keeps its message (it names only what was late) and gains the
    /// request id in its details.
    pub fn public(&self, request_id: &str) -> ApiError {
        if self.code == ErrorCode::Unavailable {
            let mut shown = self.clone();
            if let Some(details) = shown.details.as_object_mut() {
                details.insert("request_id".into(), request_id.into());
            } else {
                shown.details = serde_json::json!({ "request_id": request_id });
            }
            return shown;
        }
        if self.code != ErrorCode::Internal {
            return self.clone();
        }
        ApiError::new(
            self.code,
            format!(
                "something went wrong on our side; if it persists, report request id {request_id}"
            ),
        )
        .with_details(serde_json::json!({ "request_id": request_id }))
    }

    /// The JSON body for this error.
    pub fn to_body(&self) -> String {
        // Serialising a struct of strings and a JSON value cannot fail; fall back to a fixed body
        // rather than panicking if it ever did.
        serde_json::to_string(&self.envelope()).unwrap_or_else(|_| {
            r#"{"error":{"code":"internal","message":"error serialisation failed","details":null}}"#
                .to_string()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_has_the_documented_shape() {
        let e = ApiError::not_found("no route for GET /api/nope")
            .with_details(serde_json::json!({"path": "/api/nope"}));
        let v: serde_json::Value = serde_json::from_str(&e.to_body()).unwrap();
        assert_eq!(v["error"]["code"], "not_found");
        assert_eq!(v["error"]["message"], "no route for GET /api/nope");
        assert_eq!(v["error"]["details"]["path"], "/api/nope");
        assert_eq!(e.status, 404);
        let back: api::ErrorEnvelope = serde_json::from_str(&e.to_body()).unwrap();
        assert_eq!(back, e.envelope());
    }

    #[test]
    fn internal_errors_show_a_request_id_not_their_cause() {
        let e = ApiError::internal("database error (INSERT INTO ledger (user_id…): UNIQUE failed");
        let shown = e.public("4f2a9c");
        assert_eq!(shown.status, 500);
        assert!(!shown.to_body().contains("INSERT"), "{}", shown.to_body());
        assert!(shown.message.contains("4f2a9c"));
        assert_eq!(shown.details["request_id"], "4f2a9c");
        let not_found = ApiError::not_found("no job j_1");
        assert_eq!(not_found.public("x"), not_found);
    }

    #[test]
    fn a_late_store_keeps_its_words_and_gains_the_request_id() {
        let late = ApiError::unavailable("the database", 10);
        let shown = late.public("77aa");
        assert_eq!(shown.status, 503);
        assert_eq!(shown.message, late.message);
        assert_eq!(shown.details["request_id"], "77aa");
        assert_eq!(shown.details["retry_after_s"], 1);
    }
}
