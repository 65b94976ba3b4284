//! The edge's [`Backend`] trait for a Slurm cluster behind slurmrestd: submit builds the job
//! script and request from the dispatched spec, status and cancel use the job endpoint, and the
//! answers are parsed by [`super::state`]. Slurm serves no output over HTTP, so logs are the
//! job's own reports (the script forwards its metrics) and `logs` only says whether more will
//! come; there is no checkpoint download.
//!
//! Configuration (`BACKENDS`): `{"kind": "slurm", "url": "http://slurmrestd:6820",
//! "secret": "<user>:<JWT>"}`; the user defaults to `onramp` when the secret is a bare JWT.

use super::request::{SubmitOptions, log_path, submit_body};
use super::script::ReportHook;
use super::state::{MappedState, parse_job, parse_submit};
use super::{ApiVersion, auth_headers};
use crate::adapter::{
    Backend, BackendError, Dispatch, HttpCall, LogChunk, RemoteStatus, Submitted, common_status,
};
use crate::backends::BackendConfig;
use crate::jobs::JobState;
use serde_json::Value;

/// The data parser the edge speaks: the oldest supported, served by Slurm 23.11 to 25.05.
pub const VERSION: ApiVersion = ApiVersion::V0040;

/// Where jobs work and log when the deployment names nothing else: a folder every node has.
pub const WORK_DIR: &str = "/tmp";

pub struct SlurmBackend {
    url: String,
    user: String,
    token: String,
}

impl SlurmBackend {
    pub fn new(config: &BackendConfig) -> Self {
        let (user, token) = super::credentials(&config.secret);
        SlurmBackend {
            url: config.url.clone(),
            user,
            token,
        }
    }

