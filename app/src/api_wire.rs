//! What the app reads from the edge's API (accounts, credits, jobs, metrics, logs, backends,
//! experiments) as wire types, and every refusal code the edge answers with turned into a
//! message the user can act on. Pure, so the mapping is tested natively.

use crate::i18n::Key;
use serde::Deserialize;
use std::collections::BTreeMap;

/// `GET /api/me`, and the answer of sign-up and login.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Me {
    pub email: String,
    pub balance_fen: i64,
}

/// `GET /api/ledger`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Ledger {
    pub balance_fen: i64,
    pub entries: Vec<LedgerEntry>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct LedgerEntry {
    pub id: i64,
    /// `grant`, `redeem`, `hold`, `capture`, `release` or `refund`.
    pub kind: String,
    pub amount_fen: i64,
    /// What the movement belongs to: `signup`, `code:WELCOME`, `job:<id>`.
    pub reference: String,
    /// RFC 3339, UTC.
    pub time: String,
}

/// `POST /api/credits/redeem`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Redeemed {
    pub amount_fen: i64,
    pub balance_fen: i64,
}

/// A job's state as the edge reports it.
pub use api::JobState;

/// The words for a job's state.
pub trait StateKey {
    fn key(self) -> Key;
}

impl StateKey for JobState {
    fn key(self) -> Key {
        match self {
            JobState::Queued => Key::StateQueued,
            JobState::Running => Key::StateRunning,
            JobState::Succeeded => Key::StateSucceeded,
            JobState::Failed => Key::StateFailed,
            JobState::Cancelled => Key::StateCancelled,
            JobState::TimedOut => Key::StateTimedOut,
            JobState::Lost => Key::StateLost,
        }
    }
}

/// One job (`GET /api/jobs/{id}`, an entry of `GET /api/jobs`, the answer of a submission).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Job {
    pub id: String,
    pub name: String,
    pub state: JobState,
    pub backend: String,
    pub card: String,
    pub cards: u32,
    pub hold_fen: i64,
    pub charged_fen: Option<i64>,
    pub created_at: String,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    /// The backend's latest word: the reason a queued job waits, or why one ended.
    pub message: Option<String>,
    /// Why a queued job waits in every language of the app, when the edge says so.
    #[serde(default)]
    pub reason_messages: Option<ReasonMessages>,
    pub checkpoint: bool,
    pub spec: String,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct ReasonMessages {
    pub en: String,
    #[serde(rename = "zh-CN")]
    pub zh_cn: String,
}

impl Job {
    /// The backend's word on this job in `lang`: the translated wait reason when there is one.
    pub fn message_in(&self, lang: crate::i18n::Lang) -> Option<String> {
        match (&self.reason_messages, self.state) {
            (Some(r), JobState::Queued) => Some(match lang {
                crate::i18n::Lang::En => r.en.clone(),
                crate::i18n::Lang::Zh => r.zh_cn.clone(),
            }),
            _ => self.message.clone(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct JobList {
    pub jobs: Vec<Job>,
}

/// One training report: the loss at a step, and the validation loss when it was measured.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct MetricPoint {
    pub step: u64,
    pub loss: f64,
    #[serde(default)]
    pub val_loss: Option<f64>,
    #[serde(default)]
    pub tokens_per_s: Option<f64>,
    #[serde(default)]
    pub elapsed_s: f64,
}

/// `GET /api/jobs/{id}/metrics?since=`: the points from `since` on, and where to ask next.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct MetricsPage {
    pub state: JobState,
    pub metrics: Vec<MetricPoint>,
    pub next_since: u64,
}

/// `GET /api/jobs/{id}/logs?offset=`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct LogChunk {
    pub offset: u64,
    pub next_offset: u64,
    pub text: String,
    pub eof: bool,
}

/// `GET /api/backends`: where jobs can run.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct BackendList {
    pub backends: Vec<BackendInfo>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct BackendInfo {
    pub name: String,
    /// `runner` or `slurm`: what the spec's `backend` key selects.
    pub kind: String,
    /// Card type → how many the backend has.
    pub cards: BTreeMap<String, u32>,
}

impl BackendList {
    /// The backends that have `cards` cards of type `card`, in the edge's order.
    pub fn offering(&self, card: &str, cards: u32) -> Vec<BackendInfo> {
        self.backends
            .iter()
            .filter(|b| b.cards.get(card).is_some_and(|n| *n >= cards))
            .cloned()
            .collect()
    }
}

/// The answer of `POST /api/experiments`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct SavedExperiment {
    pub id: String,
    pub url: String,
}

