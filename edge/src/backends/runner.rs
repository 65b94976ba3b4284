//! The adapter for `onramp-runner` (the local backend), to the runner's HTTP contract:
//! `POST /jobs`, `GET /jobs?job_id=`, `GET /jobs/{id}`, `GET /jobs/{id}/logs?offset=`, `POST /jobs/{id}/cancel`,
//! `GET /jobs/{id}/checkpoint`, every request with `Authorization: Bearer <backend secret>`.

use super::adapter::{
    self, Backend, BackendError, Dispatch, HttpCall, LogChunk, RemoteStatus, Submitted, Task,
    common_status,
};
use super::config::BackendConfig;
use crate::jobs::JobState;
use api::runner::{JobRef, RunnerJob, RunnerTask, SubmitJob};
use serde::Deserialize;

pub struct RunnerBackend {
    url: String,
    secret: String,
    /// What the backend's configuration gives every job (`BackendConfig::job_env`).
    env: std::collections::BTreeMap<String, String>,
}

fn json<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, BackendError> {
    serde_json::from_slice(body).map_err(|e| BackendError::Protocol(format!("malformed JSON: {e}")))
}

/// Path segments from the runner are placed into URLs; keep them to a safe alphabet.
fn segment(id: &str) -> String {
    id.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
        .collect()
}

impl RunnerBackend {
    pub fn new(config: &BackendConfig) -> Self {
        RunnerBackend {
            url: config.url.clone(),
            secret: config.secret.clone(),
            env: config.job_env(),
        }
    }

