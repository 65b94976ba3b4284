//! Accounts: sign-up, login, logout, `GET /api/me` and API tokens. Passwords are hashed with
//! PBKDF2-SHA256 through WebCrypto; session and API tokens are random 256-bit values of which
//! only the SHA-256 is stored (`access.rs` finds whom they name). Sign-up gives no credit: it
//! mails the verification link, and verifying gives the trial (`verify.rs`). Sign-up answers the
//! same whether or not the email has an account; which account a password opens, and the
//! password change, are `passwords.rs`. Login waits out a backoff per email and client
//! (`crate::limits`), so failures elsewhere never lock the owner out; a browser that signed in
//! before is held only by its own kind's backoff (`crate::login_device`).

use super::access::User;
use super::coordinator;
use super::db::{self, n, now_ms, random_hex, s};
use super::http::{self, ApiResult};
use super::passwords::pbkdf2;
use crate::access;
use crate::accounts::{
    PBKDF2_ITERATIONS, SESSION_MAX_AGE_S, check_password, normalise_email, session_cookie,
};
use crate::coordinator::{Balance, Counted, Op};
use crate::error::{ApiError, ErrorCode};
use crate::login_device::DEVICE_COOKIE;
use crate::wire::{self, Credentials, NewToken};
use api::{Account, SignedOut, TokenCreated, TokenInfo, TokenList, TokenRevoked};
use worker::{Env, Request, Response};

pub(super) fn client_ip(req: &Request) -> String {
    http::header(req, "cf-connecting-ip").unwrap_or_else(|| "local".into())
}

/// Sign-up and login are not cookie-authenticated, but a cross-site form could still sign a
/// victim into an attacker's account; refuse a foreign Origin when one is sent.
pub(super) fn check_login_origin(req: &Request) -> ApiResult<()> {
    match http::header(req, "origin") {
        Some(o) => access::check_origin(Some(&o), &http::own_origin(req)?.0),
        None => Ok(()),
    }
}

async fn new_session(env: &Env, user_id: &str) -> ApiResult<String> {
    let token = random_hex(32)?;
    let now = now_ms();
    db::run(
        env,
        "INSERT INTO sessions (token_hash, user_id, expires_at, created_at) VALUES (?, ?, ?, ?)",
        &[
            s(&access::hash_token(&token)),
            s(user_id),
            n(now + SESSION_MAX_AGE_S as i64 * 1000),
            n(now),
        ],
    )
    .await?;
    Ok(token)
}

fn with_cookie(mut resp: Response, cookie: &str) -> worker::Result<Response> {
    resp.headers_mut().append("set-cookie", cookie)?;
    Ok(resp)
}

pub(super) async fn balance(env: &Env, user_id: &str) -> ApiResult<i64> {
    let op = Op::Balance {
        user_id: user_id.to_string(),
    };
    Ok(coordinator::call::<Balance>(env, &op).await?.balance_fen)
}

pub async fn signup(mut req: Request, env: &Env) -> ApiResult<Response> {
    check_login_origin(&req)?;
    let body = http::body(&mut req, wire::MAX_JSON_BYTES).await?;
    let c: Credentials = wire::parse_json(&body)?;
    let email = normalise_email(&c.email)?;
    check_password(&c.password)?;
    // Generous: a class behind one campus address signs up in one sitting; the trial credit,
    // which is what farming would want, waits for a verified email.
    let per_hour = db::setting(env, "SIGNUP_LIMIT_PER_HOUR", 100);
    coordinator::rate_limit(
        env,
        &format!("signup:ip:{}", client_ip(&req)),
        per_hour,
        3600,
    )
    .await?;
    // Limits that hold whether or not the email has accounts, so a refusal tells nothing.
    let per_email = db::setting(env, "SIGNUPS_PER_EMAIL_PER_DAY", 10);
    coordinator::rate_limit(env, &format!("signup:email:{email}"), per_email, 86_400).await?;
    // The password opens an account of this email already (a second click, or an owner who
    // forgot having one): that account signs in, answered as a new one would be.
    if let Some(held) = super::passwords::opened_by(env, &email, &c.password).await? {
        let verified = held.email_verified_at.is_some();
        let resp = signed_in(&req, env, &held.id, email, verified).await?;
        return Ok(resp.with_status(201));
    }
    // Whether or not the email has accounts, a new one: the email belongs to whichever account
    // verifies it first (`passwords.rs`), so this answer is the same for every email.
    let salt = random_hex(16)?;
    let hash = pbkdf2(&c.password, salt.as_bytes(), PBKDF2_ITERATIONS).await?;
    let id = random_hex(16)?;
    db::run(
        env,
        "INSERT INTO users (id, email, password_hash, salt, iterations, created_at) VALUES (?, ?, ?, ?, ?, ?)",
        &[s(&id), s(&email), s(&hex::encode(hash)), s(&salt), n(i64::from(PBKDF2_ITERATIONS)), n(now_ms())],
    )
    .await?;
    // The account exists either way: a mail that could not leave is logged, and the account
    // page offers to send it again.
    if let Err(e) = super::verify::send_link(env, &id, &email).await {
        worker::console_error!(
            "sign-up {id}: the verification mail was not sent: {}",
            e.message
        );
    }
    let resp = signed_in_with(&req, env, &id, email, false, Some(0)).await?;
    Ok(resp.with_status(201))
}

