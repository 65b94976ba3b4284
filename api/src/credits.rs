//! Credits on the wire: the ledger, redeeming a promotion code, and the admin's promotion codes
//! and refunds. Money is integer fen.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a ledger row records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LedgerKind {
    /// Trial credit at sign-up.
    Grant,
    /// A promotion code.
    Redeem,
    /// A job's maximum cost, held at submission.
    Hold,
    /// What a settled job cost.
    Capture,
    /// A settled job's hold, given back.
    Release,
    /// Credit an operator gave back for a failed job.
    Refund,
}

impl LedgerKind {
    pub const ALL: [LedgerKind; 6] = [
        LedgerKind::Grant,
        LedgerKind::Redeem,
        LedgerKind::Hold,
        LedgerKind::Capture,
        LedgerKind::Release,
        LedgerKind::Refund,
    ];

    /// The wire and storage spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            LedgerKind::Grant => "grant",
            LedgerKind::Redeem => "redeem",
            LedgerKind::Hold => "hold",
            LedgerKind::Capture => "capture",
            LedgerKind::Release => "release",
            LedgerKind::Refund => "refund",
        }
    }

    pub fn parse(s: &str) -> Option<LedgerKind> {
        LedgerKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// `GET /api/ledger`: the balance and every movement, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Ledger {
    pub balance_fen: i64,
    pub entries: Vec<LedgerEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LedgerEntry {
    pub id: i64,
    pub kind: LedgerKind,
    /// Signed: what the movement did to the balance.
    pub amount_fen: i64,
    /// What the movement belongs to: `signup`, `code:WELCOME`, `job:<id>`.
    pub reference: String,
    /// RFC 3339, UTC.
    pub time: String,
}

/// `POST /api/credits/redeem`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedeemRequest {
    pub code: String,
}

/// The answer of a redemption.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Redeemed {
    pub amount_fen: i64,
    pub balance_fen: i64,
}

/// `POST /api/admin/promo-codes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewPromoCode {
    pub code: String,
    pub amount_fen: i64,
    pub max_redemptions: i64,
    /// RFC 3339; none means no expiry.
    #[serde(default)]
    pub expires_at: Option<String>,
}

/// The answer of `POST /api/admin/promo-codes`: the code as stored (upper case).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PromoCodeCreated {
    pub code: String,
    pub amount_fen: i64,
    pub max_redemptions: i64,
    pub expires_at: Option<String>,
}

/// `POST /api/admin/refunds` (with an Idempotency-Key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RefundRequest {
    pub job_id: String,
    pub amount_fen: i64,
    pub reason: String,
}

/// The answer of a refund (201, or 200 for a replayed key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RefundAnswer {
    pub refund: Refund,
    /// True when this Idempotency-Key was used before: nothing new was refunded.
    pub replayed: bool,
    pub captured_fen: i64,
    pub refunded_fen: i64,
    pub refundable_fen: i64,
    /// The job owner's balance after the refund.
    pub balance_fen: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Refund {
    pub key: String,
    pub job_id: String,
    pub amount_fen: i64,
    pub reason: String,
    /// RFC 3339, UTC.
    pub time: String,
}
