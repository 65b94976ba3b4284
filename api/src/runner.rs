//! The runner contract: what the edge sends `onramp-runner` and what it answers. Every request
//! carries `Authorization: Bearer <backend secret>`; errors have the API's error shape.
//!
//! `POST /jobs` ([`SubmitJob`] → [`JobRef`]), `GET /jobs/{id}` ([`RunnerJob`]),
//! `GET /jobs/{id}/logs?offset=` ([`crate::LogChunk`]), `POST /jobs/{id}/cancel` ([`JobRef`]),
//! `GET /jobs/{id}/checkpoint` (bytes), `GET /health` ([`RunnerHealth`]).

use crate::JobState;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a runner job runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RunnerTask {
    /// Trains model-tiny with the settings of the spec (the runner runs itself as the child).
    TinyTrain,
    /// Runs the given argv as is.
    #[default]
    Command,
}

impl RunnerTask {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RunnerTask::TinyTrain => "tiny-train",
            RunnerTask::Command => "command",
        }
    }
}

/// `POST /jobs`. `task` stays text on the wire so that the runner can name it when it is
/// unknown; its values are [`RunnerTask`]'s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubmitJob {
    /// The edge's id of the job.
    pub job_id: String,
    /// `tiny-train` or `command`.
    pub task: String,
    #[serde(default)]
    pub spec_toml: String,
    /// The argv, for `task = command`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub time_limit_s: u64,
    /// Where the job reports its state and metrics, with `report_token`.
    #[serde(default)]
    pub report_url: Option<String>,
    #[serde(default)]
    pub report_token: Option<String>,
}

/// The answer of `POST /jobs` and `POST /jobs/{id}/cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobRef {
    /// The runner's id of the job.
    pub id: String,
    pub state: JobState,
}

/// `GET /jobs/{id}`. The edge reads only the state, the exit code, the times, the checkpoint,
/// the message and the reason: the identifying fields may be absent (a runner that predates
/// them, a test double) without the job's status becoming unreadable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunnerJob {
    #[serde(default)]
    pub id: String,
    /// The edge's id of the job, as submitted.
    #[serde(default)]
    pub job_id: String,
    #[serde(default)]
    pub task: RunnerTask,
    pub state: JobState,
    pub exit_code: Option<i32>,
    /// RFC 3339, UTC.
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    /// Whether `GET /jobs/{id}/checkpoint` has a file to serve.
    #[serde(default)]
    pub checkpoint: bool,
    /// Why the job ended as it did, when there is more to say than the state.
    #[serde(default)]
    pub message: Option<String>,
    /// Why a queued job waits, as a reason code (`CardsInUse`: the runner's declared cards are
    /// all taken), worded by the edge like Slurm's wait reasons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Which run of the job this is, from 0: a runner that stopped while the job was active runs
    /// it again when it starts (from the job's last checkpoint). `started_at` is this attempt's.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempt: u32,
    /// When the attempt before this one stopped (RFC 3339, UTC), for an attempt after the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeued_at: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// `GET /health`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunnerHealth {
    pub ok: bool,
    pub service: String,
    pub version: String,
    pub resources: Resources,
    /// Whether jobs run in the runner's sandbox: `--sandbox auto` on a machine where it does
    /// not work runs them without one, as this user.
    #[serde(default)]
    pub sandbox: bool,
}

/// Resources a runner offers to jobs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Resources {
    pub cpus: usize,
    pub gpus: usize,
    pub memory_bytes: u64,
    pub running_jobs: usize,
}
