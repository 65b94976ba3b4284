//! `GET /api/health`, public: the edge answers, with its version, and touches nothing (a probe
//! any visitor can repeat must not write storage or call backends). `GET /api/admin/health`,
//! with the admin token: a real round trip through each storage binding and the reachability of
//! every configured backend.

use super::access::Admin;
use super::http::{self, ApiResult, respond};
use crate::backends::config::{self, BackendConfig, BackendKind};
use crate::health::{BackendHealth, Bindings, Check, HealthReport};
use futures_util::future::join_all;
use std::time::Duration;
use worker::{Env, Response};

/// The public liveness answer.
pub fn live() -> api::Liveness {
    api::Liveness {
        ok: true,
        service: "onramp-edge".into(),
        version: crate::VERSION.into(),
    }
}

/// The deep check, for operators.
pub async fn deep(_: Admin, env: &Env) -> ApiResult<Response> {
    let bindings = Bindings {
        d1: Check::from_result(bounded(env, "D1", check_d1(env)).await),
        kv: Check::from_result(bounded(env, "KV", check_kv(env)).await),
        durable_object: Check::from_result(check_durable_object(env).await),
    };
    let configured = config::parse_with(
        env.var("BACKENDS").ok().map(|v| v.to_string()).as_deref(),
        super::http::require_tls(env),
    );
    let backends = match configured {
        Ok(list) => join_all(list.iter().map(|b| check_backend(env, b))).await,
        Err(e) => vec![BackendHealth {
            name: "BACKENDS".into(),
            kind: BackendKind::Runner,
            reachable: false,
            detail: e,
        }],
    };
    let ok = bindings.d1.ok && bindings.kv.ok && bindings.durable_object.ok;
    let report = HealthReport {
        ok,
        service: "onramp-edge".into(),
        version: crate::VERSION.into(),
        bindings,
        backends,
    };
    respond(if ok { 200 } else { 503 }, Ok(report)).map_err(http::internal("response"))
}

/// A probe under the storage deadline (`deadline.rs`): one that hangs is reported as failed.
async fn bounded(
    env: &Env,
    what: &str,
    probe: impl std::future::Future<Output = Result<String, String>>,
) -> Result<String, String> {
    let limit = super::db::store_limit(env);
    let probe = async { Ok(probe.await) };
    super::deadline::within(what, limit, probe)
        .await
        .unwrap_or_else(|e| Err(e.message))
}

async fn check_d1(env: &Env) -> Result<String, String> {
    let db = env.d1("DB").map_err(|e| format!("binding DB: {e}"))?;
    #[derive(serde::Deserialize)]
    struct Row {
        migrations: i64,
    }
    // The migrations table proves both that D1 answers and that `wrangler d1 migrations apply`
    // ran; a missing table is reported as such.
    let row: Option<Row> = db
        .prepare("SELECT COUNT(*) AS migrations FROM d1_migrations")
        .first(None)
        .await
        .map_err(|e| format!("D1 query failed (were migrations applied?): {e}"))?;
    let n = row.map_or(0, |r| r.migrations);
    Ok(format!("{n} migrations applied"))
}

async fn check_kv(env: &Env) -> Result<String, String> {
    let kv = env.kv("KV").map_err(|e| format!("binding KV: {e}"))?;
    let stamp = format!("{}", worker::Date::now().as_millis());
    kv.put("health:probe", &stamp)
        .map_err(|e| format!("KV put: {e}"))?
        .execute()
        .await
        .map_err(|e| format!("KV put: {e}"))?;
    let back = kv
        .get("health:probe")
        .text()
        .await
        .map_err(|e| format!("KV get: {e}"))?;
    // Another probe may have written in between; any value written by a probe proves the round trip.
    match back {
        Some(_) => Ok("write and read back".into()),
        None => Err("KV read back nothing after a write".into()),
    }
}

async fn check_durable_object(env: &Env) -> Result<String, String> {
    let probed: crate::coordinator::Probed =
        super::coordinator::call(env, &crate::coordinator::Op::Probe)
            .await
            .map_err(|e| format!("Durable Object: {}", e.message))?;
    Ok(format!(
        "SQLite storage answered, probe count {}",
        probed.hits
    ))
}

async fn check_backend(env: &Env, backend: &BackendConfig) -> BackendHealth {
    let result = probe_backend(env, backend).await;
    BackendHealth {
        name: backend.name.clone(),
        kind: backend.kind,
        reachable: result.is_ok(),
        detail: result.unwrap_or_else(|e| e),
    }
}

async fn probe_backend(env: &Env, backend: &BackendConfig) -> Result<String, String> {
    let adapter = super::backends::adapter(env, backend)
        .await
        .map_err(|e| e.message)?;
    match super::backends::send(&adapter.health(), Duration::from_secs(3)).await {
        Ok((200, body)) => Ok(summarise(&String::from_utf8_lossy(&body))),
        Ok((status, _)) => Err(format!("answered HTTP {status}")),
        Err(crate::backends::adapter::BackendError::Unavailable(why)) => Err(why),
        Err(other) => Err(format!("{other:?}")),
    }
}

/// A one-line description of a runner's health answer, e.g. "onramp-runner 0.1.0, 2 CPUs, jobs
/// in its sandbox".
fn summarise(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    match (v["service"].as_str(), v["version"].as_str()) {
        (Some(s), Some(ver)) => {
            let sandbox = match v["sandbox"].as_bool() {
                Some(true) => ", jobs in its sandbox",
                Some(false) => ", jobs WITHOUT a sandbox (they run as the runner's user)",
                None => "",
            };
            format!(
                "{s} {ver}, {} CPUs{sandbox}",
                v["resources"]["cpus"].as_u64().unwrap_or(0)
            )
        }
        _ => "answered".into(),
    }
}
