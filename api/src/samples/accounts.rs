//! Samples of the error envelope, accounts and tokens, credits and refunds.

use super::base::*;
use crate::*;
use serde_json::json;

/// The error envelope and an invalid spec's details.
pub(super) fn errors() -> Vec<Sample> {
    vec![
        sample(
            "error",
            ErrorEnvelope {
                error: ErrorBody {
                    code: ErrorCode::RateLimited,
                    message: "too many attempts; try again in 42 s".into(),
                    details: json!({"retry_after_s": 42}),
                },
            },
        ),
        sample(
            "invalid_spec_details",
            InvalidSpecDetails {
                diagnostics: vec![diagnostic()],
            },
        ),
    ]
}

/// Accounts: sign-up and login, verification, the outbox, tokens.
pub(super) fn accounts_samples() -> Vec<Sample> {
    vec![
        sample(
            "credentials",
            Credentials {
                email: "ada@example.com".into(),
                password: "correct horse battery".into(),
            },
        ),
        sample(
            "account",
            Account {
                email: "ada@example.com".into(),
                balance_fen: 1000,
                email_verified: true,
                artifacts: Some(ArtifactUsage {
                    used_bytes: 20 << 20,
                    quota_bytes: 10 << 30,
                    retention_days: 30,
                }),
                experiments: Some(crate::ExperimentUsage {
                    count: 3,
                    max_count: 1000,
                    used_bytes: 48 << 10,
                    quota_bytes: 64 << 20,
                }),
            },
        ),
        sample(
            "verify_request",
            VerifyRequest {
                token: "v1.00ff.1767225600.6164614065.4f2a".into(),
            },
        ),
        sample(
            "verified",
            Verified {
                email: "ada@example.com".into(),
                granted_fen: 1000,
                balance_fen: 1000,
            },
        ),
        sample(
            "verification_sent",
            VerificationSent {
                to: "ada@example.com".into(),
                expires_at: T1.into(),
            },
        ),
        sample(
            "outbox",
            Outbox {
                mails: vec![OutboxMail {
                    to: "ada@example.com".into(),
                    subject: "Verify your email for Onramp".into(),
                    text: "Open http://127.0.0.1:8787/verify?token=v1.00ff to verify.".into(),
                    sent_at: T0.into(),
                }],
            },
        ),
        sample("signed_out", SignedOut { signed_out: true }),
    ]
}

/// The signed-in account's password change and "sign out everywhere".
pub(super) fn password_samples() -> Vec<Sample> {
    vec![
        sample(
            "password_change",
            PasswordChange {
                current_password: "correct horse battery".into(),
                new_password: "a brand new horse battery".into(),
            },
        ),
        sample(
            "password_changed",
            PasswordChanged {
                changed: true,
                signed_out_sessions: 2,
            },
        ),
        sample(
            "logout_everywhere",
            LogoutEverywhere {
                revoke_tokens: true,
            },
        ),
        sample(
            "signed_out_everywhere",
            SignedOutEverywhere {
                signed_out_sessions: 3,
                revoked_tokens: 1,
            },
        ),
    ]
}

/// API tokens: a new one, the list, a revocation.
pub(super) fn token_samples() -> Vec<Sample> {
    vec![
        sample(
            "new_token",
            NewToken {
                name: "laptop".into(),
            },
        ),
        sample(
            "token_created",
            TokenCreated {
                token: "onr_00ff".into(),
                id: "4f53cda18c2baa0c".into(),
                name: "laptop".into(),
            },
        ),
        sample(
            "token_list",
            TokenList {
                tokens: vec![TokenInfo {
                    id: "4f53cda18c2baa0c".into(),
                    name: "laptop".into(),
                    created_at: T0.into(),
                }],
            },
        ),
        sample(
            "token_revoked",
            TokenRevoked {
                id: "4f53cda18c2baa0c".into(),
                revoked: true,
            },
        ),
    ]
}

/// Credits: the ledger, promotion codes, refunds.
pub(super) fn credits_samples() -> Vec<Sample> {
    vec![
        sample(
            "ledger",
            Ledger {
                balance_fen: 800,
                entries: vec![
                    LedgerEntry {
                        id: 2,
                        kind: LedgerKind::Hold,
                        amount_fen: -200,
                        reference: "job:0f1e".into(),
                        time: T1.into(),
                    },
                    LedgerEntry {
                        id: 1,
                        kind: LedgerKind::Grant,
                        amount_fen: 1000,
                        reference: "signup".into(),
                        time: T0.into(),
                    },
                ],
            },
        ),
        sample(
            "redeem_request",
            RedeemRequest {
                code: "WELCOME".into(),
            },
        ),
        sample(
            "redeemed",
            Redeemed {
                amount_fen: 500,
                balance_fen: 1500,
            },
        ),
        sample(
            "new_promo_code",
            NewPromoCode {
                code: "WELCOME".into(),
                amount_fen: 500,
                max_redemptions: 100,
                expires_at: Some("2030-01-01T00:00:00Z".into()),
            },
        ),
        sample(
            "promo_code_created",
            PromoCodeCreated {
                code: "WELCOME".into(),
                amount_fen: 500,
                max_redemptions: 100,
                expires_at: Some("2030-01-01T00:00:00.000Z".into()),
            },
        ),
    ]
}

/// Refunds an operator makes.
pub(super) fn refund_samples() -> Vec<Sample> {
    vec![
        sample(
            "refund_request",
            RefundRequest {
                job_id: "0f1e".into(),
                amount_fen: 5,
                reason: "node failure".into(),
            },
        ),
        sample(
            "refund_answer",
            RefundAnswer {
                refund: Refund {
                    key: "r-1".into(),
                    job_id: "0f1e".into(),
                    amount_fen: 5,
                    reason: "node failure".into(),
                    time: T1.into(),
                },
                replayed: false,
                captured_fen: 7,
                refunded_fen: 5,
                refundable_fen: 2,
                balance_fen: 998,
            },
        ),
    ]
}

/// A forgotten password.
pub(super) fn reset_samples() -> Vec<Sample> {
    vec![
        sample(
            "reset_request",
            ResetRequest {
                email: "ada@example.com".into(),
            },
        ),
        sample(
            "reset_requested",
            ResetRequested {
                to: "ada@example.com".into(),
                expires_in_s: 3600,
            },
        ),
        sample(
            "new_password",
            NewPassword {
                token: "v1.00ff.1767225600.6164614065.4f2a".into(),
                password: "a new horse battery".into(),
            },
        ),
    ]
}
