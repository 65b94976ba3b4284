//! Password reset: `POST /api/auth/reset/request` mails a link to the email if an account has it
//! (and answers the same either way, so nobody learns who has an account), and
//! `POST /api/auth/reset` sets a new password with the link's token (`crate::password_reset`:
//! an hour, once). The new password signs the caller in and signs out every other session and
//! API token of the account, so whoever held the account before the owner of the mailbox (a
//! squatter who signed up with someone else's email, or a thief) loses it.

use super::accounts::{check_login_origin, client_ip, signed_in};
use super::coordinator;
use super::db::{self, now_ms, s};
use super::http::{self, ApiResult};
use super::mail;
use super::verify::link_key;
use crate::accounts::{check_password, normalise_email};
use crate::error::ApiError;
use crate::password_reset::{self, RESET_LIFETIME_S};
use crate::wire;
use api::{NewPassword, ResetRequest, ResetRequested};
use serde::Deserialize;
use worker::{Context, Env, Request, Response};

#[derive(Deserialize)]
struct Row {
    id: String,
    email: String,
    password_hash: String,
    email_verified_at: Option<i64>,
}

/// The mail leaves after the answer (`Context::wait_until`): an answer that waited on the mail
/// service only for an email with an account would tell, by its time, who has one.
pub async fn request(mut req: Request, env: &Env, ctx: &Context) -> ApiResult<ResetRequested> {
    let body = http::body(&mut req, wire::MAX_JSON_BYTES).await?;
    let r: ResetRequest = wire::parse_json(&body)?;
    let email = normalise_email(&r.email)?;
    // Limits that hold whether or not the email has an account, so a refusal tells nothing.
    let per_hour = db::setting(env, "RESET_MAILS_PER_HOUR", 3);
    coordinator::rate_limit(env, &format!("reset:email:{email}"), per_hour, 3600).await?;
    let per_ip = db::setting(env, "RESET_REQUESTS_PER_HOUR_PER_IP", 30);
    coordinator::rate_limit(env, &format!("reset:ip:{}", client_ip(&req)), per_ip, 3600).await?;
    // One email may name several accounts (`passwords.rs`): the link is for the one that holds
    // it verified, else the newest.
    let row: Option<Row> =
        super::passwords::reset_target(env, "id, email, password_hash, email_verified_at", &email)
            .await?;
    if let Some(user) = row {
        let token = password_reset::sign(
            &link_key(env)?,
            &user.id,
            &user.email,
            &user.password_hash,
            now_ms() / 1000,
        );
        let link = crate::mail::reset_link(&http::public_url(env)?, &token);
        let until = crate::time::format_rfc3339_ms((now_ms() / 1000 + RESET_LIFETIME_S) * 1000);
        let mail = crate::mail::password_reset(&email, &link, &until);
        // A mail that could not leave is the operator's to see; the answer stays the same.
        let (env, id) = (env.clone(), user.id);
        ctx.wait_until(async move {
            if let Err(e) = mail::send(&env, &mail).await {
                worker::console_error!("reset for {id}: the mail was not sent: {}", e.message);
            }
        });
    }
    Ok(ResetRequested {
        to: email,
        expires_in_s: RESET_LIFETIME_S as u64,
    })
}

pub async fn reset(mut req: Request, env: &Env) -> ApiResult<Response> {
    check_login_origin(&req)?;
    let body = http::body(&mut req, wire::MAX_JSON_BYTES).await?;
    let r: NewPassword = wire::parse_json(&body)?;
    check_password(&r.password)?;
    let claims = password_reset::verify(&link_key(env)?, &r.token, now_ms() / 1000)?;
    let user: Row = db::first(
        env,
        "SELECT id, email, password_hash, email_verified_at FROM users WHERE id = ?",
        &[s(&claims.user_id)],
    )
    .await?
    .ok_or_else(|| ApiError::not_found("the account of this reset link no longer exists"))?;
    password_reset::still_holds(&claims, &user.email, &user.password_hash)?;
    // Only against the hash the link was issued for: of two uses racing, one changes it.
    if !super::passwords::replace(env, &user.id, &user.password_hash, &r.password).await? {
        return Err(password_reset::still_holds(&claims, &user.email, "")
            .err()
            .unwrap_or_else(|| ApiError::internal("a reset raced and neither won")));
    }
    db::run(
        env,
        "DELETE FROM sessions WHERE user_id = ?",
        &[s(&user.id)],
    )
    .await?;
    db::run(
        env,
        "DELETE FROM api_tokens WHERE user_id = ?",
        &[s(&user.id)],
    )
    .await?;
    let verified = user.email_verified_at.is_some();
    signed_in(&req, env, &user.id, user.email, verified).await
}
