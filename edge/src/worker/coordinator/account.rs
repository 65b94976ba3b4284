//! One account's `Coordinator` object: its ledger (the balance is its sum), its jobs' holds, the
//! refunds of those jobs (`refunds.rs`) and the redemptions credited to it. Everything that moves
//! this account's money is serialised here and nowhere else, so two accounts never wait on each
//! other. Each function is one operation's synchronous body (see `object.rs`); the rules
//! are the pure ones of `crate::credits` and `crate::limits`.

use super::storage::sql_err;
use crate::coordinator::{Balance, Credited, Granted, Settled};
use crate::credits::{self, LedgerKind};
use crate::error::ApiError;
use crate::worker::http::ApiResult;
use serde::Deserialize;
use worker::SqlStorage;

/// An account object's tables. The ledger keeps a `user_id` column although one object holds one
/// account, so that every query still names whose rows it reads.
pub const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL, \
     kind TEXT NOT NULL, amount_fen INTEGER NOT NULL, reference TEXT NOT NULL, created_at INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS ledger_reference ON ledger (reference)",
    "CREATE TABLE IF NOT EXISTS holds (job_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, amount_fen INTEGER NOT NULL, \
     captured_fen INTEGER, settled INTEGER NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS refunds (key TEXT PRIMARY KEY, job_id TEXT NOT NULL, user_id TEXT NOT NULL, \
     amount_fen INTEGER NOT NULL, reason TEXT NOT NULL, created_at INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS refunds_job ON refunds (job_id)",
    // One row per redemption id credited here: the second half of a redemption is idempotent by it.
    "CREATE TABLE IF NOT EXISTS credited (redemption_id TEXT PRIMARY KEY, code TEXT NOT NULL, \
     ledger_id INTEGER NOT NULL, created_at INTEGER NOT NULL)",
];

#[derive(Deserialize)]
struct Sum {
    total: Option<i64>,
}

#[derive(Deserialize)]
struct Count {
    n: i64,
}

pub(super) fn balance(sql: &SqlStorage, user_id: &str) -> ApiResult<i64> {
    let row: Sum = sql
        .exec(
            "SELECT SUM(amount_fen) AS total FROM ledger WHERE user_id = ?",
            vec![user_id.into()],
        )
        .and_then(|c| c.one())
        .map_err(sql_err)?;
    Ok(row.total.unwrap_or(0))
}

/// Writes one ledger row and returns its id.
pub(super) fn entry(
    sql: &SqlStorage,
    user: &str,
    kind: LedgerKind,
    amount: i64,
    reference: &str,
    now: i64,
) -> ApiResult<i64> {
    #[derive(Deserialize)]
    struct Id {
        id: i64,
    }
    let row: Id = sql
        .exec(
            "INSERT INTO ledger (user_id, kind, amount_fen, reference, created_at) VALUES (?, ?, ?, ?, ?) \
             RETURNING id",
            vec![user.into(), kind.as_str().into(), amount.into(), reference.into(), now.into()],
        )
        .and_then(|c| c.one())
        .map_err(sql_err)?;
    Ok(row.id)
}

pub(super) fn ledger(sql: &SqlStorage, user_id: &str) -> ApiResult<api::Ledger> {
    #[derive(Deserialize)]
    struct Row {
        id: i64,
        kind: String,
        amount_fen: i64,
        reference: String,
        created_at: i64,
    }
    let rows: Vec<Row> = sql
        .exec(
            "SELECT id, kind, amount_fen, reference, created_at FROM ledger WHERE user_id = ? ORDER BY id DESC LIMIT 500",
            vec![user_id.into()],
        )
        .and_then(|c| c.to_array())
        .map_err(sql_err)?;
    let entries = rows
        .into_iter()
        .map(|r| api::LedgerEntry {
            id: r.id,
            // Only this object writes its ledger, with `LedgerKind::as_str`.
            kind: LedgerKind::parse(&r.kind).unwrap_or(LedgerKind::Grant),
            amount_fen: r.amount_fen,
            reference: r.reference,
            time: crate::time::format_rfc3339_ms(r.created_at),
        })
        .collect();
    Ok(api::Ledger {
        balance_fen: balance(sql, user_id)?,
        entries,
    })
}

/// The trial's second half: the `trial:<id>` row, once per account (the `Trials` object decided
/// already that this account may have it).
pub(super) fn grant_trial(
    sql: &SqlStorage,
    user_id: &str,
    amount_fen: i64,
    now_ms: i64,
) -> ApiResult<Granted> {
    let reference = crate::limits::trial_reference(user_id);
    let mine: Count = sql
        .exec(
            "SELECT COUNT(*) AS n FROM ledger WHERE reference = ?",
            vec![reference.as_str().into()],
        )
        .and_then(|c| c.one())
        .map_err(sql_err)?;
    let granted_fen = if credits::credit_once(mine.n > 0) {
        entry(
            sql,
            user_id,
            LedgerKind::Grant,
            amount_fen,
            &reference,
            now_ms,
        )?;
        amount_fen
    } else {
        0
    };
    Ok(Granted {
        granted_fen,
        balance_fen: balance(sql, user_id)?,
    })
}

