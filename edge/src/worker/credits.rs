//! Credits: the ledger, redeeming promotion codes, and creating codes (admin). Every movement
//! goes through a Coordinator object, which applies it atomically.
//!
//! A redemption crosses two objects: the code's counts a claim for the account under a
//! redemption id (`ClaimCode`), then the account's credits that id (`CreditRedemption`). Should
//! the request die between the two (the account's object failed, the worker was stopped), the
//! code is counted and the credit missing; a retry of the redemption finds the account's earlier
//! claim with its first id, and the account's object credits that id once however often it is
//! asked, so the credit is neither lost nor doubled. Without a retry, the code's object's own
//! sweep credits the claim later (`coordinator/code.rs`). tests/tests/edge_credits.rs kills
//! redemptions in between to show both.

use super::access::{Admin, User};
use super::coordinator;
use super::db::{now_ms, random_hex};
use super::http::{self, ApiResult};
use crate::coordinator::{Claimed, CodeCreated, Credited, Op};
use crate::wire::Check;
use crate::wire::{self, NewPromoCode, RedeemRequest};
use api::{Ledger, PromoCodeCreated, Redeemed};
use worker::{Env, Request};

pub async fn ledger(user: User, env: &Env) -> ApiResult<Ledger> {
    coordinator::call(env, &Op::Ledger { user_id: user.id }).await
}

pub async fn redeem(user: User, mut req: Request, env: &Env) -> ApiResult<Redeemed> {
    let body = http::body(&mut req, wire::MAX_JSON_BYTES).await?;
    let r: RedeemRequest = wire::parse_json(&body)?;
    let code = wire::normalise_code(&r.code)?;
    let limit = env
        .var("REDEEM_LIMIT_PER_MIN")
        .ok()
        .and_then(|v| v.to_string().trim().parse().ok())
        .unwrap_or(30);
    coordinator::rate_limit(env, &format!("redeem:user:{}", user.id), limit, 60).await?;
    let now = now_ms();
    let claim = Op::ClaimCode {
        code: code.clone(),
        user_id: user.id.clone(),
        redemption_id: random_hex(16)?,
        now_ms: now,
    };
    let claimed: Claimed = coordinator::call(env, &claim).await?;
    let credit = Op::CreditRedemption {
        user_id: user.id,
        code,
        redemption_id: claimed.redemption_id.clone(),
        amount_fen: claimed.amount_fen,
        now_ms: now,
    };
    let credited: Credited = coordinator::call(env, &credit).await?;
    crate::credits::redeem_answer(
        &crate::credits::Claim {
            redemption_id: claimed.redemption_id,
            amount_fen: claimed.amount_fen,
        },
        credited.applied,
        credited.balance_fen,
    )
}

pub async fn create_code(_: Admin, mut req: Request, env: &Env) -> ApiResult<PromoCodeCreated> {
    let body = http::body(&mut req, wire::MAX_JSON_BYTES).await?;
    let p = wire::parse_json::<NewPromoCode>(&body)?.check()?;
    let op = Op::CreateCode {
        code: p.code.clone(),
        amount_fen: p.amount_fen,
        max_redemptions: p.max_redemptions,
        expires_at_ms: p.expires_at_ms,
        now_ms: now_ms(),
    };
    let created: CodeCreated = coordinator::call(env, &op).await?;
    Ok(PromoCodeCreated {
        code: created.code,
        amount_fen: p.amount_fen,
        max_redemptions: p.max_redemptions,
        expires_at: p.expires_at_ms.map(crate::time::format_rfc3339_ms),
    })
}
