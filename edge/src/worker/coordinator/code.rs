//! One promotion code's `Coordinator` object: the code's terms, its counter, and each account's
//! claim with its redemption id. This object is the source of truth for "this account redeemed
//! this code": a claim row per account, written in the same step as the counter, so a race of
//! redemptions of one code, by many accounts or by one, is serialised here and yields exactly the
//! allowed number of claims. The credit itself is the account object's (`account.rs`).
//!
//! A claim whose credit never arrived (the request died between the two objects and the user
//! never retried) is completed by this object's own sweep: an alarm, armed after every claim
//! while some claim is not known to be credited, asks the account's object to credit each claim
//! older than `CLAIM_SWEEP_S` (idempotent by redemption id, so a claim the request credited
//! already changes nothing) and then marks it credited.

use super::storage::sql_err;
use crate::coordinator::{Claimed, CodeCreated, Credited, Op};
use crate::credits::{self, Claim, ClaimDecision, CodeState};
use crate::error::{ApiError, ErrorCode};
use crate::worker::db::now_ms;
use crate::worker::http::ApiResult;
use serde::Deserialize;
use worker::{Env, SqlStorage, SqlStorageValue, State};

pub const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS promo_codes (code TEXT PRIMARY KEY, amount_fen INTEGER NOT NULL, \
     max_redemptions INTEGER NOT NULL, redeemed INTEGER NOT NULL DEFAULT 0, expires_at INTEGER, created_at INTEGER NOT NULL)",
    // `credited`: the sweep saw the account's object credit this claim.
    "CREATE TABLE IF NOT EXISTS claims (user_id TEXT PRIMARY KEY, redemption_id TEXT NOT NULL, \
     amount_fen INTEGER NOT NULL, created_at INTEGER NOT NULL, credited INTEGER NOT NULL DEFAULT 0)",
];

/// Claims the sweep looks at in one run; it comes back for the rest.
const SWEEP_BATCH: usize = 100;

/// How long a claim is left to its own request before the sweep credits it (`CLAIM_SWEEP_S`).
fn sweep_after_ms(env: &Env) -> i64 {
    env.var("CLAIM_SWEEP_S")
        .ok()
        .and_then(|v| v.to_string().trim().parse::<i64>().ok())
        .unwrap_or(60)
        .clamp(1, 86_400)
        * 1000
}

#[derive(Deserialize)]
struct Count {
    n: i64,
}

/// Sets the sweep's alarm when a claim is not known to be credited and no alarm is set; true
/// when an alarm is set now.
pub(super) async fn arm_sweep(state: &State, env: &Env, sql: &SqlStorage) -> ApiResult<bool> {
    let open: Count = sql
        .exec("SELECT COUNT(*) AS n FROM claims WHERE credited = 0", None)
        .and_then(|c| c.one())
        .map_err(sql_err)?;
    if open.n == 0 {
        return Ok(false);
    }
    let storage = state.storage();
    let set = storage.get_alarm().await.map_err(sql_err)?;
    if set.is_none() {
        storage
            .set_alarm(sweep_after_ms(env))
            .await
            .map_err(sql_err)?;
    }
    Ok(true)
}

/// The alarm: credits each due claim through its account's object and marks it, then sets the
/// alarm again while any claim is left (true when it did).
pub(super) async fn sweep(state: &State, env: &Env, sql: &SqlStorage) -> ApiResult<bool> {
    #[derive(Deserialize)]
    struct Open {
        user_id: String,
        redemption_id: String,
        amount_fen: i64,
        created_at: i64,
    }
    #[derive(Deserialize)]
    struct Name {
        code: String,
    }
    let after_ms = sweep_after_ms(env);
    let now = now_ms();
    let code: Option<Name> = sql
        .exec("SELECT code FROM promo_codes LIMIT 1", None)
        .and_then(|c| c.to_array())
        .map_err(sql_err)?
        .into_iter()
        .next();
    let Some(Name { code }) = code else {
        return Ok(false);
    };
    let open: Vec<Open> = sql
        .exec(
            "SELECT user_id, redemption_id, amount_fen, created_at FROM claims WHERE credited = 0 \
             ORDER BY created_at LIMIT ?",
            vec![(SWEEP_BATCH as i64).into()],
        )
        .and_then(|c| c.to_array())
        .map_err(sql_err)?;
    let mut left = open.len() == SWEEP_BATCH;
    for claim in open {
        if !credits::claim_due(claim.created_at, now, after_ms) {
            left = true;
            continue;
        }
        let credit = Op::CreditRedemption {
            user_id: claim.user_id.clone(),
            code: code.clone(),
            redemption_id: claim.redemption_id.clone(),
            amount_fen: claim.amount_fen,
            // The ledger row carries the time of the redemption, not of the sweep.
            now_ms: claim.created_at,
        };
        match super::call::<Credited>(env, &credit).await {
            Ok(_) => {
                sql.exec(
                    "UPDATE claims SET credited = 1 WHERE user_id = ? AND redemption_id = ?",
                    vec![
                        claim.user_id.as_str().into(),
                        claim.redemption_id.as_str().into(),
                    ],
                )
                .map_err(sql_err)?;
            }
            Err(e) => {
                worker::console_error!(
                    "code {code}: crediting redemption {}: {}",
                    claim.redemption_id,
                    e.message
                );
                left = true;
            }
        }
    }
    if left {
        state.storage().set_alarm(after_ms).await.map_err(sql_err)?;
    }
    Ok(left)
}

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

/// A redemption's first half ([`credits::claim_code`]): a new claim counts the code, an earlier
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
    let decision = credits::claim_code(
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
