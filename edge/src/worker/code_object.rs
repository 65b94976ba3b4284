//! One promotion code's `Coordinator` object: the code's terms, its counter, and each account's
//! claim with its redemption id. This object is the source of truth for "this account redeemed
//! this code": a claim row per account, written in the same step as the counter, so a race of
//! redemptions of one code, by many accounts or by one, is serialised here and yields exactly the
//! allowed number of claims. The credit itself is the account object's (`account_object.rs`).

use super::coordinator::sql_err;
use super::http::ApiResult;
use crate::coordinator_wire::{Claimed, CodeCreated};
use crate::error::{ApiError, ErrorCode};
use crate::ledger::{self, Claim, ClaimDecision, CodeState};
use serde::Deserialize;
use worker::{SqlStorage, SqlStorageValue};

pub const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS promo_codes (code TEXT PRIMARY KEY, amount_fen INTEGER NOT NULL, \
     max_redemptions INTEGER NOT NULL, redeemed INTEGER NOT NULL DEFAULT 0, expires_at INTEGER, created_at INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS claims (user_id TEXT PRIMARY KEY, redemption_id TEXT NOT NULL, \
     amount_fen INTEGER NOT NULL, created_at INTEGER NOT NULL)",
];

pub(super) fn create(
    sql: &SqlStorage,
    code: &str,
    amount_fen: i64,
    max_redemptions: i64,
    expires_at_ms: Option<i64>,
    now_ms: i64,
) -> ApiResult<CodeCreated> {
    #[derive(Deserialize)]
    struct Exists {
        n: i64,
    }
    let e: Exists = sql
        .exec(
            "SELECT COUNT(*) AS n FROM promo_codes WHERE code = ?",
            vec![code.into()],
        )
        .and_then(|c| c.one())
        .map_err(sql_err)?;
    if e.n > 0 {
        return Err(ApiError::new(
            ErrorCode::CodeExists,
            format!("promotion code {code} already exists"),
        ));
    }
    sql.exec(
        "INSERT INTO promo_codes (code, amount_fen, max_redemptions, redeemed, expires_at, created_at) VALUES (?, ?, ?, 0, ?, ?)",
        vec![
            code.into(),
            amount_fen.into(),
            max_redemptions.into(),
            expires_at_ms.map_or(SqlStorageValue::Null, SqlStorageValue::from),
            now_ms.into(),
        ],
    )
    .map_err(sql_err)?;
    Ok(CodeCreated {
        code: code.to_string(),
    })
}

/// A redemption's first half ([`ledger::claim_code`]): a new claim counts the code, an earlier
/// one is answered unchanged.
pub(super) fn claim(
    sql: &SqlStorage,
    code: &str,
    user_id: &str,
    redemption_id: &str,
    now_ms: i64,
) -> ApiResult<Claimed> {
    #[derive(Deserialize)]
    struct Code {
        amount_fen: i64,
        max_redemptions: i64,
        redeemed: i64,
        expires_at: Option<i64>,
    }
    #[derive(Deserialize)]
    struct Earlier {
        redemption_id: String,
        amount_fen: i64,
    }
    let found: Vec<Code> = sql
        .exec(
            "SELECT amount_fen, max_redemptions, redeemed, expires_at FROM promo_codes WHERE code = ?",
            vec![code.into()],
        )
        .and_then(|c| c.to_array())
        .map_err(sql_err)?;
    let earlier: Vec<Earlier> = sql
        .exec(
            "SELECT redemption_id, amount_fen FROM claims WHERE user_id = ?",
            vec![user_id.into()],
        )
        .and_then(|c| c.to_array())
        .map_err(sql_err)?;
    let decision = ledger::claim_code(
        found.into_iter().next().map(|c| CodeState {
            amount_fen: c.amount_fen,
            max_redemptions: c.max_redemptions,
            redeemed: c.redeemed,
            expires_at_ms: c.expires_at,
        }),
        earlier.into_iter().next().map(|e| Claim {
            redemption_id: e.redemption_id,
            amount_fen: e.amount_fen,
        }),
        redemption_id,
        now_ms,
    )?;
    let claim = match decision {
        ClaimDecision::Again(claim) => claim,
        ClaimDecision::New(claim) => {
            sql.exec(
                "INSERT INTO claims (user_id, redemption_id, amount_fen, created_at) VALUES (?, ?, ?, ?)",
                vec![
                    user_id.into(),
                    claim.redemption_id.as_str().into(),
                    claim.amount_fen.into(),
                    now_ms.into(),
                ],
            )
            .map_err(sql_err)?;
            sql.exec(
                "UPDATE promo_codes SET redeemed = redeemed + 1 WHERE code = ?",
                vec![code.into()],
            )
            .map_err(sql_err)?;
            claim
        }
    };
    Ok(Claimed {
        redemption_id: claim.redemption_id,
        amount_fen: claim.amount_fen,
    })
}
