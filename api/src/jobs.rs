//! Jobs on the wire: a submission, a job as its owner sees it, its metrics and log, what a job's
//! own process reports, and a refused spec's diagnostics.

use crate::JobState;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One text in the app's languages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Messages {
    pub en: String,
    #[serde(rename = "zh-CN")]
    pub zh_cn: String,
}

/// `POST /api/jobs` with `Content-Type: application/json` (any other type is TOML text). A bare
/// spec object is accepted too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubmitRequest {
    pub spec: SpecBody,
}

/// A spec as TOML text or as a JSON object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SpecBody {
    Toml(#[schemars(length(min = 1))] String),
    Json(#[schemars(extend("minProperties" = 1))] serde_json::Map<String, serde_json::Value>),
}

/// A job as the API shows it to its owner (`GET /api/jobs/{id}`, an entry of `GET /api/jobs`,
/// the answer of a submission and of a cancel).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Job {
    pub id: String,
    pub name: String,
    pub state: JobState,
    /// The configured backend's name.
    pub backend: String,
    pub card: String,
    pub cards: u32,
    pub hold_fen: i64,
    /// What the job cost once settled; none while it runs.
    pub charged_fen: Option<i64>,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    /// The backend's latest word: the reason a queued job waits, or why one ended (English).
    pub message: Option<String>,
    /// Why a queued job waits, as its backend names it (e.g. Slurm's `Resources`).
    #[serde(default)]
    pub reason: Option<String>,
    /// `reason` in every language of the app.
    #[serde(default)]
    pub reason_messages: Option<Messages>,
    /// Whether `GET /api/jobs/{id}/checkpoint` has a file.
    pub checkpoint: bool,
    /// The spec as submitted (TOML).
    pub spec: String,
    /// Its runs, when its cluster stopped it and ran it again (a requeue, a node that died):
    /// each attempt's times and where its log begins. Empty in lists, and for a job that has
    /// told the edge of no attempt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<JobAttempt>,
}

/// One run of a job (see [`Job::attempts`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobAttempt {
    /// Counted from 0.
    pub attempt: u32,
    /// RFC 3339, UTC: when it started, and when its cluster stopped it (none for the last).
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    /// Where its output begins in `GET /api/jobs/{id}/logs`, once it printed some.
    pub log_offset: Option<u64>,
}

/// `GET /api/jobs`: newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JobList {
    pub jobs: Vec<Job>,
}

/// One training report: the loss at a step and what else was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetricPoint {
    pub step: u64,
    pub loss: f64,
    #[serde(default)]
    pub val_loss: Option<f64>,
    #[serde(default)]
    pub lr: Option<f64>,
    #[serde(default)]
    pub tokens_per_s: Option<f64>,
    pub elapsed_s: f64,
    /// What `onramp-train` reports besides tiny-train's schema: accepted so that its lines can
    /// be forwarded as they are, not stored or answered.
    #[serde(default, skip_serializing)]
    pub grad_norm: Option<f64>,
    #[serde(default, skip_serializing)]
    pub epoch: Option<f64>,
    /// Peak GPU memory of the reporting rank, in bytes.
    #[serde(default, skip_serializing)]
    pub peak_mem_bytes: Option<u64>,
}

/// The most points one metrics page holds: a client asks again from `next_since` while pages
/// come back this full.
pub const METRICS_PAGE_POINTS: usize = 5000;

/// `GET /api/jobs/{id}/metrics?since=`: the points from step `since` on, and where to ask next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MetricsPage {
    pub job_id: String,
    pub state: JobState,
    pub metrics: Vec<MetricPoint>,
    pub next_since: u64,
}

/// A slice of a job's log (`GET /api/jobs/{id}/logs?offset=`, and the runner's
/// `GET /jobs/{id}/logs`): byte offsets into the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LogChunk {
    pub offset: u64,
    pub next_offset: u64,
    pub text: String,
    /// No more text will come: the job ended and everything was read.
    pub eof: bool,
}

/// `POST /api/jobs/{id}/report` with the job's token: what a job's own process says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Report {
    #[serde(default)]
    pub state: Option<JobState>,
    #[serde(default)]
    pub metrics: Vec<MetricPoint>,
    #[serde(default)]
    pub message: Option<String>,
    /// Which run of the job reports, counted from 0 (Slurm's `SLURM_RESTART_COUNT`), when its
    /// cluster may run it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
}

/// The answer to a report: the job's state after it, and how many points were stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReportAccepted {
    pub state: JobState,
    pub metrics_stored: usize,
}

/// The answer to `POST /api/jobs/{id}/log?offset=`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LogAccepted {
    /// Where the next chunk starts.
    pub next_offset: u64,
    /// Bytes of this chunk stored (a retried chunk stores only what was new).
    pub stored: usize,
    /// Bytes dropped because the log reached its limit.
    pub dropped: usize,
    pub limit_bytes: u64,
}

/// `GET /api/checkpoints`: the account's jobs that have a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointList {
    pub checkpoints: Vec<CheckpointEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointEntry {
    pub job_id: String,
    pub name: String,
    /// `/api/jobs/{id}/checkpoint`.
    pub url: String,
    pub ended_at: Option<String>,
}

/// How bad a spec problem is; only `error` stops a spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

/// One problem of a spec, as jobspec found it (an entry of `invalid_spec`'s
/// `details.diagnostics`, and of `onramp plan --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SpecDiagnostic {
    pub severity: Severity,
    /// jobspec's stable code, e.g. `E_UNKNOWN_CARD`.
    pub code: String,
    /// Where in the spec, e.g. `resources.card`.
    pub path: String,
    /// English (`messages` has both languages).
    pub message: String,
    pub messages: Messages,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<Messages>,
    /// 1-based; 0 when the problem has no place in the text.
    pub line: u32,
    pub column: u32,
}

impl From<&jobspec::Diagnostic> for SpecDiagnostic {
    fn from(d: &jobspec::Diagnostic) -> Self {
        let both = |m: &jobspec::Message| Messages {
            en: m.en.clone(),
            zh_cn: m.zh.clone(),
        };
        SpecDiagnostic {
            severity: match d.severity {
                jobspec::Severity::Error => Severity::Error,
                jobspec::Severity::Warning => Severity::Warning,
                jobspec::Severity::Info => Severity::Info,
            },
            code: d.code.as_str().to_string(),
            path: d.path.clone(),
            message: d.message.en.clone(),
            messages: both(&d.message),
            help: d.help.as_ref().map(both),
            line: d.line,
            column: d.column,
        }
    }
}