    fn call(&self, method: &'static str, path: &str, body: Option<String>) -> HttpCall {
        let mut headers = vec![(
            "authorization".to_string(),
            format!("Bearer {}", self.secret),
        )];
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

impl Backend for RunnerBackend {
    fn submit(&self, job: &Dispatch) -> Result<HttpCall, BackendError> {
        let (task, command) = match job.task() {
            Task::TinyTrain => (RunnerTask::TinyTrain, None),
            Task::Command(argv) => (RunnerTask::Command, Some(argv)),
        };
        let body = SubmitJob {
            job_id: job.job_id.clone(),
            task: task.as_str().into(),
            // The validated spec with every default written: what tiny-train and onramp-train
            // read, whichever form (TOML or JSON) the user sent.
            spec_toml: jobspec::trainer::spec_toml(&job.spec),
            command,
            env: job.env_over(&self.env),
            time_limit_s: job.spec.time_limit_s(),
            report_url: Some(job.report_url.clone()),
            report_token: Some(job.report_token.clone()),
        };
        let body = serde_json::to_string(&body)
            .map_err(|e| BackendError::Misconfigured(format!("the submission: {e}")))?;
        Ok(self.call("POST", "/jobs", Some(body)))
    }

    fn parse_submit(&self, status: u16, body: &[u8]) -> Result<Submitted, BackendError> {
        // The runner's own error shape says it refused the job before taking it.
        let explained = serde_json::from_slice::<serde_json::Value>(body)
            .is_ok_and(|v| v["error"]["code"].is_string());
        adapter::submit_status(status, body, explained)?;
        let a: JobRef = json(body)?;
        if a.id.is_empty() {
            return Err(BackendError::Protocol(
                "the runner returned an empty job id".into(),
            ));
        }
        Ok(Submitted {
            remote_id: a.id,
            state: a.state,
        })
    }

    fn find(&self, job_id: &str) -> HttpCall {
        self.call("GET", &format!("/jobs?job_id={}", segment(job_id)), None)
    }

    fn parse_find(
        &self,
        job_id: &str,
        status: u16,
        body: &[u8],
    ) -> Result<Option<Submitted>, BackendError> {
        runner_status(status, body)?;
        let jobs: Vec<RunnerJob> = json(body)?;
        Ok(jobs
            .into_iter()
            .find(|j| j.job_id == job_id && !j.id.is_empty())
            .map(|j| Submitted {
                remote_id: j.id,
                state: j.state,
            }))
    }

    fn status(&self, remote_id: &str) -> HttpCall {
        self.call("GET", &format!("/jobs/{}", segment(remote_id)), None)
    }

    fn parse_status(&self, status: u16, body: &[u8]) -> Result<RemoteStatus, BackendError> {
        runner_status(status, body)?;
        let a: RunnerJob = json(body)?;
        let time = |t: Option<String>| t.as_deref().and_then(crate::time::parse_rfc3339_ms);
        Ok(RemoteStatus {
            state: a.state,
            exit_code: a.exit_code.map(i64::from),
            started_at_ms: time(a.started_at),
            ended_at_ms: time(a.ended_at),
            suspended_ms: 0,
            suspended_since_ms: None,
            checkpoint: a.checkpoint,
            message: a
                .reason
                .as_deref()
                .map(|r| super::slurm::state::pending_reason(r).0),
            reason: a.reason,
            attempt: Some(a.attempt),
            requeued_at_ms: time(a.requeued_at),
        })
    }

    fn logs(&self, remote_id: &str, offset: u64) -> Option<HttpCall> {
        Some(self.call(
            "GET",
            &format!("/jobs/{}/logs?offset={offset}", segment(remote_id)),
            None,
        ))
    }

    fn parse_logs(&self, status: u16, body: &[u8]) -> Result<LogChunk, BackendError> {
        runner_status(status, body)?;
        json(body)
    }

    fn cancel(&self, remote_id: &str) -> HttpCall {
        self.call(
            "POST",
            &format!("/jobs/{}/cancel", segment(remote_id)),
            None,
        )
    }

    fn parse_cancel(&self, status: u16, body: &[u8]) -> Result<JobState, BackendError> {
        runner_status(status, body)?;
        let a: JobRef = json(body)?;
        Ok(a.state)
    }

    fn checkpoint(&self, remote_id: &str) -> Option<HttpCall> {
        Some(self.call(
            "GET",
            &format!("/jobs/{}/checkpoint", segment(remote_id)),
            None,
        ))
    }

    fn health(&self) -> HttpCall {
        self.call("GET", "/health", None)
    }
}

/// [`common_status`], but a 404 says the job is gone only with the runner's own code for an
/// unknown job (`no_such_job`): any other 404 (a route a runner of another version lacks, a
/// proxy in front of it) says nothing about the job, which must not be ended as lost for it.
fn runner_status(status: u16, body: &[u8]) -> Result<(), BackendError> {
    if status == 404 {
        let code = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v["error"]["code"].as_str().map(String::from));
        if code.as_deref() != Some("no_such_job") {
            return Err(BackendError::Protocol(format!(
                "HTTP 404 that names no job: {}",
                String::from_utf8_lossy(&body[..body.len().min(200)])
            )));
        }
    }
    common_status(status, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::config::BackendKind;
    use std::collections::BTreeMap;

    #[test]
    fn health_is_authenticated_with_the_shared_secret() {
        let call = runner().health();
        assert_eq!(call.url, "http://127.0.0.1:9/health");
        assert!(
            call.headers
                .contains(&("authorization".into(), "Bearer s3".into()))
        );
    }

    #[test]
    fn finds_a_job_by_the_edge_id_it_was_submitted_under() {
        let r = runner();
        let call = r.find("0123abcd");
        assert_eq!(
            (call.method, call.url.as_str()),
            ("GET", "http://127.0.0.1:9/jobs?job_id=0123abcd")
        );
        // Only safe characters reach the URL.
        assert!(r.find("a&b=c/../d").url.ends_with("?job_id=abcd"));
        let body = br#"[{"id": "rj-1", "job_id": "other", "state": "running"},
                        {"id": "rj-2", "job_id": "0123abcd", "state": "queued"}]"#;
        assert_eq!(
            r.parse_find("0123abcd", 200, body),
            Ok(Some(Submitted {
                remote_id: "rj-2".into(),
                state: JobState::Queued
            }))
        );
        assert_eq!(r.parse_find("nope", 200, body), Ok(None));
        assert_eq!(r.parse_find("x", 200, b"[]"), Ok(None));
        assert!(matches!(
            r.parse_find("x", 503, b"down"),
            Err(BackendError::Unavailable(_))
        ));
    }

    fn runner() -> RunnerBackend {
        RunnerBackend::new(&BackendConfig {
            name: "local".into(),
            kind: BackendKind::Runner,
            url: "http://127.0.0.1:9".into(),
            secret: "s3".into(),
            cards: BTreeMap::new(),
            ..BackendConfig::default()
        })
    }

    #[test]
    fn builds_the_submission() {
        let job = crate::backends::adapter::test_dispatch(
            "j1",
            include_str!("../../../jobspec/specs/tiny-train-stories260k.toml"),
        );
        let call = runner().submit(&job).unwrap();
        assert_eq!(call.method, "POST");
        assert_eq!(call.url, "http://127.0.0.1:9/jobs");
        assert!(
            call.headers
                .contains(&("authorization".into(), "Bearer s3".into()))
        );
        let body: SubmitJob = serde_json::from_str(call.body.as_deref().unwrap()).unwrap();
        assert_eq!(body.job_id, "j1");
        assert_eq!(body.task, "tiny-train");
        assert_eq!(body.time_limit_s, 1800);
        assert_eq!(body.report_token.as_deref(), Some("tok"));
        assert_eq!(body.command, None);
        // The runner reads back exactly the spec the edge validated.
        let (again, _) = jobspec::validate_toml(&body.spec_toml);
        assert_eq!(again.as_ref(), Some(&job.spec));
    }

    #[test]
    fn a_trainer_job_runs_the_specs_launch_line() {
        let job = crate::backends::adapter::test_dispatch(
            "j2",
            include_str!("../../../jobspec/specs/7b-lora-4090.toml"),
        );
        let body: SubmitJob =
            serde_json::from_str(runner().submit(&job).unwrap().body.as_deref().unwrap()).unwrap();
        assert_eq!(body.task, "command");
        let argv = body.command.unwrap();
        assert_eq!(argv[..2], ["sh", "-c"]);
        assert_eq!(argv[2], jobspec::launch::torchrun_command(&job.spec));
        assert!(argv[2].contains("onramp_train"), "{argv:?}");
        assert_eq!(body.time_limit_s, job.spec.time_limit_s());
        assert!(body.env.is_empty(), "{:?}", body.env);
        // A runner with an NVMe folder gives it to every job.
        let with_nvme = RunnerBackend::new(&BackendConfig {
            nvme_path: Some("/nvme/swap".into()),
            ..BackendConfig::default()
        });
        let body: SubmitJob =
            serde_json::from_str(with_nvme.submit(&job).unwrap().body.as_deref().unwrap()).unwrap();
        assert_eq!(body.env["ONRAMP_NVME_PATH"], "/nvme/swap");
    }

    #[test]
    fn parses_answers() {
        let r = runner();
        assert_eq!(
            r.parse_submit(201, br#"{"id":"r7","state":"queued"}"#)
                .unwrap(),
            Submitted {
                remote_id: "r7".into(),
                state: JobState::Queued
            }
        );
        let s = r
            .parse_status(200, br#"{"id":"r7","job_id":"j1","task":"tiny-train","state":"succeeded","exit_code":0,"started_at":"2030-01-01T00:00:00Z","ended_at":"2030-01-01T00:00:10Z","checkpoint":true}"#)
            .unwrap();
        assert_eq!(s.state, JobState::Succeeded);
        assert_eq!(s.ended_at_ms.unwrap() - s.started_at_ms.unwrap(), 10_000);
        assert!(s.checkpoint);
        assert_eq!(s.reason, None);
        // A job waiting for one of the runner's cards says why, as Slurm's waiting jobs do.
        let s = r
            .parse_status(
                200,
                br#"{"id":"r8","job_id":"j2","task":"tiny-train","state":"queued","reason":"CardsInUse"}"#,
            )
            .unwrap();
        assert_eq!(
            (s.state, s.reason.as_deref()),
            (JobState::Queued, Some("CardsInUse"))
        );
        assert!(s.message.unwrap().starts_with("waiting for a free card"));
        // Only the state is required: a status without the identifying fields still reads.
        let s = r
            .parse_status(
                200,
                br#"{"state":"running","started_at":"2030-01-01T00:00:00Z"}"#,
            )
            .unwrap();
        assert_eq!(s.state, JobState::Running);
        assert_eq!(
            r.parse_status(
                404,
                br#"{"error":{"code":"no_such_job","message":"no job \"r8\""}}"#
            )
            .unwrap_err(),
            BackendError::NotFound
        );
        // A 404 of a route, or of a proxy in front, ends nothing.
        for body in [
            &b""[..],
            br#"{"error":{"code":"not_found","message":"no route"}}"#,
        ] {
            assert!(matches!(
                r.parse_status(404, body).unwrap_err(),
                BackendError::Protocol(_)
            ));
        }
        assert!(matches!(
            r.parse_submit(201, b"{}").unwrap_err(),
            BackendError::Protocol(_)
        ));
        assert!(matches!(
            r.parse_cancel(200, br#"{"id":"r","state":"paused"}"#)
                .unwrap_err(),
            BackendError::Protocol(_)
        ));
        let l = r
            .parse_logs(
                200,
                br#"{"offset":0,"next_offset":3,"text":"abc","eof":false}"#,
            )
            .unwrap();
        assert_eq!(l.next_offset, 3);
        assert_eq!(
            r.logs("../x", 5).unwrap().url,
            "http://127.0.0.1:9/jobs/x/logs?offset=5"
        );
    }

    #[test]
    fn a_5xx_that_is_not_the_runners_own_refusal_may_have_taken_the_job() {
        let r = runner();
        // The runner's own 503 took nothing; one that is not the runner's (a proxy in front)
        // does not say whether the job was taken.
        assert!(matches!(
            r.parse_submit(503, br#"{"error":{"code":"assets_missing","message":"m"}}"#)
                .unwrap_err(),
            BackendError::Unavailable(_)
        ));
        assert!(matches!(
            r.parse_submit(503, b"down").unwrap_err(),
            BackendError::NoAnswer(_)
        ));
        assert!(matches!(
            r.parse_submit(401, b"").unwrap_err(),
            BackendError::Unavailable(_)
        ));
    }
    #[test]
    fn a_job_its_runner_stopped_reads_requeued_with_its_attempt() {
        let r = runner();
        // A job its runner stopped while it ran waits to run again: requeued, with its attempt
        // and when the one before stopped.
        let s = r
            .parse_status(
                200,
                br#"{"state":"requeued","started_at":"2030-01-01T00:00:00Z","reason":"RunnerRestarted","attempt":1,"requeued_at":"2030-01-01T00:00:30Z"}"#,
            )
            .unwrap();
        assert_eq!(
            (
                s.state,
                s.attempt,
                s.requeued_at_ms.map(|t| t - s.started_at_ms.unwrap())
            ),
            (JobState::Requeued, Some(1), Some(30_000))
        );
        assert!(
            s.message
                .unwrap()
                .starts_with("its runner stopped while it ran")
        );
    }

    #[test]
    fn a_backends_4xx_stays_a_4xx_with_its_reason() {
        let r = runner();
        let past_end = br#"{"error":{"code":"bad_request","message":"offset 99 is past the end of the log (3 bytes)","details":{"field":"offset"}}}"#;
        let e = r.parse_logs(400, past_end).unwrap_err();
        assert_eq!(
            e,
            BackendError::BadRequest("offset 99 is past the end of the log (3 bytes)".into())
        );
        let api = e.into_api("local");
        assert_eq!(api.status, 400);
        assert!(api.message.contains("past the end"), "{}", api.message);
        // A wrong runner secret is the platform's fault, not the client's.
        assert!(matches!(
            r.parse_logs(401, b"{}").unwrap_err(),
            BackendError::Protocol(_)
        ));
    }
}
