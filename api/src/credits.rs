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

/// What a promotion code may be spelled as: 3-64 letters, digits, `-` or `_`, in any case
/// (codes are case-insensitive), with any white space around it (it is trimmed).
pub const CODE_PATTERN: &str = r"^\s*[A-Za-z0-9_-]{3,64}\s*$";
/// The most one code, or one refund, may move (an upper bound keeps every sum of the ledger far
/// inside the exact range of a JS number).
pub const MAX_AMOUNT_FEN: i64 = 100_000_000;
/// The most redemptions one code may allow.
pub const MAX_REDEMPTIONS: i64 = 1_000_000;
/// The longest reason of a refund, in characters (it is shown in audits).
pub const MAX_REASON_CHARS: usize = 500;
/// What a job id is: the lower-case hex the edge mints (a job's id is 32 of them).
pub const JOB_ID_PATTERN: &str = "^[0-9a-fA-F]{1,64}$";

/// A JSON integer, also written with a fraction of zero (`5.0`): JSON Schema's `integer` is any
/// number without a fractional part, so a client may send one so. Any other fraction, and a
/// number past 2^53 written with one, is refused.
fn whole_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    use serde::de::Error;
    match serde_json::Number::deserialize(d)? {
        n if n.is_i64() => n.as_i64().ok_or_else(|| D::Error::custom("not an integer")),
        n => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0 => Ok(f as i64),
            _ => Err(D::Error::custom(format!(
                "{n} is not a whole number that fits"
            ))),
        },
    }
}

/// `POST /api/credits/redeem`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedeemRequest {
    #[schemars(regex(pattern = CODE_PATTERN))]
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
    #[schemars(regex(pattern = CODE_PATTERN))]
    pub code: String,
    #[schemars(range(min = 1, max = MAX_AMOUNT_FEN))]
    #[serde(deserialize_with = "whole_number")]
    pub amount_fen: i64,
    #[schemars(range(min = 1, max = MAX_REDEMPTIONS))]
    #[serde(deserialize_with = "whole_number")]
    pub max_redemptions: i64,
    /// RFC 3339; none means no expiry.
    #[serde(default)]
    #[schemars(extend("format" = "date-time"))]
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
    #[schemars(regex(pattern = JOB_ID_PATTERN))]
    pub job_id: String,
    #[schemars(range(min = 1, max = MAX_AMOUNT_FEN))]
    #[serde(deserialize_with = "whole_number")]
    pub amount_fen: i64,
    /// Not only white space (it is trimmed), and at most [`MAX_REASON_CHARS`] characters.
    #[schemars(regex(pattern = r"\S"), length(min = 1, max = MAX_REASON_CHARS))]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_whole_numbers_however_written() {
        let parse = |amount: &str| {
            serde_json::from_str::<NewPromoCode>(&format!(
                r#"{{"code": "ABC", "amount_fen": {amount}, "max_redemptions": 1}}"#
            ))
            .map(|c| c.amount_fen)
            .map_err(|e| e.to_string())
        };
        assert_eq!(parse("500"), Ok(500));
        assert_eq!(parse("500.0"), Ok(500));
        assert_eq!(
            parse("-3"),
            Ok(-3),
            "the range is the edge's check, with its own message"
        );
        assert!(parse("500.5").is_err());
        assert!(parse("1e300").is_err());
        assert!(parse("\"500\"").is_err());
    }
}
