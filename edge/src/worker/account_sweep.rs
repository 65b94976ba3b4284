//! What the cron trigger clears from accounts: sessions past their expiry, and accounts whose
//! email was never verified after `UNVERIFIED_ACCOUNT_DAYS` (7) that hold nothing (no job, no
//! credit). Such an account never blocked its email (the account that verifies an email first
//! holds it, `passwords.rs`); an unverified account that holds anything stays, and the owner of
//! its mailbox takes it over with a password reset (`reset.rs`).

use super::accounts::balance;
use super::db::{self, n, now_ms, s};
use super::http::ApiResult;
use serde::Deserialize;
use worker::Env;

/// What one sweep cleared.
#[derive(Debug, Default)]
pub struct Swept {
    pub sessions: u64,
    pub accounts: u64,
}

pub async fn sweep(env: &Env, limit: i64) -> ApiResult<Swept> {
    let now = now_ms();
    let sessions = db::run(env, "DELETE FROM sessions WHERE expires_at <= ?", &[n(now)]).await?;
    let days = db::setting(env, "UNVERIFIED_ACCOUNT_DAYS", 7).max(1);
    let cutoff = now.saturating_sub(days.saturating_mul(86_400_000));
    #[derive(Deserialize)]
    struct Stale {
        id: String,
    }
    let stale: Vec<Stale> = db::all(
        env,
        "SELECT id FROM users u WHERE email_verified_at IS NULL AND created_at <= ? \
         AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.user_id = u.id) ORDER BY random() LIMIT ?",
        &[n(cutoff), n(limit)],
    )
    .await?;
    // In no fixed order: accounts that stay (they hold credit) are not the only ones asked about
    // at every sweep, and one that cannot be cleared now stops no other.
    let mut accounts = 0;
    for u in &stale {
        match clear(env, &u.id).await {
            Ok(true) => accounts += 1,
            Ok(false) => {}
            Err(e) => worker::console_error!("account sweep: {}: {}", u.id, e.message),
        }
    }
    Ok(Swept { sessions, accounts })
}

/// Deletes a stale account that holds nothing; false when it holds credit (redeemed before it
/// verified: the account's, so it stays).
async fn clear(env: &Env, id: &str) -> ApiResult<bool> {
    if balance(env, id).await? != 0 {
        return Ok(false);
    }
    for sql in [
        "DELETE FROM sessions WHERE user_id = ?",
        "DELETE FROM api_tokens WHERE user_id = ?",
        "DELETE FROM experiments WHERE user_id = ?",
        "DELETE FROM users WHERE id = ? AND email_verified_at IS NULL",
    ] {
        db::run(env, sql, &[s(id)]).await?;
    }
    Ok(true)
}
