//! The messages between the worker and the `Coordinator` Durable Object: one typed operation in,
//! one typed answer (or one of the API's errors) out. Plain types, so the worker's callers and
//! the object agree by construction and the transport is tested natively.

use crate::error::{ApiError, ErrorCode};
use serde::{Deserialize, Serialize};

/// One operation, as posted by the worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Counts one health probe (the answer is the count).
    Probe,
    /// The trial grant of a verified account: at most once per account (ledger reference
    /// `trial:<user id>`), and at most `cap_per_hour` for all accounts. Answered with `Granted`.
    GrantTrial {
        user_id: String,
        /// `limits::trial_mailbox` of the account's email: one trial per mailbox.
        mailbox: String,
        amount_fen: i64,
        cap_per_hour: i64,
        now_ms: i64,
    },
    /// Answered with `api::Ledger`.
    Ledger {
        user_id: String,
    },
    Balance {
        user_id: String,
    },
    CreateCode {
        code: String,
        amount_fen: i64,
        max_redemptions: i64,
        expires_at_ms: Option<i64>,
        now_ms: i64,
    },
    /// Answered with `api::Redeemed`.
    Redeem {
        user_id: String,
        code: String,
        now_ms: i64,
    },
    Hold {
        user_id: String,
        job_id: String,
        amount_fen: i64,
        now_ms: i64,
    },
    Settle {
        job_id: String,
        capture_fen: i64,
        now_ms: i64,
    },
    Rate {
        key: String,
        limit: i64,
        window_s: i64,
        now_ms: i64,
    },
    /// Before a password is checked: refused while the backoff of this (email, client) key
    /// runs, else counted as a failure until `LoginSucceeded` clears it. Answered with `Counted`.
    LoginAttempt {
        key: String,
        now_ms: i64,
    },
    /// The password was right: the key's failures are forgotten. Answered with `Counted` (0).
    LoginSucceeded {
        key: String,
    },
    /// Answered with `api::RefundAnswer`.
    Refund {
        key: String,
        job_id: String,
        amount_fen: i64,
        reason: String,
        now_ms: i64,
    },
}

/// The answer of `Balance` and `Hold`: the balance after the operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Balance {
    pub balance_fen: i64,
}

/// The answer of `GrantTrial`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Granted {
    /// 0 when the account had its trial already.
    pub granted_fen: i64,
    pub balance_fen: i64,
}

/// The answer of `Settle`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settled {
    pub captured_fen: i64,
    /// True when the hold had been settled before: nothing changed this time.
    pub already: bool,
}

/// The answer of `Rate`: attempts counted in the current window, this one included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counted {
    pub count: i64,
}

/// The answer of `CreateCode`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeCreated {
    pub code: String,
}

/// The answer of `Probe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probed {
    pub hits: i64,
}

/// What the object answers: `{"ok": answer}` or `{"err": {code, message, details}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Ok(serde_json::Value),
    Err(api::ErrorBody),
}

impl Outcome {
    /// The object's side: an operation's result as the message to send back.
    pub fn of<T: Serialize>(result: Result<T, ApiError>) -> Outcome {
        match result.and_then(|v| {
            serde_json::to_value(v)
                .map_err(|e| ApiError::internal(format!("coordinator answer: {e}")))
        }) {
            Ok(v) => Outcome::Ok(v),
            Err(e) => Outcome::Err(e.envelope().error),
        }
    }

    /// The worker's side: the typed answer, or the object's error as the API's.
    pub fn into_result<T: serde::de::DeserializeOwned>(self) -> Result<T, ApiError> {
        match self {
            Outcome::Ok(v) => serde_json::from_value(v)
                .map_err(|e| ApiError::internal(format!("coordinator answer: {e}"))),
            Outcome::Err(e) => Err(ApiError::new(e.code, e.message).with_details(e.details)),
        }
    }
}

/// An answer that cannot be read at all is the edge's own failure.
pub fn unreadable(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(ErrorCode::Internal, format!("coordinator answer: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn operations_are_tagged_by_op() {
        let op = Op::Settle {
            job_id: "j".into(),
            capture_fen: 3,
            now_ms: 9,
        };
        let v = serde_json::to_value(&op).unwrap();
        assert_eq!(
            v,
            json!({"op": "settle", "job_id": "j", "capture_fen": 3, "now_ms": 9})
        );
        assert_eq!(serde_json::from_value::<Op>(v).unwrap(), op);
        assert_eq!(
            serde_json::to_value(Op::Probe).unwrap(),
            json!({"op": "probe"})
        );
    }

    #[test]
    fn answers_and_errors_cross_unchanged() {
        let sent = Outcome::of(Ok(Settled {
            captured_fen: 5,
            already: false,
        }));
        let wire = serde_json::to_string(&sent).unwrap();
        assert_eq!(wire, r#"{"ok":{"already":false,"captured_fen":5}}"#);
        let back: Outcome = serde_json::from_str(&wire).unwrap();
        assert_eq!(
            back.into_result::<Settled>().unwrap(),
            Settled {
                captured_fen: 5,
                already: false
            }
        );
        let refused = ApiError::new(ErrorCode::RateLimited, "try again in 3 s")
            .with_details(json!({"retry_after_s": 3}));
        let wire = serde_json::to_string(&Outcome::of::<Counted>(Err(refused.clone()))).unwrap();
        let back: Outcome = serde_json::from_str(&wire).unwrap();
        assert_eq!(back.into_result::<Counted>().unwrap_err(), refused);
        // An answer of the wrong shape is an internal error, not a panic.
        let e = Outcome::Ok(json!({"nope": 1}))
            .into_result::<Balance>()
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Internal);
    }
}