pub async fn login(mut req: Request, env: &Env) -> ApiResult<Response> {
    check_login_origin(&req)?;
    let body = http::body(&mut req, wire::MAX_JSON_BYTES).await?;
    let c: Credentials = wire::parse_json(&body)?;
    let email = normalise_email(&c.email)?;
    let client = client_ip(&req);
    // A browser that signed in to this account before (`crate::login_device`) is held only by
    // the backoff of the email's known devices, so wrong passwords sent from elsewhere, however
    // many, never keep the owner out.
    let presented = http::header(&req, "cookie");
    let presented = access::cookie(presented.as_deref(), DEVICE_COOKIE).unwrap_or_default();
    let link_key = super::verify::link_key(env)?;
    let known = !presented.is_empty()
        && super::passwords::device_known(env, &link_key, &email, presented).await?;
    if !known {
        // A ceiling per email over every client, well above what one person types; the real
        // guard is the backoff of this email from this client, which failures elsewhere do not
        // touch.
        let ceiling = db::setting(env, "LOGIN_LIMIT_PER_15_MIN", 100);
        coordinator::rate_limit(env, &format!("login:email:{email}"), ceiling, 900).await?;
        coordinator::rate_limit(env, &format!("login:ip:{client}"), ceiling * 10, 900).await?;
    }
    let key = match known {
        true => crate::limits::known_device_login_key(&email),
        false => crate::limits::login_key(&email, &client),
    };
    let attempt = Op::LoginAttempt {
        key: key.clone(),
        now_ms: now_ms(),
    };
    coordinator::call::<Counted>(env, &attempt).await?;
    let Some(user) = super::passwords::opened_by(env, &email, &c.password).await? else {
        return Err(ApiError::new(
            ErrorCode::BadCredentials,
            "wrong email or password",
        ));
    };
    coordinator::call::<Counted>(env, &Op::LoginSucceeded { key }).await?;
    let verified = user.email_verified_at.is_some();
    let proof = crate::login_device::proof(&link_key, &email, &user.password_hash);
    let host = http::own_origin(&req)?.1;
    let resp = signed_in(&req, env, &user.id, email, verified).await?;
    with_cookie(resp, &crate::login_device::cookie(&proof, &host)).map_err(http::internal("cookie"))
}

/// A new session for the account, answered with the account and the session cookie (login, and
/// a new password).
pub(super) async fn signed_in(
    req: &Request,
    env: &Env,
    user_id: &str,
    email: String,
    email_verified: bool,
) -> ApiResult<Response> {
    signed_in_with(req, env, user_id, email, email_verified, None).await
}

/// [`signed_in`], with the balance when it is known without asking the account's object (a
/// new account's is 0: its sign-up does not wait on the coordinator).
pub(super) async fn signed_in_with(
    req: &Request,
    env: &Env,
    user_id: &str,
    email: String,
    email_verified: bool,
    known_balance: Option<i64>,
) -> ApiResult<Response> {
    let token = new_session(env, user_id).await?;
    let host = http::own_origin(req)?.1;
    let balance_fen = match known_balance {
        Some(b) => b,
        None => balance(env, user_id).await?,
    };
    let resp = http::json(
        200,
        &Account {
            balance_fen,
            email,
            email_verified,
            artifacts: Some(super::artifacts::usage(env, user_id).await?),
            experiments: Some(super::experiments::usage(env, user_id).await?),
        },
    )?;
    with_cookie(resp, &session_cookie(Some(&token), &host)).map_err(http::internal("cookie"))
}

