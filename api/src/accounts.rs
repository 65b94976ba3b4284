//! Accounts on the wire: sign-up, sign-in, the signed-in account, API tokens.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `POST /api/auth/signup` and `POST /api/auth/login`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    pub email: String,
    pub password: String,
}

/// `GET /api/me`, and the answer of sign-up and login: who is signed in, and their balance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Account {
    pub email: String,
    pub balance_fen: i64,
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
    /// What the token is for, shown in lists (at most 64 characters, none of them control or
    /// invisible characters).
    #[serde(default)]
    pub name: String,
}

/// A new API token, shown once: only its hash is stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenCreated {
    pub token: String,
    pub name: String,
}
