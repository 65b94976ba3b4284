//! The trial grant's `Coordinator` object (`Trials`): which account took each mailbox's trial,
//! and when, so that the hourly cap over all accounts holds. Its one operation is the first half
//! of a trial grant (`verify.rs` asks; the account's object grants, `account.rs`); the rules are
//! `crate::limits`'.

use super::storage::sql_err;
use crate::coordinator::Counted;
use crate::limits::{self, TRIAL_WINDOW_MS, TrialDecision, TrialState};
use crate::worker::http::ApiResult;
use serde::Deserialize;
use worker::SqlStorage;

/// The `Trials` object's tables: which account took each mailbox's trial, and when.
pub const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS trial_mailboxes (mailbox TEXT PRIMARY KEY, user_id TEXT NOT NULL, \
     created_at INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS trial_mailboxes_user ON trial_mailboxes (user_id)",
    "CREATE INDEX IF NOT EXISTS trial_mailboxes_time ON trial_mailboxes (created_at)",
];

/// The `Trials` object's side of `ReserveTrial`: the account's reservation, its mailbox's owner
/// and the last hour's reservations are read and the reservation written in the same
/// transaction, so two verifications racing cannot both reserve, nor two addresses of one
/// mailbox, nor can a burst of accounts pass the cap. An account that reserved before passes
/// again without counting ([`TrialDecision::Already`]); its grant is the account object's,
/// once per account.
pub(super) fn reserve(
    sql: &SqlStorage,
    user_id: &str,
    mailbox: &str,
    cap_per_hour: i64,
    now_ms: i64,
) -> ApiResult<Counted> {
    #[derive(Deserialize)]
    struct Count {
        n: i64,
        oldest: Option<i64>,
    }
    let count = |query: &str, args: Vec<worker::SqlStorageValue>| -> ApiResult<Count> {
        sql.exec(query, args).and_then(|c| c.one()).map_err(sql_err)
    };
    let mine = count(
        "SELECT COUNT(*) AS n, NULL AS oldest FROM trial_mailboxes WHERE user_id = ?",
        vec![user_id.into()],
    )?;
    let recent = count(
        "SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM trial_mailboxes WHERE created_at > ?",
        vec![(now_ms - TRIAL_WINDOW_MS).into()],
    )?;
    let owners = count(
        "SELECT COUNT(*) AS n, NULL AS oldest FROM trial_mailboxes WHERE mailbox = ? AND user_id != ?",
        vec![mailbox.into(), user_id.into()],
    )?;
    let state = TrialState {
        already_granted: mine.n > 0,
        mailbox_taken: owners.n > 0,
        granted_in_window: recent.n,
        oldest_in_window_ms: recent.oldest,
    };
    if limits::trial_decision(state, cap_per_hour, now_ms)? == TrialDecision::Grant {
        sql.exec(
            "INSERT INTO trial_mailboxes (mailbox, user_id, created_at) VALUES (?, ?, ?)",
            vec![mailbox.into(), user_id.into(), now_ms.into()],
        )
        .map_err(sql_err)?;
        return Ok(Counted {
            count: recent.n + 1,
        });
    }
    Ok(Counted { count: recent.n })
}
