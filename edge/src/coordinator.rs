//! The messages between the worker and the `Coordinator` Durable Objects: one typed operation in,
//! one typed answer (or one of the API's errors) out, and which object an operation goes to
//! ([`Op::object`]): each account, each promotion code and each rate-limit key has its own.
//! Plain types, so the worker's callers and the objects agree by construction and the transport
//! is tested natively.

use crate::error::{ApiError, ErrorCode};
use serde::{Deserialize, Serialize};

/// Which `Coordinator` object an operation runs in. Money is split so that no object serialises
/// more than one account, one code or one limit: each is its own object, named by
/// [`Object::name`], and an operation names its object itself ([`Op::object`]), so no caller can
/// send an account's hold to another account's object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Object {
    /// One account's balance, ledger, holds, refunds and the redemptions credited to it.
    Account(String),
    /// One promotion code: its terms, its counter and which account claimed it with which
    /// redemption id.
    Code(String),
    /// One rate-limit key's window, or one login key's backoff.
    Limit(String),
    /// The trial grant's mailbox owners and hourly cap over every account (one object: the cap
    /// is global by design, and it is asked once per verified account).
    Trials,
    /// The deep health check's probe counter.
    Health,
}

/// What kind of object, which decides its tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    Account,
    Code,
    Limit,
    Trials,
    Health,
}

impl Object {
    /// The name the object is found by (`idFromName`); the prefix keeps the kinds apart.
    pub fn name(&self) -> String {
        match self {
            Object::Account(user_id) => format!("account:{user_id}"),
            Object::Code(code) => format!("code:{code}"),
            Object::Limit(key) => format!("limit:{key}"),
            Object::Trials => "trials".into(),
            Object::Health => "health".into(),
        }
    }

    pub fn kind(&self) -> ObjectKind {
        match self {
            Object::Account(_) => ObjectKind::Account,
            Object::Code(_) => ObjectKind::Code,
            Object::Limit(_) => ObjectKind::Limit,
            Object::Trials => ObjectKind::Trials,
            Object::Health => ObjectKind::Health,
        }
    }
}

/// One operation, as posted by the worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Counts one health probe (the answer is the count).
    Probe,
    /// The trial's first half, in the `Trials` object: one trial per mailbox and at most
    /// `cap_per_hour` for all accounts. Reserving again for the same account passes without
    /// counting, so a grant that failed after its reservation completes when the link is opened
    /// again. Answered with `Counted` (the reservations of the last hour).
    ReserveTrial {
        user_id: String,
        /// `limits::trial_mailbox` of the account's email.
        mailbox: String,
        cap_per_hour: i64,
        now_ms: i64,
    },
    /// The trial's second half, in the account's object: the grant, at most once per account
    /// (ledger reference `trial:<user id>`). Answered with `Granted`.
    GrantTrial {
        user_id: String,
        amount_fen: i64,
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
    /// A redemption's first half, in the code's object: counts the code for this account under
    /// `redemption_id`, or, when this account claimed it before, answers that earlier claim
    /// (its id and amount) unchanged. Answered with `Claimed`.
    ClaimCode {
        code: String,
        user_id: String,
        /// A fresh random id; kept only when this is the account's first claim of the code.
        redemption_id: String,
        now_ms: i64,
    },
    /// A redemption's second half, in the account's object: credits the claim once per
    /// `redemption_id`. Answered with `Credited`.
    CreditRedemption {
        user_id: String,
        code: String,
        redemption_id: String,
        amount_fen: i64,
        now_ms: i64,
    },
    Hold {
        user_id: String,
        job_id: String,
        amount_fen: i64,
        now_ms: i64,
    },
    Settle {
        /// The job's owner, whose object holds the hold.
        user_id: String,
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
        /// The job's owner, whose object holds the hold and the refunds.
        user_id: String,
        key: String,
        job_id: String,
        amount_fen: i64,
        reason: String,
        now_ms: i64,
    },
}

impl Op {
    /// The object this operation runs in.
    pub fn object(&self) -> Object {
        match self {
            Op::Probe => Object::Health,
            Op::ReserveTrial { .. } => Object::Trials,
            Op::GrantTrial { user_id, .. }
            | Op::Ledger { user_id }
            | Op::Balance { user_id }
            | Op::CreditRedemption { user_id, .. }
            | Op::Hold { user_id, .. }
            | Op::Settle { user_id, .. }
            | Op::Refund { user_id, .. } => Object::Account(user_id.clone()),
            Op::CreateCode { code, .. } | Op::ClaimCode { code, .. } => Object::Code(code.clone()),
            Op::Rate { key, .. } => Object::Limit(format!("rate:{key}")),
            Op::LoginAttempt { key, .. } | Op::LoginSucceeded { key } => {
                Object::Limit(format!("backoff:{key}"))
            }
        }
    }

