//! `Coordinator`, a SQLite-backed Durable Object that serialises everything about money and
//! limits: the ledger, holds, promotion codes, the trial grant, rate-limit counters and login
//! backoff.
//!
//! The guarantee relied on: a Durable Object runs one event at a time on one thread, and its
//! SQLite calls are synchronous, so an operation that reads and then writes with no `await` in
//! between cannot interleave with another operation. Every operation below parses its input
//! first (the only `await`), then does all of its reads and writes synchronously in `apply`,
//! inside the storage's `transactionSync`: a statement that fails half-way rolls back the whole
//! operation (tests/tests/edge_credits.rs makes one fail on purpose). The race tests in
//! tests/tests/edge_credits.rs fire 200 parallel redemptions to show it.

use super::http::ApiResult;
use crate::coordinator_wire::{Balance, CodeCreated, Counted, Op, Outcome, Probed, Settled};
use crate::error::{ApiError, ErrorCode};
use crate::ledger::{self, CodeState, LedgerKind};
use serde::Deserialize;
use serde_json::Value;
use std::cell::Cell;
use worker::{
    DurableObject, Env, Request, Response, SqlStorage, SqlStorageValue, State, durable_object,
};

#[durable_object]
pub struct Coordinator {
    state: State,
    ready: Cell<bool>,
    /// A test's failpoint (`FAULT_INJECT_OP`, never set in a deployment): the named operation
    /// ends with a failing statement after all of its writes, to show that none of them remain.
    fault_op: Option<String>,
}

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS probe (id INTEGER PRIMARY KEY, hits INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL, \
     kind TEXT NOT NULL, amount_fen INTEGER NOT NULL, reference TEXT NOT NULL, created_at INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS ledger_user ON ledger (user_id, id)",
    "CREATE TABLE IF NOT EXISTS promo_codes (code TEXT PRIMARY KEY, amount_fen INTEGER NOT NULL, \
     max_redemptions INTEGER NOT NULL, redeemed INTEGER NOT NULL DEFAULT 0, expires_at INTEGER, created_at INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS redemptions (code TEXT NOT NULL, user_id TEXT NOT NULL, created_at INTEGER NOT NULL, \
     PRIMARY KEY (code, user_id))",
    "CREATE TABLE IF NOT EXISTS holds (job_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, amount_fen INTEGER NOT NULL, \
     captured_fen INTEGER, settled INTEGER NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS rate (key TEXT PRIMARY KEY, window_start INTEGER NOT NULL, count INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS refunds (key TEXT PRIMARY KEY, job_id TEXT NOT NULL, user_id TEXT NOT NULL, \
     amount_fen INTEGER NOT NULL, reason TEXT NOT NULL, created_at INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS refunds_job ON refunds (job_id)",
    // The trial grant's once-per-account check and hourly cap read the ledger by reference.
    "CREATE INDEX IF NOT EXISTS ledger_reference ON ledger (reference, created_at)",
    "CREATE TABLE IF NOT EXISTS trial_mailboxes (mailbox TEXT PRIMARY KEY, user_id TEXT NOT NULL, \
     created_at INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS login_failures (key TEXT PRIMARY KEY, failures INTEGER NOT NULL, \
     last_ms INTEGER NOT NULL)",
];

impl DurableObject for Coordinator {
    fn new(state: State, env: Env) -> Self {
        let fault_op = env
            .var("FAULT_INJECT_OP")
            .ok()
            .map(|v| v.to_string())
            .filter(|v| !v.is_empty());
        Self {
            state,
            ready: Cell::new(false),
            fault_op,
        }
    }

    async fn fetch(&self, mut req: Request) -> worker::Result<Response> {
        let op: Result<Op, _> = req.json().await;
        // From here on nothing awaits: the whole operation is one synchronous step.
        let result = match op {
            Ok(op) => self
                .sql()
                .and_then(|sql| in_transaction(&self.state, sql, op, self.fault_op.clone())),
            Err(e) => Err(ApiError::internal(format!(
                "coordinator: bad operation: {e}"
            ))),
        };
        Response::from_json(&Outcome::of(result))
    }
}

