//! An account's refunds, in its `Coordinator` object (`account.rs`): the bound (what was captured
//! for the job, minus earlier refunds), the idempotency key and the `refund` ledger row, all in
//! one synchronous step so that two refunds racing for the same job cannot both pass the bound.
//! Keys are kept per account: the job and its hold live in its owner's object. The rules are
//! `crate::refunds`; the admin's request is `worker/refunds.rs`.

use super::account::{balance, entry};
use super::storage::sql_err;
use crate::credits::LedgerKind;
use crate::error::ApiError;
use crate::refunds::{EarlierRefund, Refund, Settled, check_refund, refund_replay};
use crate::worker::http::ApiResult;
use api::RefundAnswer;
use serde::Deserialize;
use worker::SqlStorage;

/// What `Refund` asks of the account's object.
pub struct RefundAsk<'a> {
    pub user_id: &'a str,
    pub key: &'a str,
    pub job_id: &'a str,
    pub amount_fen: i64,
    pub reason: &'a str,
}

/// The account object's side: bound, idempotency and the ledger row.
pub fn apply(sql: &SqlStorage, ask: RefundAsk<'_>, now_ms: i64) -> ApiResult<RefundAnswer> {
    let RefundAsk {
        user_id,
        key,
        job_id,
        amount_fen,
        reason,
    } = ask;
    let earlier = earlier_refund(sql, key)?;
    let asked = Refund {
        job_id: job_id.to_string(),
        amount_fen,
        reason: reason.to_string(),
    };
    if let (true, Some((_, at))) = (
        refund_replay(earlier.as_ref().map(|(e, _)| e), &asked)?,
        &earlier,
    ) {
        return answer(sql, key, job_id, amount_fen, reason, *at, true);
    }

    #[derive(Deserialize)]
    struct Hold {
        user_id: String,
        settled: i64,
        captured_fen: Option<i64>,
    }
    let hold: Option<Hold> = sql
        .exec(
            "SELECT user_id, settled, captured_fen FROM holds WHERE job_id = ? AND user_id = ?",
            vec![job_id.into(), user_id.into()],
        )
        .and_then(|c| c.to_array())
        .map_err(sql_err)?
        .into_iter()
        .next();
    let refunded = refunded_fen(sql, job_id)?;
    check_refund(
        hold.as_ref().map(|h| Settled {
            settled: h.settled != 0,
            captured_fen: h.captured_fen.unwrap_or(0),
        }),
        refunded,
        amount_fen,
    )?;
    let Some(hold) = hold else {
        return Err(ApiError::internal("refund passed its check without a hold"));
    };
    sql.exec(
        "INSERT INTO refunds (key, job_id, user_id, amount_fen, reason, created_at) VALUES (?, ?, ?, ?, ?, ?)",
        vec![
            key.into(),
            job_id.into(),
            hold.user_id.as_str().into(),
            amount_fen.into(),
            reason.into(),
            now_ms.into(),
        ],
    )
    .map_err(sql_err)?;
    entry(
        sql,
        &hold.user_id,
        LedgerKind::Refund,
        amount_fen,
        &format!("job:{job_id}"),
        now_ms,
    )?;
    answer(sql, key, job_id, amount_fen, reason, now_ms, false)
}

/// The refund made earlier under `key` in this account, and when.
fn earlier_refund(sql: &SqlStorage, key: &str) -> ApiResult<Option<(EarlierRefund, i64)>> {
    #[derive(Deserialize)]
    struct Earlier {
        job_id: String,
        amount_fen: i64,
        reason: String,
        created_at: i64,
    }
    let earlier: Vec<Earlier> = sql
        .exec(
            "SELECT job_id, amount_fen, reason, created_at FROM refunds WHERE key = ?",
            vec![key.into()],
        )
        .and_then(|c| c.to_array())
        .map_err(sql_err)?;
    Ok(earlier.into_iter().next().map(|e| {
        let at = e.created_at;
        (
            EarlierRefund {
                job_id: e.job_id,
                amount_fen: e.amount_fen,
                reason: e.reason,
            },
            at,
        )
    }))
}

fn refunded_fen(sql: &SqlStorage, job_id: &str) -> ApiResult<i64> {
    #[derive(Deserialize)]
    struct Sum {
        total: Option<i64>,
    }
    let row: Sum = sql
        .exec(
            "SELECT SUM(amount_fen) AS total FROM refunds WHERE job_id = ?",
            vec![job_id.into()],
        )
        .and_then(|c| c.one())
        .map_err(sql_err)?;
    Ok(row.total.unwrap_or(0))
}

fn answer(
    sql: &SqlStorage,
    key: &str,
    job_id: &str,
    amount_fen: i64,
    reason: &str,
    created_at: i64,
    replayed: bool,
) -> ApiResult<RefundAnswer> {
    #[derive(Deserialize)]
    struct Hold {
        user_id: String,
        captured_fen: Option<i64>,
    }
    let hold: Hold = sql
        .exec(
            "SELECT user_id, captured_fen FROM holds WHERE job_id = ?",
            vec![job_id.into()],
        )
        .and_then(|c| c.one())
        .map_err(sql_err)?;
    let refunded = refunded_fen(sql, job_id)?;
    let captured = hold.captured_fen.unwrap_or(0);
    Ok(RefundAnswer {
        refund: api::Refund {
            key: key.to_string(),
            job_id: job_id.to_string(),
            amount_fen,
            reason: reason.to_string(),
            time: crate::time::format_rfc3339_ms(created_at),
        },
        replayed,
        captured_fen: captured,
        refunded_fen: refunded,
        refundable_fen: (captured - refunded).max(0),
        balance_fen: balance(sql, &hold.user_id)?,
    })
}
