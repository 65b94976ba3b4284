//! Wire types of the runner's HTTP API (the JSON the edge sends and reads), kept apart from the
//! job records on disk and converted with checks that name the field at fault.

use crate::error::ApiError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The longest time limit the runner accepts: a week, far beyond any CPU job's use.
pub const MAX_TIME_LIMIT_S: u64 = 7 * 86_400;

/// `POST /jobs` body, as sent by the edge.
#[derive(Debug, Clone, Deserialize)]
pub struct SubmitWire {
    pub job_id: String,
    pub task: String,
    #[serde(default)]
    pub spec_toml: String,
    #[serde(default)]
    pub command: Option<Vec<String>>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub time_limit_s: u64,
    #[serde(default)]
    pub report_url: Option<String>,
    #[serde(default)]
    pub report_token: Option<String>,
}

/// What a job runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Task {
    /// Trains model-tiny with the settings of the spec (the runner runs itself as the child).
    TinyTrain,
    /// Runs the given argv as is.
    Command,
}

/// Where a job reports its state and metrics.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportTarget {
    pub url: String,
    pub token: String,
}

/// A submission that passed the field checks (the spec itself is checked by the runner).
#[derive(Debug, Clone, PartialEq)]
pub struct JobRequest {
    pub job_id: String,
    pub task: Task,
    pub spec_toml: String,
    pub command: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub time_limit_s: u64,
    pub report: Option<ReportTarget>,
}

/// Environment names the runner sets itself; a job may not override them.
pub const RESERVED_ENV: &[&str] = &[
    "ONRAMP_JOB_ID",
    "ONRAMP_RUNNER_JOB_ID",
    "ONRAMP_REPORT_URL",
    "ONRAMP_REPORT_TOKEN",
    "ONRAMP_RUNNER_SECRET",
];

impl TryFrom<SubmitWire> for JobRequest {
    type Error = ApiError;

    fn try_from(w: SubmitWire) -> Result<Self, ApiError> {
        let job_id = w.job_id.trim().to_string();
        if job_id.is_empty() || job_id.len() > 128 || job_id.chars().any(char::is_control) {
            return Err(ApiError::bad_request(
                "job_id",
                "job_id must be 1 to 128 printable characters",
            ));
        }
        let task = match w.task.as_str() {
            "tiny-train" => Task::TinyTrain,
            "command" => Task::Command,
            other => {
                return Err(ApiError::bad_request(
                    "task",
                    format!("task {other:?} is unknown; expected \"tiny-train\" or \"command\""),
                ));
            }
        };
        let command = w.command.unwrap_or_default();
        match task {
            Task::Command if command.is_empty() || command[0].is_empty() => {
                return Err(ApiError::bad_request(
                    "command",
                    "a command job needs \"command\": a non-empty argv such as [\"sh\", \"-c\", \"echo hi\"]",
                ));
            }
            Task::TinyTrain if !command.is_empty() => {
                return Err(ApiError::bad_request(
                    "command",
                    "a tiny-train job takes no \"command\": the spec decides what runs",
                ));
            }
            _ => {}
        }
        if let Some(bad) = command.iter().find(|a| a.contains('\0')) {
            return Err(ApiError::bad_request(
                "command",
                format!("argument {bad:?} contains a NUL byte"),
            ));
        }
        if task == Task::TinyTrain && w.spec_toml.trim().is_empty() {
            return Err(ApiError::bad_request(
                "spec_toml",
                "a tiny-train job needs its spec in \"spec_toml\"",
            ));
        }
        for (k, v) in &w.env {
            let name_ok = k
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !name_ok {
                return Err(ApiError::bad_request(
                    "env",
                    format!("environment name {k:?} is not a valid name ([A-Za-z_][A-Za-z0-9_]*)"),
                ));
            }
            if RESERVED_ENV.contains(&k.as_str()) {
                return Err(ApiError::bad_request(
                    "env",
                    format!("environment name {k:?} is set by the runner itself"),
                ));
            }
            if v.contains('\0') {
                return Err(ApiError::bad_request(
                    "env",
                    format!("the value of {k} contains a NUL byte"),
                ));
            }
        }
        if w.time_limit_s == 0 || w.time_limit_s > MAX_TIME_LIMIT_S {
            return Err(ApiError::bad_request(
                "time_limit_s",
                format!(
                    "time_limit_s must be between 1 and {MAX_TIME_LIMIT_S} seconds (got {})",
                    w.time_limit_s
                ),
            ));
        }
        let report = match (w.report_url, w.report_token) {
            (None, _) => None,
            (Some(url), token) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(ApiError::bad_request(
                        "report_url",
                        format!("report_url {url:?} is not an http(s) URL"),
                    ));
                }
                let token = token.filter(|t| !t.is_empty()).ok_or_else(|| {
                    ApiError::bad_request(
                        "report_token",
                        "report_url needs a report_token: reports are authenticated",
                    )
                })?;
                Some(ReportTarget { url, token })
            }
        };
        Ok(JobRequest {
            job_id,
            task,
            spec_toml: w.spec_toml,
            command,
            env: w.env,
            time_limit_s: w.time_limit_s,
            report,
        })
    }
}

