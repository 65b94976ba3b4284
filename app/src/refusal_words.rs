//! Every refusal code of the edge turned into a message the user can act on: an exhaustive match
//! on `api::ErrorCode`, so a new code does not build until it is worded, and a code this build
//! does not know read by its status. Pure, so the mapping is tested natively.

use crate::i18n::Key;
use api::ErrorCode;

/// The message for a refusal: the edge's code when this build knows it, `network` when no answer
/// came, else one that fits the status.
pub fn refusal_key(code: &str, status: u16) -> Key {
    match (ErrorCode::parse(code), code) {
        (Some(c), _) => code_key(c),
        (None, "network") => Key::ErrNetwork,
        _ => match status {
            401 => Key::ErrSignInFirst,
            403 => Key::ErrForbidden,
            404 => Key::ErrNotFound,
            429 => Key::ErrRateLimited,
            503 => Key::ErrBackendDown,
            _ => Key::ErrUnexpected,
        },
    }
}

/// One message per code the edge answers with. Codes a page of this app can meet have their
/// own; the ones only admins or a job's own process meet share a message by kind.
pub fn code_key(code: ErrorCode) -> Key {
    use ErrorCode as C;
    match code {
        C::InvalidEmail => Key::ErrInvalidEmail,
        C::WeakPassword => Key::ErrWeakPassword,
        C::EmailTaken => Key::ErrEmailTaken,
        C::BadCredentials => Key::ErrBadCredentials,
        C::WrongPassword => Key::ErrWrongPassword,
        C::RateLimited => Key::ErrRateLimited,
        C::InvalidLink => Key::ErrInvalidLink,
        C::LinkExpired => Key::ErrLinkExpired,
        C::AlreadyVerified => Key::ErrAlreadyVerified,
        C::TrialTaken => Key::ErrTrialTaken,
        C::EmailNotVerified => Key::ErrEmailNotVerified,
        C::Unauthenticated => Key::ErrSignInFirst,
        C::Forbidden => Key::ErrForbidden,
        C::BadOrigin => Key::ErrBadOrigin,
        C::InvalidCode => Key::ErrInvalidCode,
        C::CodeUnknown => Key::ErrCodeUnknown,
        C::CodeExpired => Key::ErrCodeExpired,
        C::CodeExhausted => Key::ErrCodeExhausted,
        C::CodeAlreadyRedeemed => Key::ErrCodeAlreadyRedeemed,
        C::InsufficientCredit => Key::ErrInsufficientCredit,
        C::BackendUnavailable => Key::ErrBackendDown,
        C::BackendError => Key::ErrBackendError,
        C::BackendRefused => Key::ErrBackendRefused,
        C::NoBackend => Key::ErrNoBackend,
        C::InvalidSpec => Key::ErrInvalidSpec,
        C::AlreadyFinished => Key::ErrAlreadyFinished,
        C::NotDispatched => Key::ErrNotDispatched,
        C::JobNotFinished => Key::ErrJobNotFinished,
        C::BodyTooLarge | C::TooLarge => Key::ErrTooLarge,
        C::NotFound => Key::ErrNotFound,
        C::Internal => Key::ErrInternal,
        C::Unavailable => Key::ErrUnavailable,
        C::InvalidJson
        | C::InvalidEncoding
        | C::InvalidField
        | C::InvalidQuery
        | C::MethodNotAllowed
        | C::MissingIdempotencyKey
        | C::InvalidIdempotencyKey
        | C::InvalidState
        | C::TooManyMetrics
        | C::InvalidMetric
        | C::InvalidPart
        | C::LengthRequired
        | C::RangeNotSatisfiable => Key::ErrBadRequest,
        C::CodeExists
        | C::NotSettled
        | C::NothingCaptured
        | C::RefundExceedsCapture
        | C::IdempotencyConflict
        | C::LogGap
        | C::PartOutOfOrder
        | C::UploadExpired => Key::ErrConflict,
        C::LimitReached => Key::ErrLimitReached,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_a_page_meets_has_its_own_message() {
        let codes = [
            "invalid_email",
            "weak_password",
            "email_taken",
            "bad_credentials",
            "rate_limited",
            "unauthenticated",
            "bad_origin",
            "invalid_code",
            "code_unknown",
            "code_expired",
            "code_exhausted",
            "code_already_redeemed",
            "insufficient_credit",
            "backend_unavailable",
            "backend_error",
            "no_backend",
            "invalid_spec",
            "already_finished",
            "not_dispatched",
            "job_not_finished",
            "body_too_large",
            "not_found",
            "network",
            "backend_refused",
            "forbidden",
            "internal",
            "invalid_json",
        ];
        let keys: Vec<Key> = codes.iter().map(|c| refusal_key(c, 400)).collect();
        for (i, k) in keys.iter().enumerate() {
            assert_ne!(*k, Key::ErrUnexpected, "{} has no message", codes[i]);
            assert!(
                !keys[i + 1..].contains(k),
                "{} shares its message with another code",
                codes[i]
            );
        }
        // Codes the app does not know yet still get a message that fits the status.
        assert_eq!(refusal_key("new_code", 429), Key::ErrRateLimited);
        assert_eq!(refusal_key("new_code", 500), Key::ErrUnexpected);
    }
}
