//! The Onramp edge: the one server the browser talks to. A Cloudflare Worker (workers-rs) that
//! serves the app's static files and `/api/*`, keeps accounts, credits, jobs and shared
//! experiments in D1, KV and Durable Objects, and calls the configured backends.
//!
//! Everything that can be decided without the Workers runtime (the route table, wire types and
//! their checks, credit rules, backend adapters, the error shape) lives in plain modules tested
//! natively; the handlers that touch the runtime live under `worker` and only build for wasm32.

pub mod access;
pub mod accounts;
pub mod artifacts;
pub mod attempts;
pub mod backends;
pub mod coordinator;
pub mod credits;
pub mod datasets;
pub mod email_link;
pub mod error;
pub mod health;
pub mod job_logs;
pub mod jobs;
pub mod limits;
pub mod login_device;
pub mod mail;
pub mod metric_points;
pub mod openapi;
pub mod password_reset;
pub mod public_url;
pub mod refunds;
pub mod routes;
pub mod tls;
pub mod tokenizer_files;
/// Time on the wire and in storage: the contract's one time module.
pub use api::time;
pub mod wire;

#[cfg(target_arch = "wasm32")]
mod worker;

/// The edge's version, reported by `GET /api/health`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