/// A redemption's second half: the `redeem` row for `redemption_id`, written at most once.
pub(super) fn credit_redemption(
    sql: &SqlStorage,
    user_id: &str,
    code: &str,
    redemption_id: &str,
    amount_fen: i64,
    now_ms: i64,
) -> ApiResult<Credited> {
    let seen: Count = sql
        .exec(
            "SELECT COUNT(*) AS n FROM credited WHERE redemption_id = ?",
            vec![redemption_id.into()],
        )
        .and_then(|c| c.one())
        .map_err(sql_err)?;
    let applied = credits::credit_once(seen.n > 0);
    if applied {
        let id = entry(
            sql,
            user_id,
            LedgerKind::Redeem,
            amount_fen,
            &format!("code:{code}"),
            now_ms,
        )?;
        sql.exec(
            "INSERT INTO credited (redemption_id, code, ledger_id, created_at) VALUES (?, ?, ?, ?)",
            vec![redemption_id.into(), code.into(), id.into(), now_ms.into()],
        )
        .map_err(sql_err)?;
    }
    Ok(Credited {
        applied,
        balance_fen: balance(sql, user_id)?,
    })
}

pub(super) fn hold(
    sql: &SqlStorage,
    user_id: &str,
    job_id: &str,
    amount_fen: i64,
    now_ms: i64,
) -> ApiResult<Balance> {
    // One hold per job: a hold that comes after its job was settled (one whose answer came too
    // late, [`settle`] of a job with no hold) would take credit nothing gives back.
    let seen: Vec<serde_json::Value> = sql
        .exec(
            "SELECT settled FROM holds WHERE job_id = ?",
            vec![job_id.into()],
        )
        .and_then(|c| c.to_array())
        .map_err(sql_err)?;
    if !seen.is_empty() {
        return Err(ApiError::new(
            crate::error::ErrorCode::IdempotencyConflict,
            format!("job {job_id} already has a hold, or was settled before its hold came"),
        ));
    }
    let have = balance(sql, user_id)?;
    credits::check_hold(have, amount_fen)?;
    sql.exec(
        "INSERT INTO holds (job_id, user_id, amount_fen, settled) VALUES (?, ?, ?, 0)",
        vec![job_id.into(), user_id.into(), amount_fen.into()],
    )
    .map_err(sql_err)?;
    entry(
        sql,
        user_id,
        LedgerKind::Hold,
        -amount_fen,
        &format!("job:{job_id}"),
        now_ms,
    )?;
    Ok(Balance {
        balance_fen: have - amount_fen,
    })
}

pub(super) fn settle(
    sql: &SqlStorage,
    user_id: &str,
    job_id: &str,
    capture_fen: i64,
    now_ms: i64,
) -> ApiResult<Settled> {
    #[derive(Deserialize)]
    struct Hold {
        amount_fen: i64,
        settled: i64,
        captured_fen: Option<i64>,
    }
    let holds: Vec<Hold> = sql
        .exec(
            "SELECT amount_fen, settled, captured_fen FROM holds WHERE job_id = ? AND user_id = ?",
            vec![job_id.into(), user_id.into()],
        )
        .and_then(|c| c.to_array())
        .map_err(sql_err)?;
    let Some(h) = holds.into_iter().next() else {
        // Settled with nothing held (kept, in one step with the answer): a hold that comes later
        // is refused ([`hold`]).
        sql.exec(
            "INSERT OR IGNORE INTO holds (job_id, user_id, amount_fen, captured_fen, settled) \
             VALUES (?, ?, 0, 0, 1)",
            vec![job_id.into(), user_id.into()],
        )
        .map_err(sql_err)?;
        return Ok(Settled {
            captured_fen: 0,
            already: false,
        });
    };
    let capture = match credits::settle_hold(
        credits::HoldState {
            amount_fen: h.amount_fen,
            settled: h.settled != 0,
            captured_fen: h.captured_fen,
        },
        capture_fen,
    ) {
        credits::Settlement::Already { captured_fen } => {
            return Ok(Settled {
                captured_fen,
                already: true,
            });
        }
        credits::Settlement::Capture { capture_fen } => capture_fen,
    };
    let reference = format!("job:{job_id}");
    sql.exec(
        "UPDATE holds SET settled = 1, captured_fen = ? WHERE job_id = ?",
        vec![capture.into(), job_id.into()],
    )
    .map_err(sql_err)?;
    entry(
        sql,
        user_id,
        LedgerKind::Release,
        h.amount_fen,
        &reference,
        now_ms,
    )?;
    if capture > 0 {
        entry(
            sql,
            user_id,
            LedgerKind::Capture,
            -capture,
            &reference,
            now_ms,
        )?;
    }
    Ok(Settled {
        captured_fen: capture,
        already: false,
    })
}
