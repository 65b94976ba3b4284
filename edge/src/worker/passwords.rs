//! Which account a password opens, and the signed-in account's own password and sessions.
//!
//! An email belongs to the account that verifies it first (migration 0010): a sign-up with an
//! email that already has accounts makes one more, unverified, and answers as for a new email.
//! So one email may name several accounts: at most one verified, and unverified ones that the
//! cron sweep removes after a week (`account_sweep.rs`). Sign-in tries the password on the
//! verified one and the newest unverified ones, [`CANDIDATES`] in all, and always hashes that
//! many times, so neither the answer nor its time says how many accounts the email has.
//!
//! `POST /api/auth/password` changes the password knowing the current one and signs out every
//! other session; `POST /api/auth/logout/everywhere` ends every session, and on request every
//! API token.

use super::access::User;
use super::coordinator;
use super::db::{self, n, random_hex, s};
use super::http::{self, ApiResult};
use crate::access;
use crate::accounts::{PBKDF2_ITERATIONS, check_password, session_cookie};
use crate::error::{ApiError, ErrorCode};
use crate::wire;
use api::{LogoutEverywhere, PasswordChange, PasswordChanged, SignedOutEverywhere};
use js_sys::{Array, Uint8Array};
use serde::Deserialize;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use worker::{Env, Request, Response};

fn js_err(what: &'static str) -> impl Fn(JsValue) -> ApiError {
    move |e| ApiError::internal(format!("{what}: {e:?}"))
}

/// PBKDF2-SHA256 of the password, 256 bits, through WebCrypto.
pub(super) async fn pbkdf2(password: &str, salt: &[u8], iterations: u32) -> ApiResult<Vec<u8>> {
    let crypto: web_sys::Crypto =
        js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("crypto"))
            .map_err(js_err("crypto"))?
            .unchecked_into();
    let subtle = crypto.subtle();
    let usages = Array::of1(&JsValue::from_str("deriveBits"));
    let key = subtle
        .import_key_with_str(
            "raw",
            &Uint8Array::from(password.as_bytes()),
            "PBKDF2",
            false,
            &usages,
        )
        .map_err(js_err("importKey"))?;
    let key: web_sys::CryptoKey = JsFuture::from(key)
        .await
        .map_err(js_err("importKey"))?
        .unchecked_into();
    let params = web_sys::Pbkdf2Params::new(
        "PBKDF2",
        &JsValue::from_str("SHA-256"),
        iterations,
        &Uint8Array::from(salt),
    );
    let bits = subtle
        .derive_bits_with_object(&params, &key, 256)
        .map_err(js_err("deriveBits"))?;
    let bits = JsFuture::from(bits).await.map_err(js_err("deriveBits"))?;
    Ok(Uint8Array::new(&bits).to_vec())
}

/// How many of an email's accounts a password is tried on: the verified one, if any, first,
/// then the newest unverified ones.
pub(super) const CANDIDATES: usize = 3;

/// An account as sign-in sees it.
#[derive(Deserialize)]
pub(super) struct Holder {
    pub id: String,
    pub password_hash: String,
    salt: String,
    iterations: i64,
    pub email_verified_at: Option<i64>,
}

/// The account of `email` that `password` opens, if one does. Hashes [`CANDIDATES`] times
/// whatever the email has (a made-up salt stands in for each missing account).
pub(super) async fn opened_by(env: &Env, email: &str, password: &str) -> ApiResult<Option<Holder>> {
    let mut rows: Vec<Holder> = db::all(
        env,
        "SELECT id, password_hash, salt, iterations, email_verified_at FROM users WHERE email = ? \
         ORDER BY email_verified_at IS NULL, created_at DESC LIMIT ?",
        &[s(email), n(CANDIDATES as i64)],
    )
    .await?;
    let mut found = None;
    for k in 0..CANDIDATES {
        let row = rows.get(k);
        let (salt, iterations) = row.map_or(("no-such-account-salt", PBKDF2_ITERATIONS), |r| {
            (
                r.salt.as_str(),
                u32::try_from(r.iterations).unwrap_or(PBKDF2_ITERATIONS),
            )
        });
        let hash = hex::encode(pbkdf2(password, salt.as_bytes(), iterations).await?);
        if found.is_none() && row.is_some_and(|r| access::same_secret(&r.password_hash, &hash)) {
            found = Some(k);
        }
    }
    Ok(found.map(|k| rows.swap_remove(k)))
}

/// Whether `presented` (the known-device cookie, `crate::login_device`, under `link_key`) proves
/// an earlier sign-in to one of the accounts of `email` with its current password. As many
/// proofs are computed whatever the email has.
pub(super) async fn device_known(
    env: &Env,
    link_key: &str,
    email: &str,
    presented: &str,
) -> ApiResult<bool> {
    #[derive(Deserialize)]
    struct Hash {
        password_hash: String,
    }
    let rows: Vec<Hash> = db::all(
        env,
        "SELECT password_hash FROM users WHERE email = ? \
         ORDER BY email_verified_at IS NULL, created_at DESC LIMIT ?",
        &[s(email), n(CANDIDATES as i64)],
    )
    .await?;
    let mut hashes: Vec<&str> = rows.iter().map(|r| r.password_hash.as_str()).collect();
    hashes.resize(CANDIDATES, "no-such-account");
    Ok(crate::login_device::known(
        link_key, presented, email, &hashes,
    ))
}

