//! Wire types of `GET /api/health`.

use serde::{Deserialize, Serialize};

/// The edge's answer to `GET /api/health`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HealthReport {
    /// True when every binding works; backends being down does not make the edge unhealthy.
    pub ok: bool,
    pub service: String,
    pub version: String,
    pub bindings: Bindings,
    pub backends: Vec<BackendHealth>,
}

/// Whether each storage binding answered a real round trip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bindings {
    pub d1: Check,
    pub kv: Check,
    pub durable_object: Check,
}

/// The outcome of one check, with what was seen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub ok: bool,
    pub detail: String,
}

/// One configured backend and whether its own health endpoint answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackendHealth {
    pub name: String,
    pub kind: crate::backends::BackendKind,
    pub reachable: bool,
    pub detail: String,
}

impl Check {
    pub fn from_result(result: Result<String, String>) -> Self {
        match result {
            Ok(detail) => Check { ok: true, detail },
            Err(detail) => Check { ok: false, detail },
        }
    }
}
