//! The Onramp edge: the one server the browser talks to. A Cloudflare Worker (workers-rs) that
//! serves the app's static files and `/api/*`, keeps accounts, credits, jobs and shared
//! experiments in D1, KV and Durable Objects, and calls the configured backends.
//!
//! Everything that can be decided without the Workers runtime (wire types, configuration
//! parsing, the error shape) lives in plain modules tested natively; the handlers that touch
//! the runtime live under [`worker`] and only build for wasm32.

pub mod backends;
pub mod error;
pub mod health;

#[cfg(target_arch = "wasm32")]
mod worker;

/// The edge's version, reported by `GET /api/health`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
