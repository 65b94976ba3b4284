//! The runner's HTTP API.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use std::sync::Arc;

/// Shared state of the HTTP handlers.
pub struct AppState {
    pub secret: String,
}

/// What `GET /health` reports: the runner's identity and the resources it can offer.
#[derive(Debug, Serialize)]
pub struct Health {
    pub ok: bool,
    pub service: &'static str,
    pub version: &'static str,
    pub resources: Resources,
}

/// Resources this runner offers to jobs. This machine has no GPUs, so only CPUs are counted.
#[derive(Debug, Serialize)]
pub struct Resources {
    pub cpus: usize,
    pub gpus: usize,
}

pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/health", get(health))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            require_secret,
        ))
        .with_state(state)
}

async fn health() -> Json<Health> {
    Json(Health {
        ok: true,
        service: "onramp-runner",
        version: env!("CARGO_PKG_VERSION"),
        resources: Resources {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            gpus: 0,
        },
    })
}

async fn require_secret(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let expected = format!("Bearer {}", state.secret);
    let given = req
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if given != Some(expected.as_str()) {
        let body = serde_json::json!({"error": {"code": "unauthorized",
            "message": "missing or wrong Authorization: Bearer <runner secret>", "details": null}});
        return (StatusCode::UNAUTHORIZED, Json(body)).into_response();
    }
    next.run(req).await
}
