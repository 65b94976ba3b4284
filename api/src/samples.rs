//! One sample of each wire type, as the edge or the runner would send it: the golden files under
//! `golden/` pin their JSON, and the schema tests (here and in the edge) check them against the
//! generated schemas.

use crate::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// A sample value of a wire type, serialised, with the type's schema and the components its
/// `$ref`s point into.
pub struct Sample {
    /// The golden file's name, without `.json`.
    pub name: &'static str,
    pub json: Value,
    /// Builds `(document, schema)` for [`crate::schema::check`].
    pub schema: Box<dyn Fn() -> (Value, Value)>,
    /// Whether the JSON reads back as the same value.
    pub round_trips: bool,
}

fn sample<T>(name: &'static str, value: T) -> Sample
where
    T: Serialize + DeserializeOwned + PartialEq + schemars::JsonSchema + 'static,
{
    let json = serde_json::to_value(&value).unwrap_or(Value::Null);
    let round_trips = serde_json::from_value::<T>(json.clone()).is_ok_and(|back| back == value);
    Sample {
        name,
        json,
        schema: Box::new(|| {
            let mut s = schema::Schemas::new();
            let schema = s.of::<T>();
            (
                json!({"components": {"schemas": s.into_components()}}),
                schema,
            )
        }),
        round_trips,
    }
}

const T0: &str = "2026-11-29T18:00:00.000Z";
const T1: &str = "2026-11-29T18:02:03.456Z";

pub fn job() -> Job {
    Job {
        id: "0f1e2d3c4b5a69788796a5b4c3d2e1f0".into(),
        name: "tiny".into(),
        state: JobState::Queued,
        backend: "hpc".into(),
        card: "a100-80g".into(),
        cards: 2,
        hold_fen: 1200,
        charged_fen: None,
        created_at: T0.into(),
        started_at: None,
        ended_at: None,
        message: Some("waiting for resources: not enough free GPUs or nodes right now".into()),
        reason: Some("Resources".into()),
        reason_messages: Some(Messages {
            en: "waiting for resources: not enough free GPUs or nodes right now".into(),
            zh_cn: "等待资源：目前空闲的 GPU 或节点不足".into(),
        }),
        checkpoint: false,
        spec: "name = \"tiny\"\ntask = \"tiny-train\"\n".into(),
    }
}

fn metric() -> MetricPoint {
    MetricPoint {
        step: 10,
        loss: 2.5,
        val_loss: Some(2.75),
        lr: Some(0.001),
        tokens_per_s: Some(1500.0),
        elapsed_s: 3.5,
        grad_norm: None,
        epoch: None,
        peak_mem_bytes: None,
    }
}

fn diagnostic() -> SpecDiagnostic {
    SpecDiagnostic {
        severity: Severity::Error,
        code: "E_UNKNOWN_CARD".into(),
        path: "resources.card".into(),
        message: "unknown card `H900`".into(),
        messages: Messages {
            en: "unknown card `H900`".into(),
            zh_cn: "未知的卡型 `H900`".into(),
        },
        help: Some(Messages {
            en: "did you mean `h100`?".into(),
            zh_cn: "是否想用 `h100`？".into(),
        }),
        line: 7,
        column: 8,
    }
}

/// A job that ran and succeeded.
fn finished() -> Job {
    Job {
        state: JobState::Succeeded,
        charged_fen: Some(7),
        started_at: Some(T0.into()),
        ended_at: Some(T1.into()),
        message: None,
        reason: None,
        reason_messages: None,
        checkpoint: true,
        ..job()
    }
}

fn cards() -> BTreeMap<String, u32> {
    [("a100-80g".to_string(), 8)].into()
}

/// Every sample, one per wire type.
pub fn all() -> Vec<Sample> {
    [
        errors(),
        accounts_samples(),
        credits_samples(),
        refund_samples(),
        backends_samples(),
        jobs_samples(),
        job_progress_samples(),
        experiments_samples(),
        runner_samples(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The error envelope and an invalid spec's details.
fn errors() -> Vec<Sample> {
    vec![
        sample(
            "error",
            ErrorEnvelope {
                error: ErrorBody {
                    code: ErrorCode::RateLimited,
                    message: "too many attempts; try again in 42 s".into(),
                    details: json!({"retry_after_s": 42}),
                },
            },
        ),
        sample(
            "invalid_spec_details",
            InvalidSpecDetails {
                diagnostics: vec![diagnostic()],
            },
        ),
    ]
}

/// Accounts: sign-up and login, verification, the outbox, tokens.
fn accounts_samples() -> Vec<Sample> {
    vec![
        sample(
            "credentials",
            Credentials {
                email: "ada@example.com".into(),
                password: "correct horse battery".into(),
            },
        ),
        sample(
            "account",
            Account {
                email: "ada@example.com".into(),
                balance_fen: 1000,
                email_verified: true,
            },
        ),
        sample(
            "verify_request",
            VerifyRequest {
                token: "v1.00ff.1767225600.6164614065.4f2a".into(),
            },
        ),
        sample(
            "verified",
            Verified {
                email: "ada@example.com".into(),
                granted_fen: 1000,
                balance_fen: 1000,
            },
        ),
        sample(
            "verification_sent",
            VerificationSent {
                to: "ada@example.com".into(),
                expires_at: T1.into(),
            },
        ),
        sample(
            "outbox",
            Outbox {
                mails: vec![OutboxMail {
                    to: "ada@example.com".into(),
                    subject: "Verify your email for Onramp".into(),
                    text: "Open http://127.0.0.1:8787/verify?token=v1.00ff to verify.".into(),
                    sent_at: T0.into(),
                }],
            },
        ),
        sample("signed_out", SignedOut { signed_out: true }),
        sample(
            "new_token",
            NewToken {
                name: "laptop".into(),
            },
        ),
        sample(
            "token_created",
            TokenCreated {
                token: "onr_00ff".into(),
                name: "laptop".into(),
            },
        ),
    ]
}

/// Credits: the ledger, promotion codes, refunds.
fn credits_samples() -> Vec<Sample> {
    vec![
        sample(
            "ledger",
            Ledger {
                balance_fen: 800,
                entries: vec![
                    LedgerEntry {
                        id: 2,
                        kind: LedgerKind::Hold,
                        amount_fen: -200,
                        reference: "job:0f1e".into(),
                        time: T1.into(),
                    },
                    LedgerEntry {
                        id: 1,
                        kind: LedgerKind::Grant,
                        amount_fen: 1000,
                        reference: "signup".into(),
                        time: T0.into(),
                    },
                ],
            },
        ),
        sample(
            "redeem_request",
            RedeemRequest {
                code: "WELCOME".into(),
            },
        ),
        sample(
            "redeemed",
            Redeemed {
                amount_fen: 500,
                balance_fen: 1500,
            },
        ),
        sample(
            "new_promo_code",
            NewPromoCode {
                code: "WELCOME".into(),
                amount_fen: 500,
                max_redemptions: 100,
                expires_at: Some("2030-01-01T00:00:00Z".into()),
            },
        ),
        sample(
            "promo_code_created",
            PromoCodeCreated {
                code: "WELCOME".into(),
                amount_fen: 500,
                max_redemptions: 100,
                expires_at: Some("2030-01-01T00:00:00.000Z".into()),
            },
        ),
    ]
}

/// Refunds an operator makes.
fn refund_samples() -> Vec<Sample> {
    vec![
        sample(
            "refund_request",
            RefundRequest {
                job_id: "0f1e".into(),
                amount_fen: 5,
                reason: "node failure".into(),
            },
        ),
        sample(
            "refund_answer",
            RefundAnswer {
                refund: Refund {
                    key: "r-1".into(),
                    job_id: "0f1e".into(),
                    amount_fen: 5,
                    reason: "node failure".into(),
                    time: T1.into(),
                },
                replayed: false,
                captured_fen: 7,
                refunded_fen: 5,
                refundable_fen: 2,
                balance_fen: 998,
            },
        ),
    ]
}

/// Backends, the reconcile sweep and health.
fn backends_samples() -> Vec<Sample> {
    vec![
        sample(
            "backend_list",
            BackendList {
                backends: vec![PublicBackend {
                    name: "hpc".into(),
                    kind: BackendKind::Slurm,
                    cards: cards(),
                }],
            },
        ),
        sample(
            "admin_backend_list",
            AdminBackendList {
                backends: vec![AdminBackend {
                    name: "local".into(),
                    kind: BackendKind::Runner,
                    url: "http://127.0.0.1:8788".into(),
                    cards: [("cpu".to_string(), 1)].into(),
                }],
            },
        ),
        sample(
            "reconciled",
            Reconciled {
                checked: 3,
                finished: 1,
                unreachable: 1,
                resettled: 0,
            },
        ),
        sample(
            "liveness",
            Liveness {
                ok: true,
                service: "onramp-edge".into(),
                version: "0.1.0".into(),
            },
        ),
        sample(
            "health",
            HealthReport {
                ok: true,
                service: "onramp-edge".into(),
                version: "0.1.0".into(),
                bindings: Bindings {
                    d1: Check::from_result(Ok("4 migrations".into())),
                    kv: Check::from_result(Ok("round trip".into())),
                    durable_object: Check::from_result(Err("no answer".into())),
                },
                backends: vec![BackendHealth {
                    name: "local".into(),
                    kind: BackendKind::Runner,
                    reachable: true,
                    detail: "onramp-runner 0.1.0".into(),
                }],
            },
        ),
    ]
}

/// Jobs: submission, the job and its list, metrics, logs, reports, checkpoints.
fn jobs_samples() -> Vec<Sample> {
    let finished = finished();
    vec![
        sample(
            "submit_request_toml",
            SubmitRequest {
                spec: SpecBody::Toml("name = \"tiny\"\n".into()),
            },
        ),
        sample(
            "submit_request_json",
            SubmitRequest {
                spec: SpecBody::Json(
                    json!({"name": "tiny", "task": "tiny-train"})
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                ),
            },
        ),
        sample("job", job()),
        sample(
            "job_list",
            JobList {
                jobs: vec![finished.clone(), job()],
            },
        ),
    ]
}

/// A running job's metrics, logs, reports and checkpoints.
fn job_progress_samples() -> Vec<Sample> {
    vec![
        sample(
            "metrics_page",
            MetricsPage {
                job_id: "0f1e".into(),
                state: JobState::Running,
                metrics: vec![
                    metric(),
                    MetricPoint {
                        step: 11,
                        val_loss: None,
                        lr: None,
                        tokens_per_s: None,
                        ..metric()
                    },
                ],
                next_since: 12,
            },
        ),
        sample(
            "log_chunk",
            LogChunk {
                offset: 0,
                next_offset: 12,
                text: "step 1 loss\n".into(),
                eof: false,
            },
        ),
        sample(
            "report",
            Report {
                state: Some(JobState::Running),
                metrics: vec![metric()],
                message: None,
            },
        ),
        sample(
            "report_accepted",
            ReportAccepted {
                state: JobState::Running,
                metrics_stored: 1,
            },
        ),
        sample(
            "log_accepted",
            LogAccepted {
                next_offset: 12,
                stored: 12,
                dropped: 0,
                limit_bytes: 4 << 20,
            },
        ),
        sample(
            "checkpoint_list",
            CheckpointList {
                checkpoints: vec![CheckpointEntry {
                    job_id: "0f1e".into(),
                    name: "tiny".into(),
                    url: "/api/jobs/0f1e/checkpoint".into(),
                    ended_at: Some(T1.into()),
                }],
            },
        ),
    ]
}

/// Saved experiments.
fn experiments_samples() -> Vec<Sample> {
    let finished = finished();
    vec![
        sample(
            "new_experiment",
            NewExperiment {
                spec: "name = \"tiny\"\n".into(),
                job_id: Some("0f1e".into()),
                published: true,
                title: None,
            },
        ),
        sample(
            "saved_experiment",
            SavedExperiment {
                id: "ab12".into(),
                url: "/e/ab12".into(),
                published: true,
            },
        ),
        sample(
            "experiment",
            Experiment {
                id: "ab12".into(),
                title: "tiny".into(),
                created_at: T1.into(),
                published: true,
                spec: "name = \"tiny\"\n".into(),
                plan: json!({"ok": true, "memory": {"per_gpu": {"total_bytes": 1024}, "card_bytes": 4096, "fits": true},
                         "time": {"seconds": 12.5}, "cost": {"fen": 3, "max_fen": 9}}),
                job: Some(ExperimentJob {
                    state: finished.state,
                    card: finished.card.clone(),
                    cards: finished.cards,
                    charged_fen: finished.charged_fen,
                    started_at: finished.started_at.clone(),
                    ended_at: finished.ended_at.clone(),
                    message: None,
                    metrics: vec![metric()],
                }),
            },
        ),
    ]
}

/// The runner contract.
fn runner_samples() -> Vec<Sample> {
    vec![
        sample(
            "runner_submit",
            runner::SubmitJob {
                job_id: "0f1e".into(),
                task: runner::RunnerTask::TinyTrain.as_str().into(),
                spec_toml: "name = \"tiny\"\n".into(),
                command: None,
                env: BTreeMap::new(),
                time_limit_s: 600,
                report_url: Some("http://127.0.0.1:8787/api/jobs/0f1e/report".into()),
                report_token: Some("t0k".into()),
            },
        ),
        sample(
            "runner_job_ref",
            runner::JobRef {
                id: "r-1".into(),
                state: JobState::Running,
            },
        ),
        sample(
            "runner_job",
            runner::RunnerJob {
                id: "r-1".into(),
                job_id: "0f1e".into(),
                task: runner::RunnerTask::Command,
                state: JobState::Failed,
                exit_code: Some(2),
                started_at: Some(T0.into()),
                ended_at: Some(T1.into()),
                checkpoint: false,
                message: Some("exit code 2".into()),
                reason: None,
            },
        ),
        sample(
            "runner_health",
            runner::RunnerHealth {
                ok: true,
                service: "onramp-runner".into(),
                version: "0.1.0".into(),
                resources: runner::Resources {
                    cpus: 2,
                    gpus: 0,
                    memory_bytes: 1 << 30,
                    running_jobs: 0,
                },
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    #[test]
    fn golden_json_pins_every_wire_shape() {
        for s in super::all() {
            assert!(s.round_trips, "{} does not read back as itself", s.name);
            let text = serde_json::to_string_pretty(&s.json).unwrap_or_default() + "\n";
            expect_test::expect_file![format!("../golden/{}.json", s.name)].assert_eq(&text);
        }
    }
}