/// `GET /api/experiments/{id}`: an immutable snapshot. It holds no email and no balance.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Experiment {
    pub id: String,
    pub title: String,
    pub created_at: String,
    pub spec: String,
    pub plan: PlanSummary,
    #[serde(default)]
    pub job: Option<ExperimentJob>,
}

/// The figures of a saved plan the page shows (the snapshot holds more).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct PlanSummary {
    #[serde(default)]
    pub memory: Option<MemorySummary>,
    #[serde(default)]
    pub time: Option<TimeSummary>,
    #[serde(default)]
    pub cost: Option<CostSummary>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct MemorySummary {
    pub per_gpu: PerGpuTotal,
    pub card_bytes: u64,
    pub fits: bool,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct PerGpuTotal {
    pub total_bytes: u64,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct TimeSummary {
    pub seconds: f64,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct CostSummary {
    pub fen: u64,
    pub max_fen: u64,
}

/// The result of the job an experiment was saved from.
#[derive(Clone, Debug, PartialEq, Deserialize)]
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
}

/// An answer that is not a success: the edge's `{"error": {code, message, details}}`, or what
/// the app saw instead (`network` when no answer came, `unexpected` for an unreadable one).
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    /// HTTP status; 0 when no answer came.
    pub status: u16,
    pub code: String,
    pub message: String,
    pub details: serde_json::Value,
}

impl ApiError {
    /// Reads an error body; anything else becomes `unexpected` with the status and the start of
    /// the body, so the user sees what came back.
    pub fn from_answer(status: u16, body: &str) -> ApiError {
        #[derive(Deserialize)]
        struct Envelope {
            error: Inner,
        }
        #[derive(Deserialize)]
        struct Inner {
            code: String,
            message: String,
            #[serde(default)]
            details: serde_json::Value,
        }
        match serde_json::from_str::<Envelope>(body) {
            Ok(e) => ApiError {
                status,
                code: e.error.code,
                message: e.error.message,
                details: e.error.details,
            },
            Err(_) => ApiError {
                status,
                code: "unexpected".into(),
                message: format!(
                    "HTTP {status}: {}",
                    body.chars().take(200).collect::<String>()
                ),
                details: serde_json::Value::Null,
            },
        }
    }

    pub fn network(detail: impl Into<String>) -> ApiError {
        ApiError {
            status: 0,
            code: "network".into(),
            message: detail.into(),
            details: serde_json::Value::Null,
        }
    }

    /// The message for this refusal in the user's words.
    pub fn key(&self) -> Key {
        refusal_key(&self.code, self.status)
    }

    /// Seconds to wait, for `rate_limited`.
    pub fn retry_after_s(&self) -> Option<u64> {
        self.details["retry_after_s"].as_u64()
    }

    /// The spec problems of an `invalid_spec` refusal, as "line L: message" lines.
    pub fn spec_problems(&self) -> Vec<String> {
        self.details["diagnostics"]
            .as_array()
            .map(|list| {
                list.iter()
                    .filter(|d| d["severity"] == "error")
                    .map(|d| {
                        let msg = d["message"].as_str().unwrap_or_default();
                        match d["line"].as_u64().filter(|l| *l > 0) {
                            Some(l) => format!("{l}: {msg}"),
                            None => msg.to_string(),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// True when signing in would help.
    pub fn needs_sign_in(&self) -> bool {
        self.code == "unauthenticated"
    }
}

/// One message per refusal code the edge answers with; unknown codes fall back on the status.
pub fn refusal_key(code: &str, status: u16) -> Key {
    match code {
        "invalid_email" => Key::ErrInvalidEmail,
        "weak_password" => Key::ErrWeakPassword,
        "email_taken" => Key::ErrEmailTaken,
        "bad_credentials" => Key::ErrBadCredentials,
        "rate_limited" => Key::ErrRateLimited,
        "unauthenticated" => Key::ErrSignInFirst,
        "bad_origin" => Key::ErrBadOrigin,
        "invalid_code" => Key::ErrInvalidCode,
        "code_unknown" => Key::ErrCodeUnknown,
        "code_expired" => Key::ErrCodeExpired,
        "code_exhausted" => Key::ErrCodeExhausted,
        "code_already_redeemed" => Key::ErrCodeAlreadyRedeemed,
        "insufficient_credit" => Key::ErrInsufficientCredit,
        "backend_unavailable" => Key::ErrBackendDown,
        "backend_error" => Key::ErrBackendError,
        "no_backend" => Key::ErrNoBackend,
        "invalid_spec" => Key::ErrInvalidSpec,
        "already_finished" => Key::ErrAlreadyFinished,
        "not_dispatched" => Key::ErrNotDispatched,
        "job_not_finished" => Key::ErrJobNotFinished,
        "body_too_large" => Key::ErrTooLarge,
        "not_found" => Key::ErrNotFound,
        "network" => Key::ErrNetwork,
        _ => match status {
            401 => Key::ErrSignInFirst,
            404 => Key::ErrNotFound,
            429 => Key::ErrRateLimited,
            503 => Key::ErrBackendDown,
            _ => Key::ErrUnexpected,
        },
    }
}

/// The checkpoint that `/?model=<job id>` (the job page's "open in playground") asks the
/// playground to load: the job's checkpoint through the edge, with the 512-token tokenizer
/// tiny-train uses.
pub fn playground_model(query: &str) -> Option<crate::worker_proto::ModelSource> {
    let id = query
        .trim_start_matches('?')
        .split('&')
        .find_map(|kv| kv.strip_prefix("model="))?;
    let hex = (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit());
    hex.then(|| crate::worker_proto::ModelSource {
        name: format!("job {}", &id[..id.len().min(8)]),
        model_url: format!("/api/jobs/{id}/checkpoint"),
        tokenizer_url: crate::worker_proto::ModelSource::stories260k().tokenizer_url,
    })
}

/// Signed fen as yuan: `¥12.34`, `−¥0.50`.
pub fn fen_text(fen: i64) -> String {
    let sign = if fen < 0 { "−" } else { "" };
    format!("{sign}{}", crate::i18n::yuan(fen.unsigned_abs()))
}

/// A ledger kind in the user's words.
pub fn ledger_kind_key(kind: &str) -> Option<Key> {
    Some(match kind {
        "grant" => Key::KindGrant,
        "redeem" => Key::KindRedeem,
        "hold" => Key::KindHold,
        "capture" => Key::KindCapture,
        "release" => Key::KindRelease,
        "refund" => Key::KindRefund,
        _ => return None,
    })
}

/// An RFC 3339 time shortened for a table: `2026-11-29 18:02:03 UTC`.
pub fn short_time(rfc3339: &str) -> String {
    let t = rfc3339.trim_end_matches('Z');
    let t = t.split('.').next().unwrap_or(t);
    format!("{} UTC", t.replacen('T', " ", 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::i18n::Lang;

    #[test]
    fn every_refusal_of_the_edge_has_its_own_message() {
        let codes = [
            "invalid_email",
            "weak_password",
            "email_taken",
            "bad_credentials",
            "rate_limited",
            "unauthenticated",
            "bad_origin",
            "invalid_code",
            "code_unknown",
            "code_expired",
            "code_exhausted",
            "code_already_redeemed",
            "insufficient_credit",
            "backend_unavailable",
            "backend_error",
            "no_backend",
            "invalid_spec",
            "already_finished",
            "not_dispatched",
            "job_not_finished",
            "body_too_large",
            "not_found",
            "network",
        ];
        let keys: Vec<Key> = codes.iter().map(|c| refusal_key(c, 400)).collect();
        for (i, k) in keys.iter().enumerate() {
            assert_ne!(*k, Key::ErrUnexpected, "{} has no message", codes[i]);
            assert!(
                !keys[i + 1..].contains(k),
                "{} shares its message with another code",
                codes[i]
            );
        }
        // Codes the app does not know yet still get a message that fits the status.
        assert_eq!(refusal_key("new_code", 429), Key::ErrRateLimited);
        assert_eq!(refusal_key("new_code", 500), Key::ErrUnexpected);
    }

    #[test]
    fn reads_error_bodies_and_anything_else() {
        let e = ApiError::from_answer(
            429,
            r#"{"error":{"code":"rate_limited","message":"too many attempts; try again in 42 s","details":{"retry_after_s":42}}}"#,
        );
        assert_eq!(e.code, "rate_limited");
        assert_eq!(e.retry_after_s(), Some(42));
        assert_eq!(e.key(), Key::ErrRateLimited);
        let e = ApiError::from_answer(502, "<html>Bad gateway</html>");
        assert_eq!(e.code, "unexpected");
        assert!(e.message.starts_with("HTTP 502: <html>"), "{}", e.message);
        assert!(
            ApiError::from_answer(
                401,
                r#"{"error":{"code":"unauthenticated","message":"sign in","details":null}}"#
            )
            .needs_sign_in()
        );
    }

    #[test]
    fn invalid_spec_lists_the_errors_with_their_lines() {
        let e = ApiError::from_answer(
            422,
            r#"{"error":{"code":"invalid_spec","message":"m","details":{"diagnostics":[
                {"severity":"error","line":3,"message":"unknown key"},
                {"severity":"warning","line":4,"message":"just a warning"},
                {"severity":"error","line":0,"message":"no card"}]}}}"#,
        );
        assert_eq!(e.spec_problems(), vec!["3: unknown key", "no card"]);
    }

    #[test]
    fn wire_types_read_the_edge_answers() {
        let j: Job = serde_json::from_str(
            r#"{"id":"ab","name":"t","state":"timed_out","backend":"local","card":"cpu","cards":1,
                "hold_fen":120,"charged_fen":null,"created_at":"2026-11-29T18:00:00.000Z","started_at":null,
                "ended_at":null,"message":"Resources","checkpoint":false,"spec":"name = 't'"}"#,
        )
        .unwrap();
        assert_eq!(j.state, JobState::TimedOut);
        assert_eq!(j.message_in(Lang::Zh).as_deref(), Some("Resources"));
        let waiting: Job = serde_json::from_value(serde_json::json!({
            "id": "ab", "name": "t", "state": "queued", "backend": "hpc", "card": "a100-80g", "cards": 2,
            "hold_fen": 1, "charged_fen": null, "created_at": "t", "started_at": null, "ended_at": null,
            "message": "waiting for resources", "reason": "Resources",
            "reason_messages": {"en": "waiting for resources", "zh-CN": "等待 GPU"},
            "checkpoint": false, "spec": ""
        }))
        .unwrap();
        assert_eq!(waiting.message_in(Lang::Zh).as_deref(), Some("等待 GPU"));
        assert_eq!(
            waiting.message_in(Lang::En).as_deref(),
            Some("waiting for resources")
        );
        assert!(j.state.is_terminal() && !JobState::Running.is_terminal());
        let m: MetricsPage = serde_json::from_str(
            r#"{"job_id":"ab","state":"running","metrics":[{"step":1,"loss":2.5,"elapsed_s":0.5,"val_loss":2.7}],"next_since":2}"#,
        )
        .unwrap();
        assert_eq!(m.metrics[0].val_loss, Some(2.7));
        let b: BackendList = serde_json::from_str(
            r#"{"backends":[{"name":"local","kind":"runner","cards":{"cpu":1}},{"name":"hpc","kind":"slurm","cards":{"a100-80g":8}}]}"#,
        )
        .unwrap();
        assert_eq!(b.offering("cpu", 1).len(), 1);
        assert_eq!(b.offering("a100-80g", 16).len(), 0);
    }

    #[test]
    fn a_playground_link_names_a_job_checkpoint() {
        let m = playground_model("?model=00ff12ab99&x=1").unwrap();
        assert_eq!(m.model_url, "/api/jobs/00ff12ab99/checkpoint");
        assert_eq!(m.tokenizer_url, "/models/tok512.bin");
        assert_eq!(m.name, "job 00ff12ab");
        assert_eq!(playground_model("?model=../../x"), None);
        assert_eq!(playground_model("?other=1"), None);
        assert_eq!(playground_model(""), None);
    }

    #[test]
    fn money_times_and_kinds_read_well() {
        assert_eq!(fen_text(1234), "¥12.34");
        assert_eq!(fen_text(-50), "−¥0.50");
        assert_eq!(
            short_time("2026-11-29T18:02:03.456Z"),
            "2026-11-29 18:02:03 UTC"
        );
        for k in ["grant", "redeem", "hold", "capture", "release", "refund"] {
            let key = ledger_kind_key(k).unwrap();
            assert!(!key.text(Lang::Zh).is_empty());
        }
        assert_eq!(ledger_kind_key("other"), None);
    }
}
