//! The one trait every backend adapter implements, sans I/O: an adapter *builds* HTTP requests
//! and *parses* answers, and the worker performs them. So each adapter is tested natively, and
//! the worker has one code path for every kind of backend.

use crate::jobs::JobState;
use jobspec::ValidSpec;
use std::collections::BTreeMap;

/// An HTTP request for the worker to send to a backend.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpCall {
    pub method: &'static str,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
}

/// What a backend needs to start a job: the spec the edge validated (there is no way to
/// dispatch one that did not validate) and where the job reports. The card, the number of cards,
/// the time limit and what runs are the spec's, read from it by each adapter.
#[derive(Debug, Clone, PartialEq)]
pub struct Dispatch {
    pub job_id: String,
    pub spec: ValidSpec,
    /// Environment for the job beyond what its spec and the deployment give it.
    pub env: BTreeMap<String, String>,
    pub report_url: String,
    /// Where a job that pushes its own log sends it (see [`Backend::logs`]).
    pub log_url: String,
    pub report_token: String,
}

impl Dispatch {
    /// What the backend runs for this job.
    pub fn task(&self) -> Task {
        Task::of(&self.spec)
    }

    /// The job's environment over the backend's (`BackendConfig::job_env`): the job's own wins.
    pub fn env_over(&self, backend: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        let mut env = backend.clone();
        env.extend(self.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        env
    }
}

/// What a backend runs for a job, decided by its spec's task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Task {
    /// `onramp-runner tiny-train`: model-tiny trains with the spec's settings.
    TinyTrain,
    /// Every other task: `onramp-train` through the spec's launch line (jobspec's `torchrun`
    /// command, the one the Plan page shows), as this argv.
    Command(Vec<String>),
}

impl Task {
    pub fn of(spec: &ValidSpec) -> Task {
        match spec.spec().task {
            jobspec::spec::Task::TinyTrain => Task::TinyTrain,
            _ => Task::Command(vec![
                "sh".into(),
                "-c".into(),
                jobspec::launch::torchrun_command(spec),
            ]),
        }
    }
}

/// A backend's answer to a submission.
#[derive(Debug, Clone, PartialEq)]
pub struct Submitted {
    pub remote_id: String,
    pub state: JobState,
}

/// A backend's view of a job.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteStatus {
    pub state: JobState,
    pub exit_code: Option<i64>,
    pub started_at_ms: Option<i64>,
    pub ended_at_ms: Option<i64>,
    /// Of `started_at_ms..ended_at_ms`, how long the backend held the job stopped (Slurm's
    /// suspension): no card time, so never billed.
    pub suspended_ms: i64,
    /// While the backend holds the job suspended, since when (the suspensions before this one are
    /// in `suspended_ms`).
    pub suspended_since_ms: Option<i64>,
    pub checkpoint: bool,
    /// Why a queued job waits, as the backend names it (Slurm's `state_reason`, e.g. `Resources`).
    pub reason: Option<String>,
    /// What to show the user about the wait or the end (English; the reason code is the key
    /// a page translates).
    pub message: Option<String>,
    /// Which run of the job this is, counted from 0, on a backend that runs a job again after
    /// it stopped it (Slurm's requeue); none where a job runs once.
    pub attempt: Option<u32>,
    /// When the backend stopped the attempt before this one (the end of its billed time).
    pub requeued_at_ms: Option<i64>,
}

impl RemoteStatus {
    /// The times to bill the job's newest attempt by.
    pub fn span(&self) -> Span {
        Span {
            started_ms: self.started_at_ms,
            ended_ms: self.ended_at_ms,
            suspended_ms: self.suspended_ms,
        }
    }

    /// What the backend says about how the job ended: its message, else its exit code; nothing
    /// for a job that succeeded with code 0, so that what the job itself said (a warning about
    /// its data) stays on its page.
    pub fn end_words(&self) -> Option<String> {
        self.message.clone().or_else(|| match self.exit_code {
            Some(0) if self.state == JobState::Succeeded => None,
            Some(c) => Some(format!("exit code {c}")),
            None => None,
        })
    }
}

/// What a job's newest attempt is billed by: both ends as its backend saw them (else the edge's
/// own clock decides), less the time the backend held it suspended in between.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Span {
    pub started_ms: Option<i64>,
    pub ended_ms: Option<i64>,
    pub suspended_ms: i64,
}

impl Span {
    /// The card time of both ends: the span less its suspension, never below zero.
    pub fn ran_ms(started: i64, ended: i64, suspended_ms: i64) -> i64 {
        let span = ended.saturating_sub(started).max(0);
        span.saturating_sub(suspended_ms.clamp(0, span))
    }
}

