//! Credits: the ledger, redeeming promotion codes, and creating codes (admin). Every movement
//! goes through the Coordinator, which applies it atomically.

use super::accounts::{authenticate, require_admin};
use super::coordinator::{self, LEDGER};
use super::db::now_ms;
use super::http::{self, ApiResult};
use crate::coordinator_wire::{CodeCreated, Op};
use crate::wire::Check;
use crate::wire::{self, NewPromoCode, RedeemRequest};
use api::{Ledger, PromoCodeCreated, Redeemed};
use worker::{Env, Request};

pub async fn ledger(req: Request, env: &Env) -> ApiResult<Ledger> {
    let user = authenticate(&req, env, false).await?;
    coordinator::call(env, LEDGER, &Op::Ledger { user_id: user.id }).await
}

pub async fn redeem(mut req: Request, env: &Env) -> ApiResult<Redeemed> {
    let user = authenticate(&req, env, true).await?;
    let body = http::body(&mut req, wire::MAX_JSON_BYTES).await?;
    let r: RedeemRequest = wire::parse_json(&body)?;
    let code = wire::normalise_code(&r.code)?;
    let limit = env
        .var("REDEEM_LIMIT_PER_MIN")
        .ok()
        .and_then(|v| v.to_string().trim().parse().ok())
        .unwrap_or(30);
    coordinator::rate_limit(env, &format!("redeem:user:{}", user.id), limit, 60).await?;
    let op = Op::Redeem {
        user_id: user.id,
        code,
        now_ms: now_ms(),
    };
    coordinator::call(env, LEDGER, &op).await
}

pub async fn create_code(mut req: Request, env: &Env) -> ApiResult<PromoCodeCreated> {
    require_admin(&req, env)?;
    let body = http::body(&mut req, wire::MAX_JSON_BYTES).await?;
    let p = wire::parse_json::<NewPromoCode>(&body)?.check()?;
    let op = Op::CreateCode {
        code: p.code.clone(),
        amount_fen: p.amount_fen,
        max_redemptions: p.max_redemptions,
        expires_at_ms: p.expires_at_ms,
        now_ms: now_ms(),
    };
    let created: CodeCreated = coordinator::call(env, LEDGER, &op).await?;
    Ok(PromoCodeCreated {
        code: created.code,
        amount_fen: p.amount_fen,
        max_redemptions: p.max_redemptions,
        expires_at: p.expires_at_ms.map(crate::time::format_rfc3339_ms),
    })
}
