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
use super::state::{parse_job, parse_submit};
use super::version::{ApiVersion, OPENAPI_PATH};
use crate::backends::adapter::{
    Backend, BackendError, Dispatch, HttpCall, LogChunk, RemoteStatus, Submitted, common_status,
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
        // Slurm's refusal (with any status) names why: the job cannot run there as asked.
        if let Ok(v) = serde_json::from_slice::<Value>(body)
            && v.get("errors")
                .and_then(Value::as_array)
                .is_some_and(|e| !e.is_empty())
        {
            return Err(BackendError::Refused(
                parse_submit(&v).err().unwrap_or_default(),
            ));
        }
        common_status(status, body)?;
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
        let mut mine: Vec<&Value> = v
            .get("jobs")
            .and_then(Value::as_array)
            .map(|jobs| {
                jobs.iter()
                    .filter(|j| {
                        j.get("name")
                            .and_then(Value::as_str)
                            .is_some_and(|n| n.ends_with(&suffix))
                    })
                    .collect()
            })
            .unwrap_or_default();
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
        common_status(status, body)?;
        let s = parse_job(&json(body)?).map_err(BackendError::Protocol)?;
        // For a pending job (a requeued one too) Slurm's start_time is its guess of when the
        // job will start.
        let started = s
            .start_time
            .filter(|_| !matches!(s.state, JobState::Queued | JobState::Requeued));
        Ok(RemoteStatus {
            state: s.state,
            exit_code: s.exit_code,
            started_at_ms: started.map(|t| t * 1000),
            ended_at_ms: s.end_time.map(|t| t * 1000),
            checkpoint: false,
            reason: s.reason,
            message: s.message.map(|(en, _)| en),
            attempt: Some(s.attempt),
            requeued_at_ms: s.requeued_at.map(|t| t * 1000),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::config::BackendKind;
    use serde_json::json;
    use std::collections::BTreeMap;

    const TINY_TRAIN: &str = include_str!("../../../../jobspec/specs/tiny-train-stories260k.toml");

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

    #[test]
    fn finds_its_job_by_the_edge_id_in_the_job_name() {
        let s = slurm();
        let call = s.find("abc123");
        assert_eq!(
            (call.method, call.url.as_str()),
            ("GET", "http://127.0.0.1:6820/slurm/v0.0.40/jobs")
        );
        let body = json!({"jobs": [
            {"job_id": 5, "name": "lora-ffff00", "job_state": ["RUNNING"]},
            {"job_id": 7, "name": "lora-abc123", "job_state": ["PENDING"], "state_reason": "Priority"},
            {"job_id": 9, "name": "x-abc1234", "job_state": ["RUNNING"]}
        ]})
        .to_string();
        assert_eq!(
            s.parse_find("abc123", 200, body.as_bytes()),
            Ok(Some(Submitted {
                remote_id: "7".into(),
                state: JobState::Queued
            }))
        );
        assert_eq!(s.parse_find("dddd", 200, body.as_bytes()), Ok(None));
        assert_eq!(s.parse_find("dddd", 200, b"{\"jobs\": []}"), Ok(None));
    }

    fn slurm() -> SlurmBackend {
        SlurmBackend::new(
            &BackendConfig {
                name: "hpc".into(),
                kind: BackendKind::Slurm,
                url: "http://127.0.0.1:6820".into(),
                secret: "alice:eyJ.jwt".into(),
                cards: BTreeMap::new(),
                ..BackendConfig::default()
            },
            0,
        )
        .unwrap()
    }

    /// A backend on data parser `version` that holds the key 00 01 … 1f.
    fn keyed(version: Option<&str>) -> SlurmBackend {
        SlurmBackend::new(
            &BackendConfig {
                name: "hpc".into(),
                kind: BackendKind::Slurm,
                url: "http://127.0.0.1:6820".into(),
                jwt_key: Some("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=".into()),
                user: Some("onramp".into()),
                api_version: version.map(String::from),
                ..BackendConfig::default()
            },
            1_767_225_600_000,
        )
        .unwrap()
    }

    /// Every call of one adapter, as `METHOD url` lines, for a snapshot per data parser.
    fn calls(s: &SlurmBackend) -> String {
        let submit = s
            .submit(&crate::backends::adapter::test_dispatch("j1", TINY_TRAIN))
            .unwrap();
        [
            submit,
            s.find("j1"),
            s.status("17"),
            s.cancel("17"),
            s.limit_time("17", 19).unwrap(),
            s.health(),
        ]
        .iter()
        .map(|c| format!("{} {}\n", c.method, c.url))
        .collect()
    }

    #[test]
    fn every_data_parser_has_its_own_paths() {
        expect_test::expect![[r#"
            POST http://127.0.0.1:6820/slurm/v0.0.40/job/submit
            GET http://127.0.0.1:6820/slurm/v0.0.40/jobs
            GET http://127.0.0.1:6820/slurm/v0.0.40/job/17
            DELETE http://127.0.0.1:6820/slurm/v0.0.40/job/17
            POST http://127.0.0.1:6820/slurm/v0.0.40/job/17
            GET http://127.0.0.1:6820/slurm/v0.0.40/ping
        "#]]
        .assert_eq(&calls(&keyed(None)));
        expect_test::expect![[r#"
            POST http://127.0.0.1:6820/slurm/v0.0.43/job/submit
            GET http://127.0.0.1:6820/slurm/v0.0.43/jobs
            GET http://127.0.0.1:6820/slurm/v0.0.43/job/17
            DELETE http://127.0.0.1:6820/slurm/v0.0.43/job/17
            POST http://127.0.0.1:6820/slurm/v0.0.43/job/17
            GET http://127.0.0.1:6820/slurm/v0.0.43/ping
        "#]]
        .assert_eq(&calls(&keyed(Some("v0.0.43"))));
        for v in ApiVersion::ALL {
            let s = keyed(Some(v.as_str()));
            assert_eq!(s.version(), v);
            assert!(
                calls(&s)
                    .lines()
                    .all(|l| l.contains(&format!("/slurm/{}/", v.as_str())))
            );
        }
        let openapi = SlurmBackend::openapi_call(
            &BackendConfig {
                name: "hpc".into(),
                kind: BackendKind::Slurm,
                url: "http://h:6820".into(),
                secret: "t".into(),
                api_version: Some("v0.0.41".into()),
                ..BackendConfig::default()
            },
            0,
        )
        .unwrap();
        assert_eq!(
            (openapi.method, openapi.url.as_str()),
            ("GET", "http://h:6820/openapi/v3")
        );
    }

    #[test]
    fn a_keyed_backend_sends_a_token_it_minted_for_the_call() {
        let call = keyed(None).health();
        let token = call
            .headers
            .iter()
            .find(|(k, _)| k == "X-SLURM-USER-TOKEN")
            .map(|(_, v)| v.clone())
            .unwrap();
        assert_eq!(
            token,
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjE3NjcyMjU5MDAsImlhdCI6MTc2NzIyNTYwMCwic3VuIjoib25yYW1wIn0.WTfleOYXHDNgCbKkzRVxB3ptkNRCJxpkEmkpmgW9eGY"
        );
        assert!(
            call.headers
                .contains(&("X-SLURM-USER-NAME".into(), "onramp".into()))
        );
    }

    #[test]
    fn submits_with_jwt_headers_and_the_built_request() {
        let call = slurm()
            .submit(&crate::backends::adapter::test_dispatch("j1", TINY_TRAIN))
            .unwrap();
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
    fn deployment_options_reach_the_request_and_logs_are_pushed() {
        let s = SlurmBackend::new(
            &BackendConfig {
                name: "hpc".into(),
                kind: BackendKind::Slurm,
                url: "http://127.0.0.1:6820".into(),
                secret: "jwt-only".into(),
                work_dir: Some("/shared/onramp".into()),
                partition: Some("gpu".into()),
                cpus_per_task: Some(1),
                env: BTreeMap::from([("ONRAMP_SHARED".into(), "/shared/data".into())]),
                ..BackendConfig::default()
            },
            0,
        )
        .unwrap();
        let call = s
            .submit(&crate::backends::adapter::test_dispatch("j2", TINY_TRAIN))
            .unwrap();
        assert!(
            call.headers
                .contains(&("X-SLURM-USER-NAME".into(), "onramp".into()))
        );
        let job = &serde_json::from_str::<Value>(call.body.as_deref().unwrap()).unwrap()["job"];
        assert_eq!(job["current_working_directory"], "/shared/onramp");
        assert_eq!(job["standard_output"], "/shared/onramp/slurm-%j.out");
        assert_eq!(
            (job["partition"].as_str(), job["cpus_per_task"].as_u64()),
            (Some("gpu"), Some(1))
        );
        let env = job["environment"].to_string();
        assert!(env.contains("ONRAMP_SHARED=/shared/data"), "{env}");
        assert!(
            env.contains("ONRAMP_LOG_URL=https://edge/api/jobs/j2/log"),
            "{env}"
        );
        assert!(s.logs("5", 0).is_none());
        let pending = json!({"jobs": [{"job_id": 5, "job_state": ["PENDING"], "state_reason": "Resources",
            "start_time": {"set": true, "infinite": false, "number": 1_900_000_000}}]});
        let st = s.parse_status(200, pending.to_string().as_bytes()).unwrap();
        assert_eq!(
            (st.state, st.reason.as_deref(), st.started_at_ms),
            (JobState::Queued, Some("Resources"), None)
        );
        assert!(st.message.unwrap().starts_with("waiting for resources"));
    }

    /// A deployment option that no request can carry fails the submission before anything is
    /// sent (it used to go out with no body and leave slurmrestd to word the problem).
    #[test]
    fn a_misconfigured_backend_sends_nothing() {
        let s = SlurmBackend::new(
            &BackendConfig {
                name: "hpc".into(),
                kind: BackendKind::Slurm,
                url: "http://127.0.0.1:6820".into(),
                secret: "jwt-only".into(),
                work_dir: Some("relative/dir".into()),
                ..BackendConfig::default()
            },
            0,
        )
        .unwrap();
        let e = s
            .submit(&crate::backends::adapter::test_dispatch("j3", TINY_TRAIN))
            .unwrap_err();
        assert!(
            matches!(&e, BackendError::Misconfigured(why) if why.contains("work_dir")),
            "{e:?}"
        );
        let api = e.into_api("hpc");
        assert_eq!(api.code, crate::error::ErrorCode::Internal);
        assert!(!crate::backends::adapter::submission_may_have_landed(
            &BackendError::Misconfigured(String::new())
        ));
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
            Err(BackendError::Refused(m)) => assert!(m.contains("node configuration"), "{m}"),
            other => panic!("{other:?}"),
        }
        // slurmrestd may send the refusal with a 500: still a refusal, not an outage.
        let e = s.parse_submit(500, refused).unwrap_err();
        assert!(matches!(e, BackendError::Refused(_)), "{e:?}");
        assert_eq!(
            e.into_api("hpc").code,
            crate::error::ErrorCode::BackendRefused
        );
        assert_eq!(
            s.parse_submit(200, br#"{"job_id": 5, "errors": []}"#)
                .unwrap()
                .remote_id,
            "5"
        );
        assert!(s.checkpoint("5").is_none());
    }
}
