//! Wire types of `GET /api/health` (defined in the `api` crate).

pub use api::{BackendHealth, Bindings, Check, HealthReport};
