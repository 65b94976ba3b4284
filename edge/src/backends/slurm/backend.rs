//! The edge's [`Backend`] trait for a Slurm cluster behind slurmrestd: submit builds the job
//! script and request from the dispatched spec, status and cancel use the job endpoint, and the
//! answers are parsed by [`super::state`]. Slurm serves no output over HTTP, so the job script
//! pushes its log to the edge itself (`POST /api/jobs/{id}/log`, see [`super::script`]) and
//! [`Backend::logs`] has no call to make; there is no checkpoint download.
//!
//! Configuration (`BACKENDS`): `{"kind": "slurm", "url": "http://slurmrestd:6820",
//! "secret": "<user>:<JWT>", "work_dir": "/shared/onramp", "partition": "gpu",
//! "cpus_per_task": 8, "env": {"ONRAMP_SHARED": "/shared/onramp-data"}}`; the user defaults to
//! `onramp` when the secret is a bare JWT, and every field after `secret` is optional. Instead
//! of `secret`, `"jwt_key": "<base64 of the cluster's HS256 key>"` (with `"user"`) has the edge
//! mint a token per call; `"api_version": "v0.0.42"` names the data parser (else the worker
//! learns it from `/openapi/v3` and passes it in).

use super::credentials::Credentials;
use super::request::{SubmitOptions, log_path, submit_body};
use super::script::ReportHook;
use super::state::{parse_job, parse_submit, submitted_id};
use super::version::{ApiVersion, OPENAPI_PATH};
use crate::backends::adapter::{
    self, Backend, BackendError, Dispatch, HttpCall, LogChunk, RemoteStatus, Submitted,
    common_status,
};
use crate::backends::config::BackendConfig;
use crate::jobs::JobState;
use serde_json::Value;
use std::collections::BTreeMap;

/// The data parser the adapter speaks when the configuration names none: the oldest supported,
/// served by Slurm 23.11 to 24.11. (The worker names the one slurmrestd serves; see
/// `worker::backends::adapter`.)
pub const VERSION: ApiVersion = ApiVersion::V0040;

/// Where jobs work and log when the deployment names nothing else: a folder every node has.
pub const WORK_DIR: &str = "/tmp";

pub struct SlurmBackend {
    url: String,
    version: ApiVersion,
    credentials: Credentials,
    /// When the calls are made (Unix ms): minted tokens start then.
    now_ms: i64,
    work_dir: String,
    partition: Option<String>,
    cpus_per_task: Option<u32>,
    retention_s: u64,
    env: BTreeMap<String, String>,
    requeue: bool,
    stop_warning_s: u64,
}

impl SlurmBackend {
    /// The adapter for calls made at `now_ms`; errors name the configuration field at fault.
    pub fn new(config: &BackendConfig, now_ms: i64) -> Result<Self, String> {
        let version = match &config.api_version {
            Some(v) => ApiVersion::parse(v)
                .map_err(|e| format!("BACKENDS: backend {:?} has api_version: {e}", config.name))?,
            None => VERSION,
        };
        Ok(SlurmBackend {
            url: config.url.clone(),
            version,
            credentials: Credentials::from_settings(
                &config.name,
                &config.secret,
                config.jwt_key.as_deref(),
                config.user.as_deref(),
            )?,
            now_ms,
            work_dir: config.work_dir.clone().unwrap_or_else(|| WORK_DIR.into()),
            partition: config.partition.clone(),
            cpus_per_task: config.cpus_per_task,
            retention_s: config.retention_s(),
            env: config.job_env(),
            requeue: config.requeue.unwrap_or(true),
            stop_warning_s: config.stop_warning_s(),
        })
    }

    /// `GET /openapi/v3`, which lists the data parsers this slurmrestd serves
    /// ([`newest_served`](super::version::newest_served)); made before any version is known.
    pub fn openapi_call(config: &BackendConfig, now_ms: i64) -> Result<HttpCall, String> {
        let mut config = config.clone();
        config.api_version = None;
        Ok(SlurmBackend::new(&config, now_ms)?.call("GET", OPENAPI_PATH, None))
    }

    /// The data parser this adapter speaks.
    pub fn version(&self) -> ApiVersion {
        self.version
    }

    fn call(&self, method: &'static str, path: &str, body: Option<String>) -> HttpCall {
        let mut headers: Vec<(String, String)> = self
            .credentials
            .headers(self.now_ms)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        if body.is_some() {
            headers.push(("content-type".into(), "application/json".into()));
        }
        HttpCall {
            method,
            url: format!("{}{path}", self.url),
            headers,
            body,
        }
    }
}