#[derive(Deserialize)]
struct Sum {
    total: Option<i64>,
}

pub(super) fn sql_err(e: worker::Error) -> ApiError {
    ApiError::internal(format!("coordinator storage: {e}"))
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

pub(super) fn entry(
    sql: &SqlStorage,
    user: &str,
    kind: LedgerKind,
    amount: i64,
    reference: &str,
    now: i64,
) -> ApiResult<()> {
    sql.exec(
        "INSERT INTO ledger (user_id, kind, amount_fen, reference, created_at) VALUES (?, ?, ?, ?, ?)",
        vec![user.into(), kind.as_str().into(), amount.into(), reference.into(), now.into()],
    )
    .map_err(sql_err)?;
    Ok(())
}

/// An operation's answer as the JSON the object sends back.
fn answer<T: serde::Serialize>(value: T) -> ApiResult<Value> {
    serde_json::to_value(value).map_err(|e| ApiError::internal(format!("coordinator answer: {e}")))
}

/// Runs one operation inside the storage's `transactionSync`: its statements are committed
/// together or, when any of them fails, not at all (the object's write coalescing alone would
/// keep the writes before a failing statement).
fn in_transaction(
    state: &State,
    sql: SqlStorage,
    op: Op,
    fault_op: Option<String>,
) -> ApiResult<Value> {
    use std::cell::RefCell;
    use std::rc::Rc;
    use wasm_bindgen::{JsCast, JsValue, closure::Closure};
    let storage = state.storage();
    let raw: &JsValue = storage.as_raw().as_ref();
    let run = js_sys::Reflect::get(raw, &JsValue::from_str("transactionSync"))
        .ok()
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
        .ok_or_else(|| ApiError::internal("coordinator storage has no transactionSync"))?;
    let name = serde_json::to_value(&op)
        .ok()
        .and_then(|v| v["op"].as_str().map(String::from))
        .unwrap_or_default();
    let slot: Rc<RefCell<Option<ApiResult<Value>>>> = Rc::default();
    let out = slot.clone();
    let body = Closure::once(move || -> Result<JsValue, JsValue> {
        let mut result = apply(&sql, op);
        if result.is_ok() && fault_op.as_deref() == Some(name.as_str()) {
            result = sql
                .exec("INSERT INTO fault_injected_no_such_table VALUES (1)", None)
                .map(|_| Value::Null)
                .map_err(sql_err);
        }
        let failed = result.is_err();
        *out.borrow_mut() = Some(result);
        if failed {
            // Throwing is what makes transactionSync roll the operation back.
            Err(JsValue::from_str(
                "coordinator operation failed: rolled back",
            ))
        } else {
            Ok(JsValue::UNDEFINED)
        }
    });
    let thrown = run.call1(raw, body.as_ref().unchecked_ref()).err();
    let result = slot.borrow_mut().take();
    match (result, thrown) {
        (Some(r), _) => r,
        (None, e) => Err(ApiError::internal(format!(
            "coordinator: the transaction did not run: {e:?}"
        ))),
    }
}

impl Coordinator {
    fn sql(&self) -> ApiResult<SqlStorage> {
        let sql = self.state.storage().sql();
        if !self.ready.get() {
            for stmt in SCHEMA {
                sql.exec(stmt, None).map_err(sql_err)?;
            }
            self.ready.set(true);
        }
        Ok(sql)
    }
}

/// One operation's reads and writes, all synchronous.
fn apply(sql: &SqlStorage, op: Op) -> ApiResult<Value> {
    {
        match op {
            Op::Probe => {
                sql.exec(
                    "INSERT INTO probe (id, hits) VALUES (1, 1) ON CONFLICT(id) DO UPDATE SET hits = hits + 1",
                    None,
                )
                .map_err(sql_err)?;
                #[derive(Deserialize)]
                struct Row {
                    hits: i64,
                }
                let row: Row = sql
                    .exec("SELECT hits FROM probe WHERE id = 1", None)
                    .and_then(|c| c.one())
                    .map_err(sql_err)?;
                answer(Probed { hits: row.hits })
            }
            Op::GrantTrial {
                user_id,
                mailbox,
                amount_fen,
                cap_per_hour,
                now_ms,
            } => answer(super::verify::apply_grant_trial(
                sql,
                super::verify::TrialAsk {
                    user_id: &user_id,
                    mailbox: &mailbox,
                    amount_fen,
                    cap_per_hour,
                },
                now_ms,
            )?),
            Op::LoginAttempt { key, now_ms } => {
                #[derive(Deserialize)]
                struct Row {
                    failures: i64,
                    last_ms: i64,
                }
                let rows: Vec<Row> = sql
                    .exec(
                        "SELECT failures, last_ms FROM login_failures WHERE key = ?",
                        vec![key.as_str().into()],
                    )
                    .and_then(|c| c.to_array())
                    .map_err(sql_err)?;
                let (failures, last) = crate::limits::login_attempt(
                    rows.first().map(|r| (r.failures, r.last_ms)),
                    now_ms,
                )?;
                sql.exec(
                    "INSERT INTO login_failures (key, failures, last_ms) VALUES (?, ?, ?) \
                     ON CONFLICT(key) DO UPDATE SET failures = excluded.failures, last_ms = excluded.last_ms",
                    vec![key.as_str().into(), failures.into(), last.into()],
                )
                .map_err(sql_err)?;
                answer(Counted { count: failures })
            }
            Op::LoginSucceeded { key } => {
                sql.exec(
                    "DELETE FROM login_failures WHERE key = ?",
                    vec![key.as_str().into()],
                )
                .map_err(sql_err)?;
                answer(Counted { count: 0 })
            }
            Op::Balance { user_id } => answer(Balance {
                balance_fen: balance(sql, &user_id)?,
            }),
            Op::Ledger { user_id } => {
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
                        vec![user_id.as_str().into()],
                    )
                    .and_then(|c| c.to_array())
                    .map_err(sql_err)?;
                let entries = rows
                    .into_iter()
                    .map(|r| api::LedgerEntry {
                        id: r.id,
                        // Only this object writes the ledger, with `LedgerKind::as_str`.
                        kind: LedgerKind::parse(&r.kind).unwrap_or(LedgerKind::Grant),
                        amount_fen: r.amount_fen,
                        reference: r.reference,
                        time: crate::time::format_rfc3339_ms(r.created_at),
                    })
                    .collect();
                answer(api::Ledger {
                    balance_fen: balance(sql, &user_id)?,
                    entries,
                })
            }
            Op::CreateCode {
                code,
                amount_fen,
                max_redemptions,
                expires_at_ms,
                now_ms,
            } => {
                #[derive(Deserialize)]
                struct Exists {
                    n: i64,
                }
                let e: Exists = sql
                    .exec(
                        "SELECT COUNT(*) AS n FROM promo_codes WHERE code = ?",
                        vec![code.as_str().into()],
                    )
                    .and_then(|c| c.one())
                    .map_err(sql_err)?;
                if e.n > 0 {
                    return Err(ApiError::new(
                        ErrorCode::CodeExists,
                        format!("promotion code {code} already exists"),
                    ));
                }
                sql.exec(
                    "INSERT INTO promo_codes (code, amount_fen, max_redemptions, redeemed, expires_at, created_at) VALUES (?, ?, ?, 0, ?, ?)",
                    vec![
                        code.as_str().into(),
                        amount_fen.into(),
                        max_redemptions.into(),
                        expires_at_ms.map_or(SqlStorageValue::Null, SqlStorageValue::from),
                        now_ms.into(),
                    ],
                )
                .map_err(sql_err)?;
                answer(CodeCreated { code })
            }
            Op::Redeem {
                user_id,
                code,
                now_ms,
            } => {
                #[derive(Deserialize)]
                struct Code {
                    amount_fen: i64,
                    max_redemptions: i64,
                    redeemed: i64,
                    expires_at: Option<i64>,
                    mine: i64,
                }
                let found: Vec<Code> = sql
                    .exec(
                        "SELECT amount_fen, max_redemptions, redeemed, expires_at, \
                         (SELECT COUNT(*) FROM redemptions r WHERE r.code = p.code AND r.user_id = ?) AS mine \
                         FROM promo_codes p WHERE code = ?",
                        vec![user_id.as_str().into(), code.as_str().into()],
                    )
                    .and_then(|c| c.to_array())
                    .map_err(sql_err)?;
                let found = found.into_iter().next();
                ledger::check_redeem(
                    found.as_ref().map(|c| CodeState {
                        max_redemptions: c.max_redemptions,
                        redeemed: c.redeemed,
                        expires_at_ms: c.expires_at,
                        already_by_account: c.mine > 0,
                    }),
                    now_ms,
                )?;
                let amount = found.map_or(0, |c| c.amount_fen);
                sql.exec(
                    "INSERT INTO redemptions (code, user_id, created_at) VALUES (?, ?, ?)",
                    vec![code.as_str().into(), user_id.as_str().into(), now_ms.into()],
                )
                .map_err(sql_err)?;
                sql.exec(
                    "UPDATE promo_codes SET redeemed = redeemed + 1 WHERE code = ?",
                    vec![code.as_str().into()],
                )
                .map_err(sql_err)?;
                entry(
                    sql,
                    &user_id,
                    LedgerKind::Redeem,
                    amount,
                    &format!("code:{code}"),
                    now_ms,
                )?;
                answer(api::Redeemed {
                    amount_fen: amount,
                    balance_fen: balance(sql, &user_id)?,
                })
            }
            Op::Hold {
                user_id,
                job_id,
                amount_fen,
                now_ms,
            } => {
                let have = balance(sql, &user_id)?;
                ledger::check_hold(have, amount_fen)?;
                sql.exec(
                    "INSERT INTO holds (job_id, user_id, amount_fen, settled) VALUES (?, ?, ?, 0)",
                    vec![
                        job_id.as_str().into(),
                        user_id.as_str().into(),
                        amount_fen.into(),
                    ],
                )
                .map_err(sql_err)?;
                entry(
                    sql,
                    &user_id,
                    LedgerKind::Hold,
                    -amount_fen,
                    &format!("job:{job_id}"),
                    now_ms,
                )?;
                answer(Balance {
                    balance_fen: have - amount_fen,
                })
            }
            Op::Settle {
                job_id,
                capture_fen,
                now_ms,
            } => {
                #[derive(Deserialize)]
                struct Hold {
                    user_id: String,
                    amount_fen: i64,
                    settled: i64,
                    captured_fen: Option<i64>,
                }
                let holds: Vec<Hold> = sql
                    .exec("SELECT user_id, amount_fen, settled, captured_fen FROM holds WHERE job_id = ?", vec![job_id.as_str().into()])
                    .and_then(|c| c.to_array())
                    .map_err(sql_err)?;
                let Some(h) = holds.into_iter().next() else {
                    return Err(ApiError::not_found(format!("no hold for job {job_id}")));
                };
                let capture = match ledger::settle_hold(
                    ledger::HoldState {
                        amount_fen: h.amount_fen,
                        settled: h.settled != 0,
                        captured_fen: h.captured_fen,
                    },
                    capture_fen,
                ) {
                    ledger::Settlement::Already { captured_fen } => {
                        return answer(Settled {
                            captured_fen,
                            already: true,
                        });
                    }
                    ledger::Settlement::Capture { capture_fen } => capture_fen,
                };
                let reference = format!("job:{job_id}");
                sql.exec(
                    "UPDATE holds SET settled = 1, captured_fen = ? WHERE job_id = ?",
                    vec![capture.into(), job_id.as_str().into()],
                )
                .map_err(sql_err)?;
                entry(
                    sql,
                    &h.user_id,
                    LedgerKind::Release,
                    h.amount_fen,
                    &reference,
                    now_ms,
                )?;
                if capture > 0 {
                    entry(
                        sql,
                        &h.user_id,
                        LedgerKind::Capture,
                        -capture,
                        &reference,
                        now_ms,
                    )?;
                }
                answer(Settled {
                    captured_fen: capture,
                    already: false,
                })
            }
            Op::Rate {
                key,
                limit,
                window_s,
                now_ms,
            } => {
                #[derive(Deserialize)]
                struct Row {
                    window_start: i64,
                    count: i64,
                }
                let rows: Vec<Row> = sql
                    .exec(
                        "SELECT window_start, count FROM rate WHERE key = ?",
                        vec![key.as_str().into()],
                    )
                    .and_then(|c| c.to_array())
                    .map_err(sql_err)?;
                let (start, count) = ledger::rate_window(
                    rows.first().map(|r| (r.window_start, r.count)),
                    limit,
                    window_s,
                    now_ms,
                )?;
                sql.exec(
                    "INSERT INTO rate (key, window_start, count) VALUES (?, ?, ?) \
                     ON CONFLICT(key) DO UPDATE SET window_start = excluded.window_start, count = excluded.count",
                    vec![key.as_str().into(), start.into(), count.into()],
                )
                .map_err(sql_err)?;
                answer(Counted { count })
            }
            Op::Refund {
                key,
                job_id,
                amount_fen,
                reason,
                now_ms,
            } => answer(super::refunds::apply(
                sql, &key, &job_id, amount_fen, &reason, now_ms,
            )?),
        }
    }
}

