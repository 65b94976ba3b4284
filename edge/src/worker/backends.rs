//! Performing the HTTP calls that adapters build, with a deadline: the only place the edge
//! talks to backends, and only to hosts named in `BACKENDS`.

use super::db::now_ms;
use super::http::ApiResult;
use crate::backends::adapter::{Backend, BackendError, HttpCall};
use crate::backends::config::{BackendConfig, BackendKind};
use crate::backends::slurm::{self, ApiVersion, SlurmBackend};
use crate::error::{ApiError, ErrorCode};
use futures_util::future::{Either, select};
use std::time::Duration;
use worker::{Delay, Env, Fetch, Headers, Method, Request, RequestInit};

pub fn configured(env: &Env) -> ApiResult<Vec<BackendConfig>> {
    let text = env.var("BACKENDS").ok().map(|v| v.to_string());
    crate::backends::config::parse_with(text.as_deref(), super::http::require_tls(env))
        .map_err(ApiError::internal)
}

pub fn named(env: &Env, name: &str) -> ApiResult<BackendConfig> {
    configured(env)?
        .into_iter()
        .find(|b| b.name == name)
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::BackendUnavailable,
                format!("backend {name} is no longer configured"),
            )
        })
}

/// The adapter of a configured backend, with the clock read now (a Slurm backend configured
/// with its key mints its tokens from it) and, for a Slurm backend that names no data parser,
/// the one its slurmrestd serves ([`slurm_api_version`]).
pub async fn adapter(env: &Env, config: &BackendConfig) -> ApiResult<Box<dyn Backend>> {
    let mut config = config.clone();
    if config.kind == BackendKind::Slurm && config.api_version.is_none() {
        config.api_version = Some(slurm_api_version(env, &config).await?);
    }
    crate::backends::adapter_for(&config, now_ms())
}

/// How long a discovered data parser is remembered (a cluster upgrade is seen within this).
const API_VERSION_TTL_S: u64 = 3600;

/// The newest data parser a Slurm backend's slurmrestd serves, from its `/openapi/v3`, kept in
/// KV for an hour per backend name and URL.
async fn slurm_api_version(env: &Env, config: &BackendConfig) -> ApiResult<String> {
    let key = format!("slurm-api-version:{}:{}", config.name, config.url);
    let kv = env
        .kv("KV")
        .map_err(|e| ApiError::internal(format!("binding KV: {e}")))?;
    if let Ok(Some(v)) = kv.get(&key).text().await
        && ApiVersion::parse(&v).is_ok()
    {
        return Ok(v);
    }
    let unavailable = |why: String| {
        ApiError::new(
            ErrorCode::BackendUnavailable,
            format!(
                "backend {}: cannot learn slurmrestd's data parser ({why}); name it as api_version in BACKENDS",
                config.name
            ),
        )
    };
    let call = SlurmBackend::openapi_call(config, now_ms()).map_err(ApiError::internal)?;
    let (status, body) = send(&call, timeout(env))
        .await
        .map_err(|e| unavailable(format!("{e:?}")))?;
    if status != 200 {
        return Err(unavailable(format!("/openapi/v3 answered HTTP {status}")));
    }
    let doc: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|e| unavailable(format!("/openapi/v3 is not JSON: {e}")))?;
    let version = slurm::newest_served(&doc)
        .map_err(unavailable)?
        .as_str()
        .to_string();
    // Remembering is an optimisation: a failed write only means asking again next time.
    if let Ok(put) = kv.put(&key, &version) {
        let _ = put.expiration_ttl(API_VERSION_TTL_S).execute().await;
    }
    Ok(version)
}

/// Sends a call; any failure to get an answer within `timeout` is `Unavailable`.
pub async fn send(call: &HttpCall, timeout: Duration) -> Result<(u16, Vec<u8>), BackendError> {
    let req = request(call)?;
    let work = async move {
        let mut resp = Fetch::Request(req).send().await?;
        let status = resp.status_code();
        let bytes = resp.bytes().await?;
        Ok::<_, worker::Error>((status, bytes))
    };
    within(work, timeout).await
}

/// Sends a call and gives its answer with the body unread, for a body too large to hold (a
/// checkpoint streamed on to the client): `timeout` bounds the wait for the answer's head only.
pub async fn open(call: &HttpCall, timeout: Duration) -> Result<worker::Response, BackendError> {
    let req = request(call)?;
    within(Fetch::Request(req).send(), timeout).await
}

/// `call` as a request.
fn request(call: &HttpCall) -> Result<Request, BackendError> {
    let unavailable = |e: worker::Error| BackendError::Unavailable(e.to_string());
    let headers = Headers::new();
    for (k, v) in &call.headers {
        headers.set(k, v).map_err(unavailable)?;
    }
    let method = match call.method {
        "POST" => Method::Post,
        "DELETE" => Method::Delete,
        "PUT" => Method::Put,
        _ => Method::Get,
    };
    let mut init = RequestInit::new();
    init.with_method(method).with_headers(headers);
    if let Some(body) = &call.body {
        init.with_body(Some(body.as_str().into()));
    }
    Request::new_with_init(&call.url, &init).map_err(unavailable)
}

/// `work`'s answer, or `NoAnswer` when it takes longer than `timeout`.
async fn within<T>(
    work: impl std::future::Future<Output = worker::Result<T>>,
    timeout: Duration,
) -> Result<T, BackendError> {
    let timer = Delay::from(timeout);
    futures_util::pin_mut!(work);
    futures_util::pin_mut!(timer);
    match select(work, timer).await {
        Either::Left((Ok(answer), _)) => Ok(answer),
        Either::Left((Err(e), _)) => Err(BackendError::Unavailable(format!("unreachable: {e}"))),
        Either::Right(_) => Err(BackendError::NoAnswer(format!(
            "no answer within {} s",
            timeout.as_secs_f64()
        ))),
    }
}

/// How long the edge waits for a backend's answer when `BACKEND_TIMEOUT_S` says nothing.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// How long the edge waits for a backend's answer: `BACKEND_TIMEOUT_S` (seconds, fractions
/// allowed, at most 60), else [`TIMEOUT`].
pub fn timeout(env: &Env) -> Duration {
    env.var("BACKEND_TIMEOUT_S")
        .ok()
        .and_then(|v| v.to_string().trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(TIMEOUT, |s| Duration::from_secs_f64(s.min(60.0)))
}