/// Slurm job ids are numbers; anything else never reaches a URL.
fn job_number(remote_id: &str) -> u64 {
    remote_id.parse().unwrap_or(0)
}

fn json(body: &[u8]) -> Result<Value, BackendError> {
    serde_json::from_slice(body).map_err(|e| BackendError::Protocol(format!("malformed JSON: {e}")))
}

impl Backend for SlurmBackend {
    fn submit(&self, job: &Dispatch) -> Result<HttpCall, BackendError> {
        let options = SubmitOptions {
            version: self.version,
            job_id: job.job_id.clone(),
            partition: self.partition.clone(),
            work_dir: self.work_dir.clone(),
            retention_s: self.retention_s,
            report: Some(ReportHook {
                url: job.report_url.clone(),
                log_url: job.log_url.clone(),
                token: job.report_token.clone(),
            }),
            env: job.env_over(&self.env),
            cpus_per_task: self.cpus_per_task,
            // The script runs the spec's own launch (ds_config, srun torchrun on every node, or
            // tiny-train): the same line as the runner's command, written for the cluster.
            payload: None,
            requeue: self.requeue,
            stop_warning_s: self.stop_warning_s,
        };
        // The spec is valid by its type; what can still be wrong is the deployment's options.
        let body = submit_body(&job.spec, &options).map_err(BackendError::Misconfigured)?;
        Ok(self.call("POST", &self.version.submit_path(), Some(body.to_string())))
    }

    fn parse_submit(&self, status: u16, body: &[u8]) -> Result<Submitted, BackendError> {
        let v = serde_json::from_slice::<Value>(body).ok();
        // A job id means Slurm queued the job, whatever else the answer says (slurmrestd of
        // 23.11 lists errors that did not stop slurmctld, a partition down, beside it).
        if let Some(id) = v.as_ref().and_then(submitted_id) {
            return Ok(Submitted {
                remote_id: id.to_string(),
                state: JobState::Queued,
            });
        }
        if matches!(status, 401 | 403 | 511) {
            adapter::submit_status(status, body, true)?;
        }
        // Slurm's refusal names why: the job cannot run there as asked (slurmrestd gives it a
        // 200, a 500, or the status of its error; 511 is the edge's credentials refused). A 502, 503 or
        // 504 (slurmrestd's call to slurmctld failed or timed out, maybe after it queued the
        // job) or a proxy's 5xx does not say whether the job was taken: it may be there.
        let errors = v
            .as_ref()
            .and_then(|v| v.get("errors"))
            .and_then(Value::as_array)
            .is_some_and(|e| !e.is_empty());
        if errors && !matches!(status, 502..=504) {
            let v = v.as_ref().unwrap_or(&Value::Null);
            return Err(BackendError::Refused(
                parse_submit(v).err().unwrap_or_default(),
            ));
        }
        adapter::submit_status(status, body, false)?;
        let id = parse_submit(&json(body)?).map_err(BackendError::Protocol)?;
        Ok(Submitted {
            remote_id: id.to_string(),
            state: JobState::Queued,
        })
    }

    fn find(&self, _job_id: &str) -> HttpCall {
        self.call("GET", &self.version.jobs_path(), None)
    }

