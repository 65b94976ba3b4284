//! Email verification and the trial grant: the mail with its signed link (sent at sign-up and
//! on request), `POST /api/auth/verify` that checks the token, marks the email verified and
//! asks for the trial credit in two steps: the `Trials` object's reservation
//! (`coordinator/trials.rs`: one per mailbox, within the hourly cap over all accounts), then the
//! account object's grant (once per account). Both are idempotent for one account, so a grant
//! that failed between them completes when the link is opened again.

use super::access::User;
use super::coordinator;
use super::db::{self, n, now_ms, s};
use super::http::{self, ApiResult};
use super::mail;
use crate::coordinator::{Balance, Counted, Granted, Op};
use crate::email_link;
use crate::error::{ApiError, ErrorCode};
use crate::limits;
use crate::wire;
use api::{VerificationSent, Verified, VerifyRequest};
use serde::Deserialize;
use worker::{Env, Request};

/// The configured `EMAIL_LINK_KEY` (verification and reset links).
pub(super) fn link_key(env: &Env) -> ApiResult<String> {
    let key = mail::setting(env, "EMAIL_LINK_KEY");
    email_link::check_key(key.as_deref())
        .map(str::to_string)
        .map_err(ApiError::internal)
}

/// Mails `email` a new verification link for `user_id`; when another account holds the email
/// verified already, a note saying so instead (no link could verify it), with the same answer.
pub async fn send_link(env: &Env, user_id: &str, email: &str) -> ApiResult<VerificationSent> {
    let key = link_key(env)?;
    let expires_at_s = now_ms() / 1000 + email_link::LINK_LIFETIME_S;
    let public_url = http::public_url(env)?;
    let expires_at = crate::time::format_rfc3339_ms(expires_at_s * 1000);
    let mail = if super::passwords::verified_elsewhere(env, email, user_id).await? {
        crate::mail::already_registered(email, &public_url)
    } else {
        let token = email_link::sign(&key, user_id, email, expires_at_s);
        let link = crate::mail::verify_link(&public_url, &token);
        crate::mail::verification(email, &link, &expires_at)
    };
    mail::send(env, &mail).await?;
    Ok(VerificationSent {
        to: email.to_string(),
        expires_at,
    })
}

/// `POST /api/auth/verify`: the token is the proof (no session needed, so the link works in any
/// browser). A replayed link answers again with nothing granted.
pub async fn verify(mut req: Request, env: &Env) -> ApiResult<Verified> {
    let body = http::body(&mut req, wire::MAX_JSON_BYTES).await?;
    let r: VerifyRequest = wire::parse_json(&body)?;
    let claims = email_link::verify(&link_key(env)?, &r.token, now_ms() / 1000)?;
    #[derive(Deserialize)]
    struct Row {
        email: String,
    }
    let row: Option<Row> = db::first(
        env,
        "SELECT email FROM users WHERE id = ?",
        &[s(&claims.user_id)],
    )
    .await?;
    if row.is_none_or(|r| r.email != claims.email) {
        return Err(ApiError::new(
            ErrorCode::InvalidLink,
            "this verification link is for an account that no longer has this email",
        )
        .with_field("token"));
    }
    let now = now_ms();
    // The first account to verify an email holds it; the partial unique index of migration 0010
    // keeps two racing verifications from both winning.
    let taken = || {
        ApiError::new(
            ErrorCode::EmailTaken,
            format!(
                "another account verified {} first: sign in to it, or ask for a new password \
                 on the sign-in form",
                claims.email
            ),
        )
        .with_field("token")
    };
    if super::passwords::verified_elsewhere(env, &claims.email, &claims.user_id).await? {
        return Err(taken());
    }
    let marked = db::run(
        env,
        "UPDATE users SET email_verified_at = ? WHERE id = ? AND email_verified_at IS NULL \
         AND NOT EXISTS (SELECT 1 FROM users WHERE email = ? AND email_verified_at IS NOT NULL)",
        &[n(now), s(&claims.user_id), s(&claims.email)],
    )
    .await;
    // Nothing marked, or the index refused: a replay of this account's link, or another account
    // won the race since the check above.
    if !matches!(marked, Ok(1..))
        && super::passwords::verified_elsewhere(env, &claims.email, &claims.user_id).await?
    {
        return Err(taken());
    }
    marked?;
    let granted = grant_trial(env, &claims.user_id, &claims.email, now).await?;
    Ok(Verified {
        email: claims.email,
        granted_fen: granted.granted_fen,
        balance_fen: granted.balance_fen,
    })
}

/// The trial grant of a newly verified account (nothing when `SIGNUP_GRANT_FEN` is 0, or when
/// the account or its mailbox had it).
async fn grant_trial(env: &Env, user_id: &str, email: &str, now: i64) -> ApiResult<Granted> {
    let amount_fen = db::setting(env, "SIGNUP_GRANT_FEN", 1000).max(0);
    if amount_fen > 0 {
        let reserve = Op::ReserveTrial {
            user_id: user_id.to_string(),
            mailbox: limits::trial_mailbox(email),
            cap_per_hour: db::setting(env, "TRIAL_GRANTS_PER_HOUR", 500).max(0),
            now_ms: now,
        };
        coordinator::call::<Counted>(env, &reserve).await?;
        let grant = Op::GrantTrial {
            user_id: user_id.to_string(),
            amount_fen,
            now_ms: now,
        };
        coordinator::call::<Granted>(env, &grant).await
    } else {
        let op = Op::Balance {
            user_id: user_id.to_string(),
        };
        let b: Balance = coordinator::call(env, &op).await?;
        Ok(Granted {
            granted_fen: 0,
            balance_fen: b.balance_fen,
        })
    }
}

/// `POST /api/auth/verify/resend`: a new link for the signed-in account, a few per hour.
pub async fn resend(user: User, env: &Env) -> ApiResult<VerificationSent> {
    if user.email_verified {
        return Err(ApiError::new(
            ErrorCode::AlreadyVerified,
            format!("{} is verified already", user.email),
        ));
    }
    let per_hour = db::setting(env, "VERIFY_MAILS_PER_HOUR", 5);
    coordinator::rate_limit(env, &format!("verify-mail:{}", user.id), per_hour, 3600).await?;
    send_link(env, &user.id, &user.email).await
}
