//! D1 access with every failure mapped to our error shape and every call under a deadline
//! (`deadline.rs`), plus the clock and randomness.

use super::deadline::within;
use super::http::ApiResult;
use crate::error::ApiError;
use serde::de::DeserializeOwned;
use wasm_bindgen::JsValue;
use worker::{D1Database, Env};

/// A whole-number setting from the environment (`[vars]`), else `default`.
pub fn setting(env: &Env, name: &str, default: i64) -> i64 {
    env.var(name)
        .ok()
        .and_then(|v| v.to_string().trim().parse().ok())
        .unwrap_or(default)
}

/// The longest duration a setting may hold: 100 years, in seconds (a longer one, which could
/// overflow a time in milliseconds, is read as this).
const MAX_SETTING_S: u64 = 100 * 365 * 86_400;

/// A duration setting, written as a spec writes one (`"30d"`, `"12h"`, `"90s"`), in seconds, at
/// most 100 years; `default_s` when it is absent or zero, and when it is unreadable (a bare number
/// has no unit), which the edge's log says.
pub fn duration_setting(env: &Env, name: &str, default_s: u64) -> u64 {
    let Ok(v) = env.var(name) else {
        return default_s;
    };
    let text = v.to_string();
    match jobspec::duration::parse_duration_s(&text) {
        Some(s) if s > 0 => s.min(MAX_SETTING_S),
        Some(_) => default_s,
        None => {
            worker::console_warn!(
                "{name} = {text:?} is not a duration such as \"30d\" or \"12h\"; using {default_s} s"
            );
            default_s
        }
    }
}

/// The time `seconds` before now, in milliseconds since the epoch (a sweep's cutoff).
pub fn ago_ms(seconds: u64) -> i64 {
    let ms = i64::try_from(seconds.saturating_mul(1000)).unwrap_or(i64::MAX);
    now_ms().saturating_sub(ms)
}

/// The default deadline of one database or coordinator call, in seconds (`STORE_TIMEOUT_S`).
pub const STORE_TIMEOUT_S: i64 = 10;

/// The deadline of one call to the database or a coordinator object (`deadline.rs`):
/// `STORE_TIMEOUT_S`, between 1 and 60 s.
pub fn store_limit(env: &Env) -> std::time::Duration {
    let s = setting(env, "STORE_TIMEOUT_S", STORE_TIMEOUT_S).clamp(1, 60);
    std::time::Duration::from_secs(s.unsigned_abs())
}

/// The answer when an account or a job already keeps `limit` of `what`.
pub fn limit_reached(what: &str, limit: i64) -> ApiError {
    ApiError::new(
        crate::error::ErrorCode::LimitReached,
        format!("the limit of {limit} {what} is reached"),
    )
}

pub fn db(env: &Env) -> ApiResult<D1Database> {
    env.d1("DB")
        .map_err(|e| ApiError::internal(format!("binding DB: {e}")))
}

/// What [`within`] names when D1 is late.
pub const DATABASE: &str = "the database";

fn d1_err(sql: &str) -> impl Fn(worker::Error) -> ApiError + '_ {
    move |e| {
        let head: String = sql.chars().take(60).collect();
        ApiError::internal(format!("database error ({head}…): {e}"))
    }
}

pub async fn first<T: DeserializeOwned>(
    env: &Env,
    sql: &str,
    args: &[JsValue],
) -> ApiResult<Option<T>> {
    let statement = db(env)?.prepare(sql).bind(args).map_err(d1_err(sql))?;
    let call = async { statement.first::<T>(None).await.map_err(d1_err(sql)) };
    within(DATABASE, store_limit(env), call).await
}

/// The number a `SELECT SUM(…) AS total …` gives: 0 for no rows, never below 0.
pub async fn total(env: &Env, sql: &str, args: &[JsValue]) -> ApiResult<u64> {
    #[derive(serde::Deserialize)]
    struct Total {
        total: Option<i64>,
    }
    let row = first::<Total>(env, sql, args).await?;
    Ok(row.and_then(|t| t.total).unwrap_or(0).max(0) as u64)
}

pub async fn all<T: DeserializeOwned>(env: &Env, sql: &str, args: &[JsValue]) -> ApiResult<Vec<T>> {
    let statement = db(env)?.prepare(sql).bind(args).map_err(d1_err(sql))?;
    let call = async { statement.all().await.map_err(d1_err(sql)) };
    let result = within(DATABASE, store_limit(env), call).await?;
    result.results::<T>().map_err(d1_err(sql))
}

/// Runs a write and returns how many rows it changed.
pub async fn run(env: &Env, sql: &str, args: &[JsValue]) -> ApiResult<u64> {
    let statement = db(env)?.prepare(sql).bind(args).map_err(d1_err(sql))?;
    let call = async { statement.run().await.map_err(d1_err(sql)) };
    let result = within(DATABASE, store_limit(env), call).await?;
    if let Some(e) = result.error() {
        return Err(ApiError::internal(format!("database error: {e}")));
    }
    Ok(result
        .meta()
        .ok()
        .flatten()
        .and_then(|m| m.changes)
        .map_or(0, |c| c as u64))
}

pub fn s(v: &str) -> JsValue {
    JsValue::from_str(v)
}

/// Integers travel as JS numbers; every integer we store is far inside the exact range.
pub fn n(v: i64) -> JsValue {
    JsValue::from_f64(v as f64)
}

pub fn opt_s(v: Option<&str>) -> JsValue {
    v.map_or(JsValue::NULL, JsValue::from_str)
}

pub fn opt_n(v: Option<i64>) -> JsValue {
    v.map_or(JsValue::NULL, n)
}

pub fn now_ms() -> i64 {
    worker::Date::now().as_millis() as i64
}

/// `len` bytes from the platform's CSPRNG, as lower-case hex.
pub fn random_hex(len: usize) -> ApiResult<String> {
    let mut buf = vec![0u8; len];
    getrandom::fill(&mut buf).map_err(|e| ApiError::internal(format!("no randomness: {e}")))?;
    Ok(hex::encode(buf))
}
