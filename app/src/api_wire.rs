//! What the app reads from the edge's API: the wire types of the `api` crate (accounts, credits,
//! jobs, metrics, logs, backends, experiments), the words for a job's state and a ledger kind,
//! and a refusal as the pages read it (its message by code in `refusal_words.rs`, a refused
//! spec's findings in the reader's language). Pure, so it is tested natively.

use crate::i18n::Key;
pub use crate::refusal_words::{code_key, refusal_key};
pub use api::{
    BackendList, ErrorCode, Experiment, ExperimentDeleted, Job, JobAttempt, JobList, JobState,
    Ledger, LedgerKind, LogChunk, MetricPoint, MetricsPage, PasswordChanged, Redeemed,
    ResetRequested, SavedExperiment, SignedOutEverywhere, TokenList, TokenRevoked,
    VerificationSent, Verified,
};
use serde::Deserialize;

/// `GET /api/me`, and the answer of sign-up and login.
pub use api::Account as Me;

/// The words for a job's state.
pub trait StateKey {
    fn key(self) -> Key;
}

impl StateKey for JobState {
    fn key(self) -> Key {
        match self {
            JobState::Dispatching => Key::StateDispatching,
            JobState::Queued => Key::StateQueued,
            JobState::Running => Key::StateRunning,
            JobState::Requeued => Key::StateRequeued,
            JobState::Succeeded => Key::StateSucceeded,
            JobState::Failed => Key::StateFailed,
            JobState::Cancelled => Key::StateCancelled,
            JobState::TimedOut => Key::StateTimedOut,
            JobState::Lost => Key::StateLost,
        }
    }
}

/// The backend's word on a job in `lang`: the translated reason of a queued job (why it waits)
/// or a running one (the cluster suspended it) when the edge gave one, else its message.
pub fn job_message(job: &Job, lang: crate::i18n::Lang) -> Option<String> {
    match (&job.reason_messages, job.state) {
        (Some(r), JobState::Queued | JobState::Requeued | JobState::Running) => Some(match lang {
            crate::i18n::Lang::En => r.en.clone(),
            crate::i18n::Lang::Zh => r.zh_cn.clone(),
        }),
        _ => job.message.clone(),
    }
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
        if let Ok(e) = serde_json::from_str::<api::ErrorEnvelope>(body) {
            return ApiError {
                status,
                code: e.error.code.as_str().to_string(),
                message: e.error.message,
                details: e.error.details,
            };
        }
        // A code this build does not know (a newer edge): keep it, its message fits the status.
        #[derive(Deserialize)]
        struct Newer {
            error: NewerBody,
        }
        #[derive(Deserialize)]
        struct NewerBody {
            code: String,
            message: String,
        }
        match serde_json::from_str::<Newer>(body) {
            Ok(e) => ApiError {
                status,
                code: e.error.code,
                message: e.error.message,
                details: serde_json::Value::Null,
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
    pub fn spec_problems(&self, lang: crate::i18n::Lang) -> Vec<String> {
        let Ok(d) = serde_json::from_value::<api::InvalidSpecDetails>(self.details.clone()) else {
            return Vec::new();
        };
        let said = |m: &api::Messages| match lang {
            crate::i18n::Lang::En => m.en.clone(),
            crate::i18n::Lang::Zh => m.zh_cn.clone(),
        };
        d.diagnostics
            .into_iter()
            .filter(|d| d.severity == api::Severity::Error)
            .map(|d| {
                let mut text = match d.line {
                    0 => said(&d.messages),
                    l => format!("{l}: {}", said(&d.messages)),
                };
                if let Some(help) = &d.help {
                    text.push_str(&format!(" ({})", said(help)));
                }
                text
            })
            .collect()
    }

    /// True when signing in would help.
    pub fn needs_sign_in(&self) -> bool {
        self.code == "unauthenticated"
    }
}

/// The model that `/?model=<job id>` (the job page's "open in playground") asks the playground
/// to load: the job's trained model, which the worker finds among the job's artifacts
/// ([`playable`]), else its tiny-train checkpoint through the edge, with the 512-token tokenizer
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
        config_url: None,
        shards: Vec::new(),
        job: Some(id.to_string()),
    })
}

/// What the playground can open of a job, from its artifacts.
#[derive(Debug, Clone, PartialEq)]
pub enum Playable {
    /// A Hugging Face folder (`merged/`, the merged adapter, before `model/`) with `config.json`,
    /// `model.safetensors` (or `model.safetensors.index.json` and the files it names) and
    /// `tokenizer.json`: the source with their URLs.
    Folder(crate::worker_proto::ModelSource),
    /// Only a PEFT adapter (`adapter/`), which needs its base model: merge it in the job.
    AdapterOnly,
    /// Neither: a tiny-train checkpoint, or nothing yet.
    Nothing,
}

