//! Accounts on the wire: sign-up, sign-in, the signed-in account, API tokens.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The fewest characters a password may have.
pub const MIN_PASSWORD_CHARS: usize = 8;
/// The most characters a password may have (a long one is hashed, never stored).
pub const MAX_PASSWORD_CHARS: usize = 256;
/// The longest name of an API token, in characters.
pub const MAX_TOKEN_NAME_CHARS: usize = 64;
/// The longest email address (RFC 5321's path limit).
pub const MAX_EMAIL_BYTES: usize = 254;

/// `POST /api/auth/signup` and `POST /api/auth/login`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    #[schemars(email, length(min = 3, max = MAX_EMAIL_BYTES))]
    pub email: String,
    /// At least [`MIN_PASSWORD_CHARS`] and at most [`MAX_PASSWORD_CHARS`] characters.
    #[schemars(length(min = MIN_PASSWORD_CHARS, max = MAX_PASSWORD_CHARS))]
    pub password: String,
}

/// `GET /api/me`, and the answer of sign-up and login: who is signed in, and their balance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Account {
    pub email: String,
    pub balance_fen: i64,
    /// Whether the owner of the email opened the verification link; the trial credit is given
    /// then, not at sign-up. (Absent from older edges' answers: read as not verified.)
    #[serde(default)]
    pub email_verified: bool,
    /// What the account's artifacts take of their quota (absent from older edges' answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<crate::artifacts::ArtifactUsage>,
    /// The account's saved experiments against their limits (absent from older edges' answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experiments: Option<crate::experiments::ExperimentUsage>,
}

/// `POST /api/auth/verify`: the token of the link in the verification mail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyRequest {
    pub token: String,
}

/// The answer of `POST /api/auth/verify`: the email is verified, and what the trial gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Verified {
    pub email: String,
    /// The trial credit given by this verification: 0 when the account had it already.
    pub granted_fen: i64,
    pub balance_fen: i64,
}

/// The answer of `POST /api/auth/verify/resend`: a new verification mail is on its way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct VerificationSent {
    /// Where it was sent (the account's email).
    pub to: String,
    /// When its link stops working (RFC 3339, UTC).
    pub expires_at: String,
}

/// `POST /api/auth/reset/request`: mail a password reset link to this email, if an account has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetRequest {
    #[schemars(email, length(min = 3, max = MAX_EMAIL_BYTES))]
    pub email: String,
}

/// The answer of `POST /api/auth/reset/request`, the same whether or not an account has the
/// email (so it does not tell who has an account): where a link would go, and for how long it
/// would work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResetRequested {
    pub to: String,
    pub expires_in_s: u64,
}

/// `POST /api/auth/reset`: the token of the mailed link and the new password. Signs in, and
/// signs out every other session and API token of the account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewPassword {
    pub token: String,
    /// At least [`MIN_PASSWORD_CHARS`] and at most [`MAX_PASSWORD_CHARS`] characters.
    #[schemars(length(min = MIN_PASSWORD_CHARS, max = MAX_PASSWORD_CHARS))]
    pub password: String,
}

/// `POST /api/auth/password`: change the password of the signed-in account, knowing the current
/// one. Every other session of the account is signed out; this one and the API tokens stay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PasswordChange {
    pub current_password: String,
    /// At least [`MIN_PASSWORD_CHARS`] and at most [`MAX_PASSWORD_CHARS`] characters.
    #[schemars(length(min = MIN_PASSWORD_CHARS, max = MAX_PASSWORD_CHARS))]
    pub new_password: String,
}

/// The answer of `POST /api/auth/password`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PasswordChanged {
    pub changed: bool,
    /// How many other sessions of the account were signed out.
    pub signed_out_sessions: u64,
}

/// The answer of `POST /api/auth/logout/everywhere`: every session of the account ended, this one
/// too, and with `revoke_tokens` every API token as well.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SignedOutEverywhere {
    pub signed_out_sessions: u64,
    pub revoked_tokens: u64,
}

/// `POST /api/auth/logout/everywhere` (the body may be empty): whether the account's API tokens
/// go too (default: no, they are listed and revoked one by one at `/api/tokens`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LogoutEverywhere {
    #[serde(default)]
    pub revoke_tokens: bool,
}

/// One mail the edge sent, as the local outbox keeps it (`MAIL_SENDER=outbox`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OutboxMail {
    pub to: String,
    pub subject: String,
    pub text: String,
    /// RFC 3339, UTC.
    pub sent_at: String,
}

/// `GET /api/admin/outbox?to=<email>`: the mails sent to one address, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Outbox {
    pub mails: Vec<OutboxMail>,
}

/// The answer of `POST /api/auth/logout`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SignedOut {
    pub signed_out: bool,
}

/// `POST /api/tokens` (the body may be empty).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    /// What the token is for, shown in lists (at most [`MAX_TOKEN_NAME_CHARS`] characters, none
    /// of them control or invisible characters).
    #[serde(default)]
    #[schemars(regex(pattern = jobspec::validate::LABEL_PATTERN), length(max = MAX_TOKEN_NAME_CHARS))]
    pub name: String,
}

/// A new API token, shown once: only its hash is stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenCreated {
    pub token: String,
    /// What `GET /api/tokens` lists it by and `DELETE /api/tokens/{id}` revokes it by (16 hex
    /// characters, derived from its hash: it cannot be turned back into the token).
    pub id: String,
    pub name: String,
}

/// One API token of the account, as `GET /api/tokens` lists it: never the token itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenInfo {
    pub id: String,
    pub name: String,
    /// RFC 3339.
    pub created_at: String,
}

/// `GET /api/tokens`: the account's API tokens, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenList {
    pub tokens: Vec<TokenInfo>,
}

/// `DELETE /api/tokens/{id}`: the token no longer signs anyone in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenRevoked {
    pub id: String,
    pub revoked: bool,
}