pub async fn logout(user: User, req: Request, env: &Env) -> ApiResult<Response> {
    if let Some(h) = user.session_hash() {
        db::run(env, "DELETE FROM sessions WHERE token_hash = ?", &[s(h)]).await?;
    }
    if let Some(h) = user.token_hash() {
        db::run(env, "DELETE FROM api_tokens WHERE token_hash = ?", &[s(h)]).await?;
    }
    let host = http::own_origin(&req)?.1;
    let resp = http::json(200, &SignedOut { signed_out: true })?;
    with_cookie(resp, &session_cookie(None, &host)).map_err(http::internal("cookie"))
}

pub async fn me(user: User, env: &Env) -> ApiResult<Response> {
    let balance_fen = balance(env, &user.id).await?;
    http::json(
        200,
        &Account {
            email: user.email,
            balance_fen,
            email_verified: user.email_verified,
            artifacts: Some(super::artifacts::usage(env, &user.id).await?),
            experiments: Some(super::experiments::usage(env, &user.id).await?),
        },
    )
    .map_err(http::internal("response"))
}

pub async fn create_token(user: User, mut req: Request, env: &Env) -> ApiResult<Response> {
    let body = http::body(&mut req, wire::MAX_JSON_BYTES).await?;
    let t: NewToken = if body.is_empty() {
        NewToken::default()
    } else {
        wire::parse_json(&body)?
    };
    wire::check_label("name", &t.name, api::accounts::MAX_TOKEN_NAME_CHARS)?;
    let name = t.name;
    let token = format!("onr_{}", random_hex(32)?);
    // One statement counts and inserts, so parallel requests cannot pass the limit together.
    let limit = db::setting(env, "TOKENS_PER_USER", 50);
    let inserted = db::run(
        env,
        "INSERT INTO api_tokens (token_hash, user_id, name, created_at) SELECT ?, ?, ?, ? \
         WHERE (SELECT COUNT(*) FROM api_tokens WHERE user_id = ?) < ?",
        &[
            s(&access::hash_token(&token)),
            s(&user.id),
            s(&name),
            n(now_ms()),
            s(&user.id),
            n(limit),
        ],
    )
    .await?;
    if inserted == 0 {
        return Err(db::limit_reached("API tokens per account", limit));
    }
    let id = token_id(&access::hash_token(&token));
    http::json(201, &TokenCreated { token, id, name }).map_err(http::internal("response"))
}

/// A token's id: the first 16 hex characters of its hash (the hash is stored, never the token).
fn token_id(hash: &str) -> String {
    hash.chars().take(TOKEN_ID_CHARS).collect()
}

const TOKEN_ID_CHARS: usize = 16;

/// `GET /api/tokens`: the account's API tokens, newest first, by id and name.
pub async fn list_tokens(user: User, env: &Env) -> ApiResult<TokenList> {
    #[derive(serde::Deserialize)]
    struct Row {
        token_hash: String,
        name: String,
        created_at: i64,
    }
    let rows: Vec<Row> = db::all(
        env,
        "SELECT token_hash, name, created_at FROM api_tokens WHERE user_id = ? \
         ORDER BY created_at DESC, token_hash",
        &[s(&user.id)],
    )
    .await?;
    Ok(TokenList {
        tokens: rows
            .into_iter()
            .map(|r| TokenInfo {
                id: token_id(&r.token_hash),
                name: r.name,
                created_at: crate::time::format_rfc3339_ms(r.created_at),
            })
            .collect(),
    })
}

/// `DELETE /api/tokens/{id}`: one of the account's tokens, revoked. Another account's token, or
/// an id that names none, is "no such token" (404), whichever it is.
pub async fn revoke_token(user: User, env: &Env, id: &str) -> ApiResult<TokenRevoked> {
    let missing = || {
        ApiError::not_found(format!("you have no API token {id:?}"))
            .with_details(serde_json::json!({"field": "id"}))
    };
    let well_formed = id.len() == TOKEN_ID_CHARS
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if !well_formed {
        return Err(missing());
    }
    let removed = db::run(
        env,
        "DELETE FROM api_tokens WHERE user_id = ? AND substr(token_hash, 1, 16) = ?",
        &[s(&user.id), s(id)],
    )
    .await?;
    if removed == 0 {
        return Err(missing());
    }
    Ok(TokenRevoked {
        id: id.to_string(),
        revoked: true,
    })
}