/// [`Playable`] for job `id` with `name` from its artifact list.
pub fn playable(name: &str, list: &::api::ArtifactList) -> Playable {
    let url = |path: &str| {
        list.artifacts
            .iter()
            .find(|a| a.name == path)
            .map(|a| a.url.clone())
    };
    for folder in ["merged", "model"] {
        let file = |f: &str| url(&format!("{folder}/{f}"));
        let (Some(config), Some(tokenizer)) = (file("config.json"), file("tokenizer.json")) else {
            continue;
        };
        // One file of weights, or an index and the files it splits them over.
        let (weights, shards) = match (
            file("model.safetensors"),
            file("model.safetensors.index.json"),
        ) {
            (Some(w), _) => (w, Vec::new()),
            (None, Some(index)) => {
                let prefix = format!("{folder}/");
                let shards = list
                    .artifacts
                    .iter()
                    .filter_map(|a| {
                        let name = a.name.strip_prefix(&prefix)?;
                        let plain = !name.contains('/') && name.ends_with(".safetensors");
                        plain.then(|| (name.to_string(), a.url.clone()))
                    })
                    .collect();
                (index, shards)
            }
            (None, None) => continue,
        };
        return Playable::Folder(crate::worker_proto::ModelSource {
            name: name.to_string(),
            model_url: weights,
            tokenizer_url: tokenizer,
            config_url: Some(config),
            shards,
            job: None,
        });
    }
    if url("adapter/adapter_config.json").is_some() {
        Playable::AdapterOnly
    } else {
        Playable::Nothing
    }
}

/// A ledger kind in the user's words.
pub fn ledger_kind_key(kind: LedgerKind) -> Key {
    match kind {
        LedgerKind::Grant => Key::KindGrant,
        LedgerKind::Redeem => Key::KindRedeem,
        LedgerKind::Hold => Key::KindHold,
        LedgerKind::Capture => Key::KindCapture,
        LedgerKind::Release => Key::KindRelease,
        LedgerKind::Refund => Key::KindRefund,
    }
}

