//! Backends on the wire: where jobs can run (public), the configured list (admin), the reconcile
//! sweep's tally, and `GET /api/health`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What kind of service a backend is; the spec's `backend` key selects one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    #[default]
    Runner,
    Slurm,
}

impl BackendKind {
    /// The wire spelling, as the spec's `backend` key writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Runner => "runner",
            BackendKind::Slurm => "slurm",
        }
    }
}

/// `GET /api/backends`, in the order the edge tries them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BackendList {
    pub backends: Vec<PublicBackend>,
}

/// One backend as anyone may see it: never its URL or secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PublicBackend {
    pub name: String,
    pub kind: BackendKind,
    /// Card type → how many the backend has.
    pub cards: BTreeMap<String, u32>,
}

impl BackendList {
    /// The backends that have `cards` cards of type `card`, in the edge's order.
    pub fn offering(&self, card: &str, cards: u32) -> Vec<PublicBackend> {
        self.backends
            .iter()
            .filter(|b| b.cards.get(card).is_some_and(|n| *n >= cards))
            .cloned()
            .collect()
    }
}

/// `GET /api/admin/backends`: the configured backends with their URLs (never their secrets).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AdminBackendList {
    pub backends: Vec<AdminBackend>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AdminBackend {
    pub name: String,
    pub kind: BackendKind,
    pub url: String,
    pub cards: BTreeMap<String, u32>,
}

/// `POST /api/admin/reconcile?silent_after_s=&recheck_after_s=`: what the sweep did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Reconciled {
    /// Silent jobs asked about.
    pub checked: u32,
    /// Of those, jobs found ended and settled.
    pub finished: u32,
    /// Of those, jobs whose backend did not answer.
    pub unreachable: u32,
    /// Settlements retried.
    pub resettled: u32,
}

/// `GET /api/health`: the public liveness check. It touches no storage and no backend, and says
/// nothing about the deployment's insides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Liveness {
    pub ok: bool,
    pub service: String,
    pub version: String,
}

/// `GET /api/admin/health` (admin token): a real round trip through each binding and every
/// backend's own health.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HealthReport {
    /// True when every binding works; backends being down does not make the edge unhealthy.
    pub ok: bool,
    pub service: String,
    pub version: String,
    pub bindings: Bindings,
    pub backends: Vec<BackendHealth>,
}

/// Whether each storage binding answered a real round trip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Bindings {
    pub d1: Check,
    pub kv: Check,
    pub durable_object: Check,
}

/// The outcome of one check, with what was seen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Check {
    pub ok: bool,
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

/// One configured backend and whether its own health endpoint answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BackendHealth {
    pub name: String,
    pub kind: BackendKind,
    pub reachable: bool,
    pub detail: String,
}