    /// The operation's name on the wire (`FAULT_INJECT_OP` names one).
    pub fn name(&self) -> &'static str {
        match self {
            Op::Probe => "probe",
            Op::ReserveTrial { .. } => "reserve_trial",
            Op::GrantTrial { .. } => "grant_trial",
            Op::Ledger { .. } => "ledger",
            Op::Balance { .. } => "balance",
            Op::CreateCode { .. } => "create_code",
            Op::ClaimCode { .. } => "claim_code",
            Op::CreditRedemption { .. } => "credit_redemption",
            Op::Hold { .. } => "hold",
            Op::Settle { .. } => "settle",
            Op::Rate { .. } => "rate",
            Op::LoginAttempt { .. } => "login_attempt",
            Op::LoginSucceeded { .. } => "login_succeeded",
            Op::Refund { .. } => "refund",
        }
    }
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

/// The answer of `ClaimCode`: the account's claim of the code, made now or before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claimed {
    pub redemption_id: String,
    pub amount_fen: i64,
}

/// The answer of `CreditRedemption`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credited {
    /// True when this call wrote the ledger row; false when the redemption was credited before.
    pub applied: bool,
    pub balance_fen: i64,
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
            user_id: "u".into(),
            job_id: "j".into(),
            capture_fen: 3,
            now_ms: 9,
        };
        let v = serde_json::to_value(&op).unwrap();
        assert_eq!(
            v,
            json!({"op": "settle", "user_id": "u", "job_id": "j", "capture_fen": 3, "now_ms": 9})
        );
        assert_eq!(v["op"], op.name());
        assert_eq!(serde_json::from_value::<Op>(v).unwrap(), op);
        assert_eq!(
            serde_json::to_value(Op::Probe).unwrap(),
            json!({"op": "probe"})
        );
    }

    #[test]
    fn each_account_operation_goes_to_the_accounts_object() {
        let user = || "u1".to_string();
        let account = Object::Account(user()).name();
        assert_eq!(account, "account:u1");
        for op in [
            Op::Balance { user_id: user() },
            Op::Ledger { user_id: user() },
            Op::GrantTrial {
                user_id: user(),
                amount_fen: 1,
                now_ms: 0,
            },
            Op::Hold {
                user_id: user(),
                job_id: "j".into(),
                amount_fen: 1,
                now_ms: 0,
            },
            Op::Settle {
                user_id: user(),
                job_id: "j".into(),
                capture_fen: 1,
                now_ms: 0,
            },
            Op::CreditRedemption {
                user_id: user(),
                code: "C".into(),
                redemption_id: "r".into(),
                amount_fen: 1,
                now_ms: 0,
            },
            Op::Refund {
                user_id: user(),
                key: "k".into(),
                job_id: "j".into(),
                amount_fen: 1,
                reason: "r".into(),
                now_ms: 0,
            },
        ] {
            assert_eq!(op.object().name(), account, "{op:?}");
            assert_eq!(op.object().kind(), ObjectKind::Account);
        }
    }

    #[test]
    fn codes_limits_trials_and_health_have_objects_of_their_own() {
        let user = || "u1".to_string();
        let claim = Op::ClaimCode {
            code: "SPRING".into(),
            user_id: user(),
            redemption_id: "r".into(),
            now_ms: 0,
        };
        assert_eq!(claim.object().name(), "code:SPRING");
        // A rate key and a login key never share an object, nor two keys one.
        let rate = |key: &str| {
            Op::Rate {
                key: key.into(),
                limit: 1,
                window_s: 1,
                now_ms: 0,
            }
            .object()
            .name()
        };
        assert_ne!(rate("a"), rate("b"));
        let login = Op::LoginAttempt {
            key: "a".into(),
            now_ms: 0,
        }
        .object()
        .name();
        assert_ne!(rate("a"), login);
        assert_eq!(
            login,
            Op::LoginSucceeded { key: "a".into() }.object().name()
        );
        assert_eq!(Op::Probe.object(), Object::Health);
        let reserve = Op::ReserveTrial {
            user_id: user(),
            mailbox: "m".into(),
            cap_per_hour: 1,
            now_ms: 0,
        };
        assert_eq!(reserve.object(), Object::Trials);
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