    fn call(&self, method: &'static str, path: &str, body: Option<String>) -> HttpCall {
        let mut headers: Vec<(String, String)> = auth_headers(&self.user, &self.token)
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

fn job_state(s: MappedState) -> JobState {
    match s {
        MappedState::Queued => JobState::Queued,
        MappedState::Running => JobState::Running,
        MappedState::Succeeded => JobState::Succeeded,
        MappedState::Failed => JobState::Failed,
        MappedState::Cancelled => JobState::Cancelled,
        MappedState::TimedOut => JobState::TimedOut,
    }
}

impl Backend for SlurmBackend {
    fn submit(&self, job: &Dispatch) -> HttpCall {
        let (valid, _) = jobspec::validate_toml(&job.spec_toml);
        let options = SubmitOptions {
            version: VERSION,
            job_id: job.job_id.clone(),
            partition: None,
            work_dir: WORK_DIR.into(),
            report: Some(ReportHook {
                url: job.report_url.clone(),
                token: job.report_token.clone(),
            }),
            env: job.env.clone(),
            cpus_per_task: None,
            // The script runs the spec's own launch (ds_config, srun torchrun on every node, or
            // tiny-train), which is what the dispatched command is derived from.
            payload: None,
        };
        // The edge dispatches only specs it validated; should one not validate here after all,
        // the request goes without a body and slurmrestd's refusal names the problem.
        let body = valid
            .and_then(|v| submit_body(&v, &options).ok())
            .map(|b| b.to_string());
        self.call("POST", &VERSION.submit_path(), body)
    }

    fn parse_submit(&self, status: u16, body: &[u8]) -> Result<Submitted, BackendError> {
        common_status(status, body)?;
        let id = parse_submit(&json(body)?).map_err(BackendError::Protocol)?;
        Ok(Submitted {
            remote_id: id.to_string(),
            state: JobState::Queued,
        })
    }

    fn status(&self, remote_id: &str) -> HttpCall {
        self.call("GET", &VERSION.job_path(job_number(remote_id)), None)
    }

    fn parse_status(&self, status: u16, body: &[u8]) -> Result<RemoteStatus, BackendError> {
        common_status(status, body)?;
        let s = parse_job(&json(body)?).map_err(BackendError::Protocol)?;
        Ok(RemoteStatus {
            state: job_state(s.state),
            exit_code: s.exit_code,
            started_at_ms: s.start_time.map(|t| t * 1000),
            ended_at_ms: s.end_time.map(|t| t * 1000),
            checkpoint: false,
        })
    }

    fn logs(&self, remote_id: &str, _offset: u64) -> HttpCall {
        self.status(remote_id)
    }

    fn parse_logs(&self, status: u16, body: &[u8]) -> Result<LogChunk, BackendError> {
        let s = self.parse_status(status, body)?;
        let text = format!(
            "Slurm keeps this job's output on the cluster in {}\n",
            log_path(WORK_DIR)
        );
        Ok(LogChunk {
            offset: 0,
            next_offset: 0,
            text,
            eof: s.state.is_terminal(),
        })
    }

    fn cancel(&self, remote_id: &str) -> HttpCall {
        self.call("DELETE", &VERSION.job_path(job_number(remote_id)), None)
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

    fn checkpoint(&self, _remote_id: &str) -> Option<HttpCall> {
        None
    }

    fn health(&self) -> HttpCall {
        self.call("GET", &VERSION.ping_path(), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::BackendKind;
    use serde_json::json;
    use std::collections::BTreeMap;

    #[test]
    fn health_pings_with_the_jwt_headers() {
        let call = slurm().health();
        assert!(call.url.ends_with("/ping"), "{}", call.url);
        assert!(
            call.headers
                .contains(&("X-SLURM-USER-NAME".into(), "alice".into()))
        );
        assert!(
            call.headers
                .contains(&("X-SLURM-USER-TOKEN".into(), "eyJ.jwt".into()))
        );
    }

    fn slurm() -> SlurmBackend {
        SlurmBackend::new(&BackendConfig {
            name: "hpc".into(),
            kind: BackendKind::Slurm,
            url: "http://127.0.0.1:6820".into(),
            secret: "alice:eyJ.jwt".into(),
            cards: BTreeMap::new(),
        })
    }

    #[test]
    fn submits_with_jwt_headers_and_the_built_request() {
        let call = slurm().submit(&Dispatch {
            job_id: "j1".into(),
            task: "tiny-train".into(),
            spec_toml: include_str!("../../../jobspec/specs/tiny-train-stories260k.toml").into(),
            command: None,
            env: BTreeMap::new(),
            time_limit_s: 1800,
            report_url: "https://edge/api/jobs/j1/report".into(),
            report_token: "tok".into(),
            card: "cpu".into(),
            cards: 1,
        });
        assert_eq!(call.method, "POST");
        assert_eq!(call.url, "http://127.0.0.1:6820/slurm/v0.0.40/job/submit");
        assert!(
            call.headers
                .contains(&("X-SLURM-USER-NAME".into(), "alice".into()))
        );
        assert!(
            call.headers
                .contains(&("X-SLURM-USER-TOKEN".into(), "eyJ.jwt".into()))
        );
        let body: Value = serde_json::from_str(call.body.as_deref().unwrap()).unwrap();
        assert!(
            body["job"]["script"]
                .as_str()
                .unwrap()
                .contains("onramp-runner tiny-train")
        );
        assert_eq!(body["job"]["time_limit"]["number"], 30);
    }

    #[test]
    fn parses_status_cancel_and_refusals() {
        let s = slurm();
        let status = s.status("17");
        assert_eq!(
            (status.method, status.url.as_str()),
            ("GET", "http://127.0.0.1:6820/slurm/v0.0.40/job/17")
        );
        assert_eq!(s.cancel("17").method, "DELETE");
        let body = json!({"jobs": [{"job_id": 17, "job_state": ["TIMEOUT"],
            "exit_code": {"return_code": {"set": true, "number": 0}},
            "start_time": {"set": true, "number": 10}, "end_time": {"set": true, "number": 70}}]});
        let st = s.parse_status(200, body.to_string().as_bytes()).unwrap();
        assert_eq!(
            (st.state, st.started_at_ms, st.ended_at_ms),
            (JobState::TimedOut, Some(10_000), Some(70_000))
        );
        assert_eq!(
            s.parse_cancel(200, br#"{"status":[],"errors":[]}"#),
            Ok(JobState::Cancelled)
        );
        let refused = br#"{"errors":[{"description":"Batch job submission failed","error":"Requested node configuration is not available"}]}"#;
        match s.parse_submit(200, refused) {
            Err(BackendError::Protocol(m)) => assert!(m.contains("node configuration"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            s.parse_submit(200, br#"{"job_id": 5, "errors": []}"#)
                .unwrap()
                .remote_id,
            "5"
        );
        assert!(s.checkpoint("5").is_none());
    }
}