/// A slice of a job's log (the wire type of the edge's API and of the runner contract).
pub use api::LogChunk;

/// Why a backend call failed. `Unavailable` becomes a 503 for the client.
#[derive(Debug, Clone, PartialEq)]
pub enum BackendError {
    Unavailable(String),
    /// The request went out and no answer came back in time: the backend may have acted on it
    /// (for a submission, the job may run there). A 503 for the client, like `Unavailable`.
    NoAnswer(String),
    /// The backend answered, but not with what the contract promises.
    Protocol(String),
    /// The backend has no such thing (a job or a checkpoint).
    NotFound,
    /// The backend found the request itself wrong (a log offset past the end, a job already
    /// ended): the client's request, passed on, so it stays a 4xx with the backend's reason.
    BadRequest(String),
    /// The backend understood the job and will not run it (e.g. Slurm: no node has that many
    /// GPUs); the reason is the backend's own.
    Refused(String),
    /// The deployment's configuration of the backend cannot make this call (e.g. a Slurm
    /// `work_dir` that is not absolute): nothing was sent. The operator's to fix, so the client
    /// sees an internal error with a request id, and no charge.
    Misconfigured(String),
}

impl BackendError {
    pub fn into_api(self, backend: &str) -> crate::error::ApiError {
        use crate::error::{ApiError, ErrorCode};
        match self {
            BackendError::Unavailable(why) | BackendError::NoAnswer(why) => ApiError::new(
                ErrorCode::BackendUnavailable,
                format!("backend {backend} is unavailable: {why}"),
            ),
            BackendError::Protocol(why) => ApiError::new(
                ErrorCode::BackendError,
                format!("backend {backend} answered unexpectedly: {why}"),
            ),
            BackendError::NotFound => {
                ApiError::not_found(format!("backend {backend} has no such item"))
            }
            BackendError::BadRequest(why) => ApiError::new(
                ErrorCode::InvalidQuery,
                format!("backend {backend} refused the request: {why}"),
            ),
            BackendError::Refused(why) => ApiError::new(
                ErrorCode::BackendRefused,
                format!("backend {backend} will not run this job: {why}"),
            ),
            BackendError::Misconfigured(why) => {
                ApiError::internal(format!("backend {backend} is misconfigured: {why}"))
            }
        }
    }
}

/// One kind of backend, sans I/O.
pub trait Backend {
    /// The submission; an error means nothing was sent (the deployment's configuration of this
    /// backend cannot carry the job).
    fn submit(&self, job: &Dispatch) -> Result<HttpCall, BackendError>;
    fn parse_submit(&self, status: u16, body: &[u8]) -> Result<Submitted, BackendError>;
    /// Looks the job up by the edge's own job id: after a submission whose answer never came,
    /// this says whether the backend has the job (and its id there) or not.
    fn find(&self, job_id: &str) -> HttpCall;
    /// `Ok(None)` when the backend answered and has no job with that id.
    fn parse_find(
        &self,
        job_id: &str,
        status: u16,
        body: &[u8],
    ) -> Result<Option<Submitted>, BackendError>;
    fn status(&self, remote_id: &str) -> HttpCall;
    fn parse_status(&self, status: u16, body: &[u8]) -> Result<RemoteStatus, BackendError>;
    /// The log read from `offset`; `None` when this kind of backend cannot serve its jobs' output
    /// and the job pushes its log to the edge instead (`POST /api/jobs/{id}/log`).
    fn logs(&self, remote_id: &str, offset: u64) -> Option<HttpCall>;
    fn parse_logs(&self, status: u16, body: &[u8]) -> Result<LogChunk, BackendError>;
    fn cancel(&self, remote_id: &str) -> HttpCall;
    fn parse_cancel(&self, status: u16, body: &[u8]) -> Result<JobState, BackendError>;
    /// Lowers a waiting job's time limit to `minutes`, when this kind of backend takes it from
    /// the edge (Slurm runs a requeued job for its whole limit again; the runner counts its
    /// attempts against the limit itself). Its answer is read by [`common_status`].
    fn limit_time(&self, _remote_id: &str, _minutes: u32) -> Option<HttpCall> {
        None
    }
    /// The checkpoint download, when this kind of backend serves one.
    fn checkpoint(&self, remote_id: &str) -> Option<HttpCall>;
    /// The backend's own health endpoint, authenticated like every other call.
    fn health(&self) -> HttpCall;
}