/// The account a mailed reset link for `email` is for: the verified one, else the newest.
pub(super) async fn reset_target<T: serde::de::DeserializeOwned>(
    env: &Env,
    columns: &str,
    email: &str,
) -> ApiResult<Option<T>> {
    db::first(
        env,
        &format!(
            "SELECT {columns} FROM users WHERE email = ? \
             ORDER BY email_verified_at IS NULL, created_at DESC LIMIT 1"
        ),
        &[s(email)],
    )
    .await
}

/// Whether an account other than `user_id` holds `email` verified.
pub(super) async fn verified_elsewhere(env: &Env, email: &str, user_id: &str) -> ApiResult<bool> {
    #[derive(Deserialize)]
    struct Id {
        #[allow(dead_code)]
        id: String,
    }
    let other: Option<Id> = db::first(
        env,
        "SELECT id FROM users WHERE email = ? AND email_verified_at IS NOT NULL AND id != ?",
        &[s(email), s(user_id)],
    )
    .await?;
    Ok(other.is_some())
}

/// Sets `password` as the account's, hashed with a new salt, only while its hash is still
/// `old_hash`: of two changes racing, the second finds it gone. Whether this one changed it.
pub(super) async fn replace(
    env: &Env,
    user_id: &str,
    old_hash: &str,
    password: &str,
) -> ApiResult<bool> {
    let salt = random_hex(16)?;
    let hash = hex::encode(pbkdf2(password, salt.as_bytes(), PBKDF2_ITERATIONS).await?);
    let changed = db::run(
        env,
        "UPDATE users SET password_hash = ?, salt = ?, iterations = ? WHERE id = ? AND password_hash = ?",
        &[
            s(&hash),
            s(&salt),
            n(i64::from(PBKDF2_ITERATIONS)),
            s(user_id),
            s(old_hash),
        ],
    )
    .await?;
    Ok(changed > 0)
}

/// `POST /api/auth/password`.
pub async fn change(user: User, mut req: Request, env: &Env) -> ApiResult<PasswordChanged> {
    let body = http::body(&mut req, wire::MAX_JSON_BYTES).await?;
    let c: PasswordChange = wire::parse_json(&body)?;
    check_password(&c.new_password).map_err(|e| e.with_field("new_password"))?;
    // A token holder could otherwise try passwords here without the sign-in's backoff.
    let per_15 = db::setting(env, "PASSWORD_CHANGES_PER_15_MIN", 10);
    coordinator::rate_limit(env, &format!("password:{}", user.id), per_15, 900).await?;
    #[derive(Deserialize)]
    struct Row {
        password_hash: String,
        salt: String,
        iterations: i64,
    }
    let row: Row = db::first(
        env,
        "SELECT password_hash, salt, iterations FROM users WHERE id = ?",
        &[s(&user.id)],
    )
    .await?
    .ok_or_else(|| ApiError::new(ErrorCode::Unauthenticated, "this account no longer exists"))?;
    let iterations = u32::try_from(row.iterations).unwrap_or(PBKDF2_ITERATIONS);
    let given = hex::encode(pbkdf2(&c.current_password, row.salt.as_bytes(), iterations).await?);
    if !access::same_secret(&row.password_hash, &given) {
        return Err(ApiError::new(
            ErrorCode::WrongPassword,
            "current_password is not this account's password; nothing changed",
        )
        .with_field("current_password"));
    }
    // Only over the hash that was checked: of two changes racing, the second finds it gone.
    if !replace(env, &user.id, &row.password_hash, &c.new_password).await? {
        return Err(ApiError::new(
            ErrorCode::WrongPassword,
            "the password changed meanwhile; nothing changed by this request",
        )
        .with_field("current_password"));
    }
    let keep = user.session_hash().unwrap_or("");
    let signed_out = db::run(
        env,
        "DELETE FROM sessions WHERE user_id = ? AND token_hash != ?",
        &[s(&user.id), s(keep)],
    )
    .await?;
    Ok(PasswordChanged {
        changed: true,
        signed_out_sessions: signed_out,
    })
}

/// `POST /api/auth/logout/everywhere`: answers with the session cookie cleared.
pub async fn logout_everywhere(user: User, mut req: Request, env: &Env) -> ApiResult<Response> {
    let body = http::body(&mut req, wire::MAX_JSON_BYTES).await?;
    let l: LogoutEverywhere = if body.iter().all(u8::is_ascii_whitespace) {
        LogoutEverywhere::default()
    } else {
        wire::parse_json(&body)?
    };
    let sessions = db::run(
        env,
        "DELETE FROM sessions WHERE user_id = ?",
        &[s(&user.id)],
    )
    .await?;
    let tokens = if l.revoke_tokens {
        db::run(
            env,
            "DELETE FROM api_tokens WHERE user_id = ?",
            &[s(&user.id)],
        )
        .await?
    } else {
        0
    };
    let host = http::own_origin(&req)?.1;
    let mut resp = http::json(
        200,
        &SignedOutEverywhere {
            signed_out_sessions: sessions,
            revoked_tokens: tokens,
        },
    )?;
    resp.headers_mut()
        .append("set-cookie", &session_cookie(None, &host))
        .map_err(http::internal("cookie"))?;
    Ok(resp)
}
