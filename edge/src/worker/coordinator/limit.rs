//! One limit key's `Coordinator` object: a fixed rate window (`Rate`) or one (email, client)'s
//! login backoff (`LoginAttempt`, `LoginSucceeded`). A key per object, so a burst against one
//! email or one address queues only behind itself. The rules are `limits::rate_window` and
//! `limits::login_attempt`.

use super::storage::sql_err;
use crate::coordinator::Counted;
use crate::worker::http::ApiResult;
use serde::Deserialize;
use worker::SqlStorage;

pub const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS rate (key TEXT PRIMARY KEY, window_start INTEGER NOT NULL, count INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS login_failures (key TEXT PRIMARY KEY, failures INTEGER NOT NULL, \
     last_ms INTEGER NOT NULL)",
];

pub(super) fn rate(
    sql: &SqlStorage,
    key: &str,
    limit: i64,
    window_s: i64,
    now_ms: i64,
) -> ApiResult<Counted> {
    #[derive(Deserialize)]
    struct Row {
        window_start: i64,
        count: i64,
    }
    let rows: Vec<Row> = sql
        .exec(
            "SELECT window_start, count FROM rate WHERE key = ?",
            vec![key.into()],
        )
        .and_then(|c| c.to_array())
        .map_err(sql_err)?;
    let (start, count) = crate::limits::rate_window(
        rows.first().map(|r| (r.window_start, r.count)),
        limit,
        window_s,
        now_ms,
    )?;
    sql.exec(
        "INSERT INTO rate (key, window_start, count) VALUES (?, ?, ?) \
         ON CONFLICT(key) DO UPDATE SET window_start = excluded.window_start, count = excluded.count",
        vec![key.into(), start.into(), count.into()],
    )
    .map_err(sql_err)?;
    Ok(Counted { count })
}

pub(super) fn login_attempt(sql: &SqlStorage, key: &str, now_ms: i64) -> ApiResult<Counted> {
    #[derive(Deserialize)]
    struct Row {
        failures: i64,
        last_ms: i64,
    }
    let rows: Vec<Row> = sql
        .exec(
            "SELECT failures, last_ms FROM login_failures WHERE key = ?",
            vec![key.into()],
        )
        .and_then(|c| c.to_array())
        .map_err(sql_err)?;
    let (failures, last) =
        crate::limits::login_attempt(rows.first().map(|r| (r.failures, r.last_ms)), now_ms)?;
    sql.exec(
        "INSERT INTO login_failures (key, failures, last_ms) VALUES (?, ?, ?) \
         ON CONFLICT(key) DO UPDATE SET failures = excluded.failures, last_ms = excluded.last_ms",
        vec![key.into(), failures.into(), last.into()],
    )
    .map_err(sql_err)?;
    Ok(Counted { count: failures })
}

pub(super) fn login_succeeded(sql: &SqlStorage, key: &str) -> ApiResult<Counted> {
    sql.exec("DELETE FROM login_failures WHERE key = ?", vec![key.into()])
        .map_err(sql_err)?;
    Ok(Counted { count: 0 })
}