/// A job's state, as the API and the records on disk spell it.
pub use jobspec::JobState;

/// `GET /jobs/{id}` answer.
#[derive(Debug, Clone, Serialize)]
pub struct JobView {
    pub id: String,
    /// The edge's id of the job, as submitted.
    pub job_id: String,
    pub task: Task,
    pub state: JobState,
    pub exit_code: Option<i32>,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    /// Whether `GET /jobs/{id}/checkpoint` has a file to serve.
    pub checkpoint: bool,
    /// Why the job ended as it did, when there is more to say than the state.
    pub message: Option<String>,
    /// Why a queued job waits (a reason code, as Slurm gives one): [`crate::jobs::QUEUED_REASON`].
    pub reason: Option<String>,
}

/// `POST /jobs` and `POST /jobs/{id}/cancel` answer.
#[derive(Debug, Clone, Serialize)]
pub struct JobRef {
    pub id: String,
    pub state: JobState,
}

/// `GET /jobs/{id}/logs` answer.
#[derive(Debug, Clone, Serialize)]
pub struct LogChunk {
    pub offset: u64,
    pub next_offset: u64,
    pub text: String,
    /// No more text will come: the job ended and everything was read.
    pub eof: bool,
}

/// `GET /health` answer.
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
    pub memory_bytes: u64,
    pub running_jobs: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> Result<JobRequest, ApiError> {
        JobRequest::try_from(serde_json::from_value::<SubmitWire>(v).unwrap())
    }

    fn base() -> serde_json::Value {
        json!({"job_id": "j1", "task": "command", "spec_toml": "", "command": ["true"],
               "env": {}, "time_limit_s": 60, "report_url": null, "report_token": null})
    }

    fn field_of(e: ApiError) -> String {
        e.details["field"].as_str().unwrap().to_string()
    }

    #[test]
    fn accepts_a_command_job() {
        let r = parse(base()).unwrap();
        assert_eq!(r.task, Task::Command);
        assert_eq!(r.command, vec!["true"]);
        assert_eq!(r.report, None);
    }

    #[test]
    fn names_the_field_at_fault() {
        let with = |k: &str, v: serde_json::Value| {
            let mut b = base();
            b[k] = v;
            field_of(parse(b).unwrap_err())
        };
        assert_eq!(with("task", json!("train")), "task");
        assert_eq!(with("command", json!([])), "command");
        assert_eq!(with("time_limit_s", json!(0)), "time_limit_s");
        assert_eq!(with("env", json!({"1X": "y"})), "env");
        assert_eq!(with("env", json!({"ONRAMP_REPORT_TOKEN": "y"})), "env");
        assert_eq!(
            with("report_url", json!("file:///etc/passwd")),
            "report_url"
        );
        assert_eq!(with("report_url", json!("http://x/r")), "report_token");
        assert_eq!(with("job_id", json!(" ")), "job_id");
        let mut b = base();
        b["task"] = json!("tiny-train");
        assert_eq!(field_of(parse(b.clone()).unwrap_err()), "command");
        b["command"] = json!(null);
        assert_eq!(field_of(parse(b).unwrap_err()), "spec_toml");
    }

    #[test]
    fn states_serialise_as_the_api_spells_them() {
        for s in JobState::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), json!(s.as_str()));
        }
        assert!(JobState::TimedOut.is_terminal() && !JobState::Queued.is_terminal());
    }
}
