//! `Coordinator`, the SQLite-backed Durable Object class that serialises money and limits. There
//! are many objects of it, one per thing that needs serialising ([`crate::coordinator::Object`]):
//! each account's balance, ledger, holds and refunds (`account.rs`, `refunds.rs`), each promotion
//! code's counter and claims (`code.rs`), each rate-limit or login key (`limit.rs`), the trial
//! grant's mailboxes and hourly cap (`trials.rs`), and the health probe. No object is shared
//! by every request, so the whole scales with accounts and codes, not with one object's limit.
//!
//! The guarantee relied on: a Durable Object runs one event at a time on one thread, and its
//! SQLite calls are synchronous, so an operation that reads and then writes with no `await` in
//! between cannot interleave with another operation on the same object. Every operation parses
//! its input first (the only `await`), then does all of its reads and writes synchronously inside
//! the storage's `transactionSync`: a statement that fails half-way rolls back the whole
//! operation (tests/tests/edge_credits.rs makes one fail on purpose). An operation that crosses
//! two objects — a redemption (code, then account) and the trial (trials, then account) — is
//! two such steps whose second is idempotent, so a failure between them is completed by a retry
//! (see `worker/credits.rs`), and a redemption also by its code's own sweep (an alarm, the one `alarm`
//! of this class). The race tests in tests/tests/edge_credits.rs fire 200 parallel redemptions,
//! and others there stop both kinds of crossing half-way.

use super::storage::{answer, sql_err};
use super::{account, code, limit, refunds, trials};
use crate::coordinator::{ObjectKind, Op, Outcome, Probed};
use crate::error::ApiError;
use crate::worker::http::ApiResult;
use serde::Deserialize;
use serde_json::Value;
use std::cell::Cell;
use worker::{DurableObject, Env, Request, Response, SqlStorage, State, durable_object};

#[durable_object]
pub struct Coordinator {
    state: State,
    ready: Cell<bool>,
    /// A test's failpoint (`FAULT_INJECT_OP`, never set in a deployment): the named operation
    /// ends with a failing statement after all of its writes, to show that none of them remain.
    fault_op: Option<String>,
    /// A test's failpoint (`FAULT_STALL_OP`, never set in a deployment): the named operation
    /// waits `FAULT_STALL_S` (a minute unless set) before it runs, as a store that does not
    /// answer would, to show that the edge answers within its deadline all the same
    /// (`worker/deadline.rs`) and copes with the operation taking effect after that.
    stall_op: Option<(String, u64)>,
    /// For a code's object, which calls accounts' objects from its sweep (`code.rs`).
    env: Env,
    /// A code's object set its sweep's alarm since it was last started: later claims need not
    /// ask storage again (a new start asks once more, which at worst moves the alarm later).
    sweep_armed: Cell<bool>,
}

/// Each kind of object's tables; an object creates those of the first operation it runs (an
/// object only ever runs operations of its own kind, [`Op::object`]).
fn schema(kind: ObjectKind) -> &'static [&'static str] {
    match kind {
        ObjectKind::Account => account::SCHEMA,
        ObjectKind::Code => code::SCHEMA,
        ObjectKind::Limit => limit::SCHEMA,
        ObjectKind::Trials => trials::SCHEMA,
        ObjectKind::Health => {
            &["CREATE TABLE IF NOT EXISTS probe (id INTEGER PRIMARY KEY, hits INTEGER NOT NULL)"]
        }
    }
}

impl DurableObject for Coordinator {
    fn new(state: State, env: Env) -> Self {
        let set = |v: Option<worker::Var>| v.map(|v| v.to_string()).filter(|v| !v.is_empty());
        let fault_op = set(env.var("FAULT_INJECT_OP").ok());
        let stall_s = set(env.var("FAULT_STALL_S").ok()).and_then(|s| s.trim().parse().ok());
        let stall_op = set(env.var("FAULT_STALL_OP").ok()).map(|op| (op, stall_s.unwrap_or(60)));
        Self {
            state,
            ready: Cell::new(false),
            fault_op,
            stall_op,
            env,
            sweep_armed: Cell::new(false),
        }
    }

    async fn fetch(&self, mut req: Request) -> worker::Result<Response> {
        let op: Result<Op, _> = req.json().await;
        if let Ok(op) = &op
            && let Some((stalled, seconds)) = &self.stall_op
            && stalled == op.name()
        {
            worker::Delay::from(std::time::Duration::from_secs(*seconds)).await;
        }
        let claim = matches!(op, Ok(Op::ClaimCode { .. }));
        // From here on nothing awaits: the whole operation is one synchronous step.
        let result = match op {
            Ok(op) => self
                .sql(op.object().kind())
                .and_then(|sql| in_transaction(&self.state, sql, op, self.fault_op.clone())),
            Err(e) => Err(ApiError::internal(format!(
                "coordinator: bad operation: {e}"
            ))),
        };
        if claim && !self.sweep_armed.get() {
            // After the answer is decided: the sweep is a safety net, never the claim's outcome.
            let armed = match self.sql(ObjectKind::Code) {
                Ok(sql) => code::arm_sweep(&self.state, &self.env, &sql).await,
                Err(e) => Err(e),
            };
            match armed {
                Ok(set) => self.sweep_armed.set(set),
                Err(e) => worker::console_error!("code object: arming the sweep: {}", e.message),
            }
        }
        Response::from_json(&Outcome::of(result))
    }