/// Whether a failed submission may still have reached the backend and started the job there:
/// no answer in time, or an answer that could not be read. Every other failure is a refusal
/// before anything ran.
pub fn submission_may_have_landed(e: &BackendError) -> bool {
    matches!(e, BackendError::NoAnswer(_) | BackendError::Protocol(_))
}

/// The message of a backend's error answer (`{"error": {"message": …}}`, the runner's shape), or
/// the start of its body.
fn backend_message(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(String::from))
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned())
}

/// A dispatch of the spec in `toml` (which must validate), for the adapters' tests.
#[cfg(test)]
pub fn test_dispatch(job_id: &str, toml: &str) -> Dispatch {
    let (Some(spec), diagnostics) = jobspec::validate_toml(toml) else {
        panic!("the test spec does not validate: {toml}");
    };
    assert!(diagnostics.iter().all(|d| !d.is_error()), "{diagnostics:?}");
    Dispatch {
        job_id: job_id.into(),
        spec,
        env: BTreeMap::new(),
        report_url: format!("https://edge/api/jobs/{job_id}/report"),
        log_url: format!("https://edge/api/jobs/{job_id}/log"),
        report_token: "tok".into(),
    }
}

/// Reads the status of a submission's answer, which must tell a job that cannot be there from
/// one that may be. 401, 403 and 511: the backend refused the edge's credentials, so it took
/// nothing.
/// A 5xx that the backend itself did not explain (`explained`: its own error shape, given before
/// it took anything) may come from a proxy in front of it, or from a backend that queued the job
/// and then failed to answer (slurmrestd's 502 and 504 when slurmctld timed out after queueing
/// it): the job may be there ([`submission_may_have_landed`]).
pub fn submit_status(status: u16, body: &[u8], explained: bool) -> Result<(), BackendError> {
    match status {
        401 | 403 | 511 => Err(BackendError::Unavailable(format!(
            "it refused the edge's credentials (HTTP {status}): {}",
            backend_message(body)
        ))),
        500..=599 if !explained => Err(BackendError::NoAnswer(format!(
            "HTTP {status} ({}), which does not say whether the job was taken",
            backend_message(body)
        ))),
        _ => common_status(status, body),
    }
}

/// Status codes every adapter treats alike: 404 is "no such job", 5xx is "unavailable".
pub fn common_status(status: u16, body: &[u8]) -> Result<(), BackendError> {
    match status {
        200..=299 => Ok(()),
        404 => Err(BackendError::NotFound),
        // The request was wrong for the thing it names; 401 and 403 are not here: they mean the
        // edge's own secret for the backend is wrong, which is no fault of the client's.
        400 | 409 | 416 | 422 => Err(BackendError::BadRequest(backend_message(body))),
        500..=599 => Err(BackendError::Unavailable(format!(
            "HTTP {status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        ))),
        _ => Err(BackendError::Protocol(format!(
            "HTTP {status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_submission_answered_by_a_5xx_nobody_explained_may_have_landed() {
        let landed = |status, body: &[u8], explained| {
            submission_may_have_landed(&submit_status(status, body, explained).unwrap_err())
        };
        assert!(landed(502, b"<html>Bad Gateway</html>", false));
        assert!(landed(
            504,
            br#"{"errors":[{"error":"Socket timed out"}]}"#,
            false
        ));
        // The backend's own refusal, given before it took anything.
        assert!(!landed(
            503,
            br#"{"error":{"code":"x","message":"m"}}"#,
            true
        ));
        // Credentials refused: nothing taken.
        assert!(!landed(401, b"unauthorized", false));
        assert!(!landed(403, b"", true));
        assert!(!landed(422, br#"{"error":{"message":"bad"}}"#, true));
        assert_eq!(submit_status(201, b"{}", false), Ok(()));
    }

    #[test]
    fn a_success_with_code_0_says_nothing_over_the_jobs_own_words() {
        let st = |state, exit_code, message: Option<&str>| RemoteStatus {
            state,
            exit_code,
            started_at_ms: None,
            ended_at_ms: None,
            suspended_ms: 0,
            suspended_since_ms: None,
            checkpoint: false,
            reason: None,
            message: message.map(str::to_string),
            attempt: None,
            requeued_at_ms: None,
        };
        assert_eq!(st(JobState::Succeeded, Some(0), None).end_words(), None);
        assert_eq!(
            st(JobState::Failed, Some(0), None).end_words().as_deref(),
            Some("exit code 0")
        );
        assert_eq!(
            st(JobState::Failed, Some(3), None).end_words().as_deref(),
            Some("exit code 3")
        );
        assert_eq!(
            st(JobState::Succeeded, Some(0), Some("done"))
                .end_words()
                .as_deref(),
            Some("done")
        );
    }
}
