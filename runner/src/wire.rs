//! Wire types of the runner's HTTP API (the JSON the edge sends and reads), kept apart from the
//! job records on disk and converted with checks that name the field at fault.

use crate::error::ApiError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The longest time limit the runner accepts: a week, far beyond any CPU job's use (jobspec
/// refuses more for `backend = "runner"`, so that a plan never promises what this refuses).
pub const MAX_TIME_LIMIT_S: u64 = jobspec::duration::RUNNER_MAX_TIME_LIMIT_S;

/// `POST /jobs` body, as sent by the edge (the runner contract's type).
pub use api::runner::SubmitJob as SubmitWire;

/// What a job runs.
pub use api::runner::RunnerTask as Task;

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
        check_command(task, &command)?;
        if task == Task::TinyTrain && w.spec_toml.trim().is_empty() {
            return Err(ApiError::bad_request(
                "spec_toml",
                "a tiny-train job needs its spec in \"spec_toml\"",
            ));
        }
        check_env(&w.env)?;
        if w.time_limit_s == 0 || w.time_limit_s > MAX_TIME_LIMIT_S {
            return Err(ApiError::bad_request(
                "time_limit_s",
                format!(
                    "time_limit_s must be between 1 and {MAX_TIME_LIMIT_S} seconds (got {})",
                    w.time_limit_s
                ),
            ));
        }
        Ok(JobRequest {
            job_id,
            task,
            spec_toml: w.spec_toml,
            command,
            env: w.env,
            time_limit_s: w.time_limit_s,
            report: report_target(w.report_url, w.report_token)?,
        })
    }
}

/// A command job has a non-empty argv, a tiny-train job none; no argument holds a NUL.
fn check_command(task: Task, command: &[String]) -> Result<(), ApiError> {
    match task {
        Task::Command if command.first().is_none_or(String::is_empty) => {
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
    match command.iter().find(|a| a.contains('\0')) {
        Some(bad) => Err(ApiError::bad_request(
            "command",
            format!("argument {bad:?} contains a NUL byte"),
        )),
        None => Ok(()),
    }
}

/// Every name a shell could export and the runner does not set itself; no value holds a NUL.
fn check_env(env: &BTreeMap<String, String>) -> Result<(), ApiError> {
    for (k, v) in env {
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
    Ok(())
}

/// Where the job reports: an http(s) URL, which needs its token.
fn report_target(
    url: Option<String>,
    token: Option<String>,
) -> Result<Option<ReportTarget>, ApiError> {
    let Some(url) = url else {
        return Ok(None);
    };
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
    Ok(Some(ReportTarget { url, token }))
}

/// A job's state, as the API and the records on disk spell it.
pub use api::JobState;

/// `GET /jobs/{id}` answer.
pub use api::runner::RunnerJob as JobView;

/// `POST /jobs` and `POST /jobs/{id}/cancel` answer.
pub use api::runner::JobRef;

/// `GET /jobs/{id}/logs` answer.
pub use api::LogChunk;

/// `GET /health` answer, and the resources this runner offers to jobs (this machine has no
/// GPUs, so only CPUs are counted).
pub use api::runner::{Resources, RunnerHealth as Health};

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