    /// Only a code's object sets an alarm: its sweep of claims whose credit never arrived.
    async fn alarm(&self) -> worker::Result<Response> {
        let swept = match self.sql(ObjectKind::Code) {
            Ok(sql) => code::sweep(&self.state, &self.env, &sql).await,
            Err(e) => Err(e),
        };
        match swept {
            Ok(again) => self.sweep_armed.set(again),
            Err(e) => {
                // Whatever failed, the next claim asks storage whether an alarm is set.
                self.sweep_armed.set(false);
                worker::console_error!("code object: sweep: {}", e.message);
            }
        }
        Response::ok("swept")
    }
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
    let name = op.name();
    let slot: Rc<RefCell<Option<ApiResult<Value>>>> = Rc::default();
    let out = slot.clone();
    let body = Closure::once(move || -> Result<JsValue, JsValue> {
        let mut result = apply(&sql, op);
        if result.is_ok() && fault_op.as_deref() == Some(name) {
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
    fn sql(&self, kind: ObjectKind) -> ApiResult<SqlStorage> {
        let sql = self.state.storage().sql();
        if !self.ready.get() {
            for stmt in schema(kind) {
                sql.exec(stmt, None).map_err(sql_err)?;
            }
            self.ready.set(true);
        }
        Ok(sql)
    }
}

/// One operation's reads and writes, all synchronous, by the kind of object it runs in.
fn apply(sql: &SqlStorage, op: Op) -> ApiResult<Value> {
    match op {
        Op::Probe => probe(sql),
        Op::ReserveTrial {
            user_id,
            mailbox,
            cap_per_hour,
            now_ms,
        } => answer(trials::reserve(
            sql,
            &user_id,
            &mailbox,
            cap_per_hour,
            now_ms,
        )?),
        Op::GrantTrial { .. }
        | Op::Balance { .. }
        | Op::Ledger { .. }
        | Op::CreditRedemption { .. }
        | Op::Hold { .. }
        | Op::Settle { .. }
        | Op::Refund { .. } => apply_account(sql, op),
        Op::CreateCode { .. } | Op::ClaimCode { .. } => apply_code(sql, op),
        Op::LoginAttempt { .. } | Op::LoginSucceeded { .. } | Op::Rate { .. } => {
            apply_limit(sql, op)
        }
    }
}

/// An operation that [`apply`] sent to another kind of object than its own.
fn misrouted(op: &Op) -> ApiError {
    ApiError::internal(format!(
        "coordinator: {} is not an operation of this kind of object",
        op.name()
    ))
}

/// The health probe's operation: counts one more hit.
fn probe(sql: &SqlStorage) -> ApiResult<Value> {
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

/// An account's operations (`account.rs`, `refunds.rs`).
fn apply_account(sql: &SqlStorage, op: Op) -> ApiResult<Value> {
    match op {
        Op::GrantTrial {
            user_id,
            amount_fen,
            now_ms,
        } => answer(account::grant_trial(sql, &user_id, amount_fen, now_ms)?),
        Op::Balance { user_id } => answer(crate::coordinator::Balance {
            balance_fen: account::balance(sql, &user_id)?,
        }),
        Op::Ledger { user_id } => answer(account::ledger(sql, &user_id)?),
        Op::CreditRedemption {
            user_id,
            code,
            redemption_id,
            amount_fen,
            now_ms,
        } => answer(account::credit_redemption(
            sql,
            &user_id,
            &code,
            &redemption_id,
            amount_fen,
            now_ms,
        )?),
        Op::Hold {
            user_id,
            job_id,
            amount_fen,
            now_ms,
        } => answer(account::hold(sql, &user_id, &job_id, amount_fen, now_ms)?),
        Op::Settle {
            user_id,
            job_id,
            capture_fen,
            now_ms,
        } => answer(account::settle(
            sql,
            &user_id,
            &job_id,
            capture_fen,
            now_ms,
        )?),
        Op::Refund {
            user_id,
            key,
            job_id,
            amount_fen,
            reason,
            now_ms,
        } => answer(refunds::apply(
            sql,
            refunds::RefundAsk {
                user_id: &user_id,
                key: &key,
                job_id: &job_id,
                amount_fen,
                reason: &reason,
            },
            now_ms,
        )?),
        other => Err(misrouted(&other)),
    }
}

/// A promotion code's operations (`code.rs`).
fn apply_code(sql: &SqlStorage, op: Op) -> ApiResult<Value> {
    match op {
        Op::CreateCode {
            code,
            amount_fen,
            max_redemptions,
            expires_at_ms,
            now_ms,
        } => answer(code::create(
            sql,
            &code,
            amount_fen,
            max_redemptions,
            expires_at_ms,
            now_ms,
        )?),
        Op::ClaimCode {
            code,
            user_id,
            redemption_id,
            now_ms,
        } => answer(code::claim(sql, &code, &user_id, &redemption_id, now_ms)?),
        other => Err(misrouted(&other)),
    }
}

/// A rate-limit or login key's operations (`limit.rs`).
fn apply_limit(sql: &SqlStorage, op: Op) -> ApiResult<Value> {
    match op {
        Op::LoginAttempt { key, now_ms } => answer(limit::login_attempt(sql, &key, now_ms)?),
        Op::LoginSucceeded { key } => answer(limit::login_succeeded(sql, &key)?),
        Op::Rate {
            key,
            limit,
            window_s,
            now_ms,
        } => answer(limit::rate(sql, &key, limit, window_s, now_ms)?),
        other => Err(misrouted(&other)),
    }
}