/// The `token` parameter of the verification link's query string (`?token=…`); tokens hold
/// only URL-safe characters, so nothing needs decoding.
pub fn token_from_query(search: &str) -> Option<String> {
    search
        .trim_start_matches('?')
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
        .filter(|t| !t.is_empty())
        .map(String::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verification_token_comes_from_the_query() {
        assert_eq!(
            token_from_query("?token=v1.ab.12.cd.ef"),
            Some("v1.ab.12.cd.ef".into())
        );
        assert_eq!(token_from_query("?x=1&token=abc&y=2"), Some("abc".into()));
        assert_eq!(token_from_query("?token="), None);
        assert_eq!(token_from_query(""), None);
        assert_eq!(token_from_query("?tokens=abc"), None);
    }
    use crate::i18n::Lang;

    #[test]
    fn no_code_of_the_edge_reads_as_unexpected() {
        for &c in ErrorCode::ALL {
            assert_ne!(code_key(c), Key::ErrUnexpected, "{c}");
            assert_eq!(refusal_key(c.as_str(), 500), code_key(c));
        }
        // The refusal that used to read as "unexpected".
        let e = ApiError::from_answer(
            422,
            r#"{"error":{"code":"backend_refused","message":"no node has 16 GPUs","details":null}}"#,
        );
        assert_eq!(e.key(), Key::ErrBackendRefused);
        // A code this build does not know yet keeps its spelling and reads by its status.
        let newer = ApiError::from_answer(
            409,
            r#"{"error":{"code":"new_code","message":"m","details":null}}"#,
        );
        assert_eq!(
            (newer.code.as_str(), newer.key()),
            ("new_code", Key::ErrUnexpected)
        );
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
                {"severity":"error","code":"E1","path":"a","line":3,"column":1,"message":"unknown key","messages":{"en":"unknown key","zh-CN":"未知"}},
                {"severity":"warning","code":"W1","path":"b","line":4,"column":1,"message":"just a warning","messages":{"en":"w","zh-CN":"w"}},
                {"severity":"error","code":"E2","path":"c","line":0,"column":0,"message":"no card","messages":{"en":"no card","zh-CN":"没有卡"}}]}}}"#,
        );
        assert_eq!(e.spec_problems(Lang::En), vec!["3: unknown key", "no card"]);
        // In the reader's language, with the hint the edge gave.
        assert_eq!(e.spec_problems(Lang::Zh), vec!["3: 未知", "没有卡"]);
        let hinted = ApiError::from_answer(
            422,
            r#"{"error":{"code":"invalid_spec","message":"m","details":{"diagnostics":[
                {"severity":"error","code":"bad-value","path":"eval.tasks","line":0,"column":0,"message":"no mmlu-x",
                 "messages":{"en":"no mmlu-x","zh-CN":"没有 mmlu-x"},"help":{"en":"did you mean mmlu?","zh-CN":"是不是 mmlu？"}}]}}}"#,
        );
        assert_eq!(
            hinted.spec_problems(Lang::En),
            vec!["no mmlu-x (did you mean mmlu?)"]
        );
        assert_eq!(
            hinted.spec_problems(Lang::Zh),
            vec!["没有 mmlu-x (是不是 mmlu？)"]
        );
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
        assert_eq!(job_message(&j, Lang::Zh).as_deref(), Some("Resources"));
        let waiting: Job = serde_json::from_value(serde_json::json!({
            "id": "ab", "name": "t", "state": "queued", "backend": "hpc", "card": "a100-80g", "cards": 2,
            "hold_fen": 1, "charged_fen": null, "created_at": "t", "started_at": null, "ended_at": null,
            "message": "waiting for resources", "reason": "Resources",
            "reason_messages": {"en": "waiting for resources", "zh-CN": "等待 GPU"},
            "checkpoint": false, "spec": ""
        }))
        .unwrap();
        assert_eq!(job_message(&waiting, Lang::Zh).as_deref(), Some("等待 GPU"));
        assert_eq!(
            job_message(&waiting, Lang::En).as_deref(),
            Some("waiting for resources")
        );
        // A running job the cluster suspended says so, in the page's language.
        let mut suspended = waiting.clone();
        suspended.state = JobState::Running;
        suspended.reason_messages = Some(api::Messages {
            en: "suspended by the cluster".into(),
            zh_cn: "被集群暂停".into(),
        });
        assert_eq!(
            job_message(&suspended, Lang::Zh).as_deref(),
            Some("被集群暂停")
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
        assert_eq!(m.job.as_deref(), Some("00ff12ab99"));
        assert_eq!(playground_model("?model=../../x"), None);
        assert_eq!(playground_model("?other=1"), None);
        assert_eq!(playground_model(""), None);
    }

    fn listed(names: &[&str]) -> ::api::ArtifactList {
        ::api::ArtifactList {
            job_id: "ab12".into(),
            artifacts: names
                .iter()
                .map(|n| ::api::Artifact {
                    name: n.to_string(),
                    size: 1,
                    sha256: "00".repeat(32),
                    url: ::api::artifacts::artifact_path("ab12", n),
                    stored_at: "2026-12-05T00:00:00Z".into(),
                })
                .collect(),
            uploads: Vec::new(),
            used_bytes: 0,
            quota_bytes: 1,
            retention_days: 1,
        }
    }

    #[test]
    fn the_playground_opens_a_jobs_merged_model_before_its_own_and_never_an_adapter() {
        let folder = |p: &str| {
            ["config.json", "model.safetensors", "tokenizer.json"].map(|f| format!("{p}/{f}"))
        };
        let [mc, mw, mt] = folder("model");
        let [gc, gw, gt] = folder("merged");
        let Playable::Folder(src) = playable("job ab12", &listed(&[&mc, &mw, &mt])) else {
            panic!("a model folder is playable");
        };
        assert_eq!(
            src.config_url.as_deref(),
            Some("/api/jobs/ab12/artifacts/model%2Fconfig.json")
        );
        assert_eq!(
            src.model_url,
            "/api/jobs/ab12/artifacts/model%2Fmodel.safetensors"
        );
        assert_eq!(
            src.tokenizer_url,
            "/api/jobs/ab12/artifacts/model%2Ftokenizer.json"
        );
        let both = listed(&["adapter/adapter_config.json", &gc, &gw, &gt, &mc, &mw, &mt]);
        let Playable::Folder(src) = playable("j", &both) else {
            panic!("merged is playable");
        };
        assert!(src.model_url.ends_with("merged%2Fmodel.safetensors"));
        // Weights split over files: the index, and the folder's .safetensors files by name.
        let sharded = listed(&[
            "model/config.json",
            "model/tokenizer.json",
            "model/model.safetensors.index.json",
            "model/model-00001-of-00002.safetensors",
            "model/model-00002-of-00002.safetensors",
            "model/sub/x.safetensors",
            "adapter/adapter_model.safetensors",
        ]);
        let Playable::Folder(src) = playable("j", &sharded) else {
            panic!("a sharded folder is playable");
        };
        assert!(
            src.model_url
                .ends_with("model%2Fmodel.safetensors.index.json")
        );
        let names: Vec<&str> = src.shards.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "model-00001-of-00002.safetensors",
                "model-00002-of-00002.safetensors"
            ]
        );
        assert!(
            src.shards[1]
                .1
                .ends_with("model%2Fmodel-00002-of-00002.safetensors")
        );
        // A folder without its tokenizer is not one; an adapter alone says what to do.
        assert_eq!(playable("j", &listed(&[&mc, &mw])), Playable::Nothing);
        let adapter = listed(&[
            "adapter/adapter_config.json",
            "adapter/adapter_model.safetensors",
        ]);
        assert_eq!(playable("j", &adapter), Playable::AdapterOnly);
        assert_eq!(
            playable("j", &listed(&["model.safetensors"])),
            Playable::Nothing
        );
    }

    #[test]
    fn ledger_kinds_have_words() {
        for k in LedgerKind::ALL {
            assert!(!ledger_kind_key(k).text(Lang::Zh).is_empty());
        }
    }
}