    /// The Slurm job named after the edge's job id (`<spec name>-<job id>`, see
    /// [`super::request::submit_body`]), the newest one should there be several.
    fn parse_find(
        &self,
        job_id: &str,
        status: u16,
        body: &[u8],
    ) -> Result<Option<Submitted>, BackendError> {
        common_status(status, body)?;
        let v = json(body)?;
        let suffix = format!("-{}", jobspec::launch::safe_name(job_id));
        // No list (or errors beside it) is no word on the job: never "no such job", which
        // fails it.
        let no_errors = v
            .get("errors")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        let jobs = v
            .get("jobs")
            .and_then(Value::as_array)
            .filter(|_| no_errors);
        let Some(jobs) = jobs else {
            return Err(BackendError::Protocol(format!(
                "slurmrestd's job list has no jobs: {}",
                String::from_utf8_lossy(&body[..body.len().min(200)])
            )));
        };
        let mut mine: Vec<&Value> = jobs
            .iter()
            .filter(|j| {
                j.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| n.ends_with(&suffix))
            })
            .collect();
        mine.sort_by_key(|j| j.get("job_id").and_then(Value::as_u64).unwrap_or(0));
        let Some(job) = mine.last() else {
            return Ok(None);
        };
        let s = parse_job(&serde_json::json!({ "jobs": [job] })).map_err(BackendError::Protocol)?;
        Ok(Some(Submitted {
            remote_id: s.slurm_job_id.to_string(),
            state: s.state,
        }))
    }

    fn status(&self, remote_id: &str) -> HttpCall {
        self.call("GET", &self.version.job_path(job_number(remote_id)), None)
    }

    fn parse_status(&self, status: u16, body: &[u8]) -> Result<RemoteStatus, BackendError> {
        slurm_status(status, body)?;
        let s = parse_job(&json(body)?).map_err(BackendError::Protocol)?;
        // For a pending job (a requeued one too) Slurm's start_time is its guess of when the
        // job will start.
        let started = s
            .start_time
            .filter(|_| !matches!(s.state, JobState::Queued | JobState::Requeued));
        Ok(RemoteStatus {
            state: s.state,
            exit_code: s.exit_code,
            started_at_ms: started.and_then(millis),
            ended_at_ms: s.end_time.and_then(millis),
            suspended_ms: s.suspended_s.saturating_mul(1000),
            suspended_since_ms: s.suspended_since.and_then(millis),
            checkpoint: false,
            reason: s.reason,
            message: s.message.map(|(en, _)| en),
            attempt: Some(s.attempt),
            requeued_at_ms: s.requeued_at.and_then(millis),
        })
    }

    fn logs(&self, _remote_id: &str, _offset: u64) -> Option<HttpCall> {
        None
    }

    fn parse_logs(&self, _status: u16, _body: &[u8]) -> Result<LogChunk, BackendError> {
        Err(BackendError::Protocol(format!(
            "slurmrestd serves no job output (it is in {} on the cluster); the job pushes its log to the edge",
            log_path(&self.work_dir)
        )))
    }

    fn cancel(&self, remote_id: &str) -> HttpCall {
        self.call(
            "DELETE",
            &self.version.job_path(job_number(remote_id)),
            None,
        )
    }

    fn parse_cancel(&self, status: u16, body: &[u8]) -> Result<JobState, BackendError> {
        common_status(status, body)?;
        let v = json(body)?;
        match v.get("errors").and_then(Value::as_array) {
            Some(errors) if !errors.is_empty() => Err(BackendError::Protocol(format!(
                "slurmrestd refused the cancel: {}",
                Value::Array(errors.clone())
            ))),
            _ => Ok(JobState::Cancelled),
        }
    }

    fn limit_time(&self, remote_id: &str, minutes: u32) -> Option<HttpCall> {
        // slurmrestd's job update takes a job description with just what changes; lowering
        // its own job's limit is something any Slurm user may do.
        let body =
            serde_json::json!({"time_limit": {"set": true, "infinite": false, "number": minutes}});
        Some(self.call(
            "POST",
            &self.version.job_path(job_number(remote_id)),
            Some(body.to_string()),
        ))
    }

    fn checkpoint(&self, _remote_id: &str) -> Option<HttpCall> {
        None
    }

    fn health(&self) -> HttpCall {
        self.call("GET", &self.version.ping_path(), None)
    }
}

/// Slurm's Unix seconds in milliseconds; none for a time no clock shows (one that overflows).
fn millis(t: i64) -> Option<i64> {
    t.checked_mul(1000).filter(|ms| *ms > 0)
}

/// [`common_status`], but a 404 says the job is gone only when slurmrestd says so (Slurm's
/// `ESLURM_INVALID_JOB_ID`, 2017, "Invalid job id specified"): a data parser the cluster no longer
/// serves, or a proxy, answers 404 too, and says nothing about the job, which must not be ended
/// as lost for it.
fn slurm_status(status: u16, body: &[u8]) -> Result<(), BackendError> {
    if status == 404 {
        let unknown_job = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| v.get("errors").and_then(Value::as_array).cloned())
            .is_some_and(|errors| {
                errors.iter().any(|e| {
                    e.get("error_number").and_then(Value::as_i64) == Some(2017)
                        || e.get("error")
                            .and_then(Value::as_str)
                            .is_some_and(|m| m.contains("Invalid job id"))
                })
            });
        if !unknown_job {
            return Err(BackendError::Protocol(format!(
                "HTTP 404 that names no job: {}",
                String::from_utf8_lossy(&body[..body.len().min(200)])
            )));
        }
    }
    common_status(status, body)
}

#[cfg(test)]
mod tests;
