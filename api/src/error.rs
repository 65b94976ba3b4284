//! The one error shape of the API, `{"error": {"code", "message", "details"}}`, and every code the
//! edge (and its Coordinator) answers with, each with its one HTTP status. A client matches on
//! [`ErrorCode`] exhaustively, so a new code breaks its build until someone words it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

macro_rules! codes {
    ($($(#[doc = $doc:literal])* $name:ident = $wire:literal, $status:literal;)*) => {
        /// Why the edge refused or failed a request: stable and machine-readable.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
        #[serde(rename_all = "snake_case")]
        pub enum ErrorCode {
            $($(#[doc = $doc])* $name,)*
        }

        impl ErrorCode {
            /// Every code, in the order declared.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$name,)*];

            /// The wire spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$name => $wire,)*
                }
            }

            /// The HTTP status every answer with this code has.
            pub fn status(self) -> u16 {
                match self {
                    $(ErrorCode::$name => $status,)*
                }
            }
        }
    };
}

codes! {
    // Requests the edge cannot read.
    /// The body is not the JSON the route expects (`details`: line, column).
    InvalidJson = "invalid_json", 400;
    /// The body is not UTF-8 text.
    InvalidEncoding = "invalid_encoding", 400;
    /// A field has a value out of its range (`details.field` names it).
    InvalidField = "invalid_field", 400;
    /// A query parameter is not what the route takes (`details.parameter`).
    InvalidQuery = "invalid_query", 400;
    /// The body is larger than the route accepts (`details.limit_bytes`).
    BodyTooLarge = "body_too_large", 413;
    /// A job's pushed log would grow past its limit.
    TooLarge = "too_large", 413;
    /// The method is not served on this path (`details.allowed`, and the `Allow` header).
    MethodNotAllowed = "method_not_allowed", 405;
    /// No such route, or no such thing the caller may see.
    NotFound = "not_found", 404;
    /// The edge failed on its own account; the message says where.
    Internal = "internal", 500;
    /// A store the edge depends on (its database, its coordinator objects) did not answer within
    /// its deadline (`details`: request_id, retry_after_s, and the `Retry-After` header). The
    /// request may or may not have taken effect: one with an Idempotency-Key is safe to send
    /// again, and so is every read.
    Unavailable = "unavailable", 503;

    // Accounts and access.
    InvalidEmail = "invalid_email", 400;
    WeakPassword = "weak_password", 400;
    EmailTaken = "email_taken", 409;
    BadCredentials = "bad_credentials", 401;
    /// A signed-in change that needs the account's current password got another one.
    WrongPassword = "wrong_password", 403;
    /// Sign in first (session cookie or API token), or a job token is missing.
    Unauthenticated = "unauthenticated", 401;
    /// The credentials are valid but not for this (an admin route, another job's token).
    Forbidden = "forbidden", 403;
    /// A cookie-authenticated write from another site (CSRF).
    BadOrigin = "bad_origin", 403;
    /// Too many attempts (`details.retry_after_s`, and the `Retry-After` header).
    RateLimited = "rate_limited", 429;
    /// An email verification link that this edge did not sign, or that was altered.
    InvalidLink = "invalid_link", 400;
    /// An email verification link past its expiry: ask for a new one.
    LinkExpired = "link_expired", 410;
    /// A new verification mail for an account whose email is verified already.
    AlreadyVerified = "already_verified", 409;
    /// The trial credit of this mailbox (the address without a `+tag`) went to another account.
    TrialTaken = "trial_taken", 409;
    /// Something that persists (a saved experiment) needs an account whose email is verified.
    EmailNotVerified = "email_not_verified", 403;

    // Credits.
    /// Not a promotion code's spelling (3-64 letters, digits, '-' or '_').
    InvalidCode = "invalid_code", 400;
    CodeUnknown = "code_unknown", 404;
    CodeExpired = "code_expired", 410;
    CodeExhausted = "code_exhausted", 409;
    CodeAlreadyRedeemed = "code_already_redeemed", 409;
    /// An admin created a code that exists already.
    CodeExists = "code_exists", 409;
    /// The balance cannot hold the job's maximum cost (`details`: required_fen, balance_fen).
    InsufficientCredit = "insufficient_credit", 402;
    /// A refund for a job that has not settled yet.
    NotSettled = "not_settled", 409;
    /// A refund for a job that was charged nothing.
    NothingCaptured = "nothing_captured", 409;
    /// A refund above what the job was charged, less earlier refunds.
    RefundExceedsCapture = "refund_exceeds_capture", 409;
    /// The Idempotency-Key was used for a different request.
    IdempotencyConflict = "idempotency_conflict", 409;

    // Jobs.
    MissingIdempotencyKey = "missing_idempotency_key", 400;
    InvalidIdempotencyKey = "invalid_idempotency_key", 400;
    /// The spec cannot be submitted or saved (`details.diagnostics`).
    InvalidSpec = "invalid_spec", 422;
    /// No configured backend has the cards the spec asks for (`details`: card, cards).
    NoBackend = "no_backend", 409;
    /// The backend did not answer; nothing was charged.
    BackendUnavailable = "backend_unavailable", 503;
    /// The backend answered something the contract does not allow.
    BackendError = "backend_error", 502;
    /// The backend understood the job and will not run it (its reason in the message).
    BackendRefused = "backend_refused", 422;
    /// The job has not reached its backend yet.
    NotDispatched = "not_dispatched", 409;
    /// The job has ended already (cancel).
    AlreadyFinished = "already_finished", 409;
    /// The job is still running (saving it as an experiment).
    JobNotFinished = "job_not_finished", 409;
    /// A job reported a state it may not report.
    InvalidState = "invalid_state", 400;
    TooManyMetrics = "too_many_metrics", 400;
    InvalidMetric = "invalid_metric", 400;
    /// A pushed log chunk starts past the end of what is stored.
    LogGap = "log_gap", 409;
    /// An account or a job has as many of something as it may keep (saved experiments, API
    /// tokens, metric points); the message names the limit.
    LimitReached = "limit_reached", 409;

    // Artifacts.
    /// A part whose number is past the upload's last, or whose size is not the one its number
    /// must have (`details`: part, expected_bytes).
    InvalidPart = "invalid_part", 400;
    /// A part sent before the one that must come next (`details.next_part`).
    PartOutOfOrder = "part_out_of_order", 409;
    /// A part sent without its `Content-Length`.
    LengthRequired = "length_required", 411;
    /// An upload that storage ended before it completed (unfinished past its lifecycle, or
    /// aborted): what arrived of it is gone, and declaring it again starts it over.
    UploadExpired = "upload_expired", 409;
    /// A `Range` that starts past the end of the file (`details.size`).
    RangeNotSatisfiable = "range_not_satisfiable", 416;
}

impl ErrorCode {
    /// The code spelled `s` on the wire, if any.
    pub fn parse(s: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|c| c.as_str() == s)
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The body of every answer that is not a success.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorEnvelope {
    pub error: ErrorBody,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    pub code: ErrorCode,
    /// For people, in English; clients word the code in the user's language.
    pub message: String,
    /// What the code's documentation says it carries; `null` when nothing.
    #[serde(default)]
    pub details: serde_json::Value,
}

/// `details` of an `invalid_spec` refusal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InvalidSpecDetails {
    pub diagnostics: Vec<crate::jobs::SpecDiagnostic>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_serialises_as_spelled_and_parses_back() {
        for &c in ErrorCode::ALL {
            assert_eq!(
                serde_json::to_value(c).ok(),
                Some(serde_json::Value::from(c.as_str()))
            );
            assert_eq!(ErrorCode::parse(c.as_str()), Some(c));
            assert!((400..600).contains(&c.status()), "{c}");
        }
        assert_eq!(ErrorCode::parse("nope"), None);
    }

    #[test]
    fn the_codes_and_statuses_are_pinned() {
        let table: Vec<String> = ErrorCode::ALL
            .iter()
            .map(|c| format!("{} {}", c.status(), c.as_str()))
            .collect();
        expect_test::expect_file!["../golden/error_codes.txt"]
            .assert_eq(&(table.join("\n") + "\n"));
    }
}
