//! Saved experiments on the wire: an immutable snapshot of a spec, its plan and (for a finished
//! job) its result, under an unguessable id. A snapshot holds no email and no balance.

use crate::JobState;
use crate::jobs::MetricPoint;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The longest title of an experiment, in characters.
pub const MAX_TITLE_CHARS: usize = 200;

/// `POST /api/experiments`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewExperiment {
    /// Spec text (TOML, or JSON when it starts with `{`).
    pub spec: String,
    /// A finished job of the caller's whose result the snapshot keeps.
    #[serde(default)]
    pub job_id: Option<String>,
    /// Unpublished snapshots are visible to their owner only.
    #[serde(default = "yes")]
    pub published: bool,
    /// The spec's name when absent; at most [`MAX_TITLE_CHARS`] characters, none of them
    /// control or invisible characters.
    #[serde(default)]
    #[schemars(regex(pattern = jobspec::validate::LABEL_PATTERN), length(max = MAX_TITLE_CHARS))]
    pub title: Option<String>,
    /// Share the job's artifacts with the link: whoever may see the snapshot may download them.
    /// Off unless asked for; needs `job_id`.
    #[serde(default)]
    pub share_artifacts: bool,
}

fn yes() -> bool {
    true
}

/// The answer of `POST /api/experiments`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SavedExperiment {
    pub id: String,
    /// The page that shows it: `/e/{id}`.
    pub url: String,
    pub published: bool,
}

/// `GET /api/experiments/{id}`: the snapshot as saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Experiment {
    pub id: String,
    pub title: String,
    /// RFC 3339, UTC.
    pub created_at: String,
    #[serde(default = "yes")]
    pub published: bool,
    /// The spec text as saved.
    pub spec: String,
    /// jobspec's plan of the spec (`onramp plan --json`'s shape) without the launch artifacts,
    /// which the spec regenerates; [`Experiment::plan_summary`] reads the figures pages show.
    pub plan: serde_json::Value,
    #[serde(default)]
    pub job: Option<ExperimentJob>,
    /// The job's artifacts as they were when the snapshot was saved, when its owner shared them
    /// with the link: each downloads from its `url` (`/api/experiments/{id}/artifacts/{name}`).
    #[serde(default)]
    pub artifacts: Vec<crate::Artifact>,
    /// Whether the signed-in caller saved it (so a page offers to unpublish or delete it);
    /// worked out for each answer, never stored in the snapshot (absent when false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub yours: bool,
}

/// `PATCH /api/experiments/{id}`: publishes the snapshot, or takes its link back (the owner only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExperimentChange {
    pub published: bool,
}

/// `DELETE /api/experiments/{id}`: the snapshot is gone, and its link with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExperimentDeleted {
    pub id: String,
    /// What it took of the account's experiment quota.
    pub freed_bytes: u64,
}

/// An account's saved experiments against its limits (`GET /api/me`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExperimentUsage {
    pub count: u64,
    pub max_count: u64,
    pub used_bytes: u64,
    pub quota_bytes: u64,
}

impl Experiment {
    /// The figures of the saved plan that pages show; none of them when the plan has no estimate.
    pub fn plan_summary(&self) -> PlanSummary {
        serde_json::from_value(self.plan.clone()).unwrap_or_default()
    }
}

/// The result of the job an experiment was saved from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExperimentJob {
    pub state: JobState,
    pub card: String,
    pub cards: u32,
    pub charged_fen: Option<i64>,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    pub message: Option<String>,
    #[serde(default)]
    pub metrics: Vec<MetricPoint>,
    /// What the run achieved (its `results.json` when it left one), kept with the snapshot so
    /// that the link shows it without sharing the job's files; its samples (prompts from the
    /// owner's data, and the answers) only when the snapshot shares the job's artifacts. See
    /// [`RunResults::for_snapshot`](crate::results::RunResults::for_snapshot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<crate::results::RunResults>,
}

/// The figures of a saved plan a page shows (the snapshot holds more).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanSummary {
    #[serde(default)]
    pub memory: Option<MemorySummary>,
    #[serde(default)]
    pub time: Option<TimeSummary>,
    #[serde(default)]
    pub cost: Option<CostSummary>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemorySummary {
    pub per_gpu: PerGpuTotal,
    pub card_bytes: u64,
    pub fits: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PerGpuTotal {
    pub total_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimeSummary {
    pub seconds: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CostSummary {
    pub fen: u64,
    pub max_fen: u64,
}