/// Sends one operation to the named Coordinator instance and returns its typed answer.
pub async fn call<T: serde::de::DeserializeOwned>(
    env: &Env,
    instance: &str,
    op: &Op,
) -> ApiResult<T> {
    let ns = env
        .durable_object("COORDINATOR")
        .map_err(|e| ApiError::internal(format!("binding COORDINATOR: {e}")))?;
    let stub = ns
        .id_from_name(instance)
        .and_then(|id| id.get_stub())
        .map_err(|e| ApiError::internal(format!("Durable Object stub: {e}")))?;
    let body = serde_json::to_string(op).map_err(crate::coordinator_wire::unreadable)?;
    let mut init = worker::RequestInit::new();
    init.with_method(worker::Method::Post)
        .with_body(Some(body.into()));
    let req = Request::new_with_init("https://coordinator/op", &init)
        .map_err(|e| ApiError::internal(format!("coordinator request: {e}")))?;
    let mut resp = stub
        .fetch_with_request(req)
        .await
        .map_err(|e| ApiError::internal(format!("coordinator: {e}")))?;
    let outcome: Outcome = resp
        .json()
        .await
        .map_err(crate::coordinator_wire::unreadable)?;
    outcome.into_result()
}

/// The single instance that owns the ledger and the promotion codes.
pub const LEDGER: &str = "ledger";
/// A separate instance for rate-limit counters, so login bursts do not queue behind money.
pub const RATE: &str = "rate";

/// Counts one attempt against `key`; 429 with `retry_after_s` once `limit` is reached in the window.
pub async fn rate_limit(env: &Env, key: &str, limit: i64, window_s: i64) -> ApiResult<()> {
    let op = Op::Rate {
        key: key.to_string(),
        limit,
        window_s,
        now_ms: super::db::now_ms(),
    };
    call::<Counted>(env, RATE, &op).await.map(|_| ())
}
