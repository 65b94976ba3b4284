//! Samples of backends, jobs and their progress, experiments, and the runner contract.

use super::base::*;
use crate::*;
use serde_json::json;
use std::collections::BTreeMap;

/// Backends, the reconcile sweep and health.
pub(super) fn backends_samples() -> Vec<Sample> {
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
pub(super) fn jobs_samples() -> Vec<Sample> {
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
            "job_requeued",
            Job {
                state: JobState::Requeued,
                started_at: Some(T0.into()),
                message: Some("stopped by the cluster and requeued: it runs again from its last checkpoint; waiting for its start time (BeginTime)".into()),
                reason: Some("BeginTime".into()),
                reason_messages: Some(Messages {
                    en: "waiting for its start time (BeginTime)".into(),
                    zh_cn: "等待开始时间（BeginTime）".into(),
                }),
                attempts: vec![
                    JobAttempt {
                        attempt: 0,
                        started_at: Some(T0.into()),
                        ended_at: Some(T1.into()),
                        log_offset: Some(0),
                    },
                    JobAttempt {
                        attempt: 1,
                        started_at: None,
                        ended_at: None,
                        log_offset: None,
                    },
                ],
                ..job()
            },
        ),
        sample(
            "job_list",
            JobList {
                jobs: vec![finished.clone(), job()],
            },
        ),
    ]
}

/// A running job's metrics, logs, reports and checkpoints.
pub(super) fn job_progress_samples() -> Vec<Sample> {
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
                attempt: None,
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

/// A job's artifacts: an upload under way, the owner's list, a deletion.
pub(super) fn artifact_samples() -> Vec<Sample> {
    let sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    vec![
        sample(
            "new_upload",
            NewUpload {
                size: 20 << 20,
                sha256: sha.into(),
                part_size: Some(8 << 20),
            },
        ),
        sample(
            "upload",
            Upload {
                name: "adapter/adapter_model.safetensors".into(),
                size: 20 << 20,
                sha256: sha.into(),
                part_size: 8 << 20,
                parts: 3,
                received: 2,
                complete: false,
            },
        ),
        sample(
            "artifact_list",
            ArtifactList {
                job_id: "0f1e".into(),
                artifacts: vec![Artifact {
                    name: "adapter/adapter_model.safetensors".into(),
                    size: 20 << 20,
                    sha256: sha.into(),
                    url: "/api/jobs/0f1e/artifacts/adapter%2Fadapter_model.safetensors".into(),
                    stored_at: T1.into(),
                }],
                uploads: vec![Upload {
                    name: "merged/model.safetensors".into(),
                    size: 30 << 20,
                    sha256: sha.into(),
                    part_size: 8 << 20,
                    parts: 4,
                    received: 1,
                    complete: false,
                }],
                used_bytes: 50 << 20,
                quota_bytes: 10 << 30,
                retention_days: 30,
            },
        ),
        sample(
            "resume_checkpoint",
            ResumeCheckpoint {
                job_id: "0f1e".into(),
                step: 12,
                artifacts: vec![Artifact {
                    name: "checkpoint-12/trainer_state.json".into(),
                    size: 900,
                    sha256: sha.into(),
                    url: "/api/jobs/2a3b/resume/checkpoint-12%2Ftrainer_state.json".into(),
                    stored_at: T1.into(),
                }],
            },
        ),
        sample(
            "artifact_deleted",
            ArtifactDeleted {
                name: "log.txt".into(),
                freed_bytes: 1234,
            },
        ),
    ]
}

/// An account's datasets: a declaration, one under way, the list, a deletion.
pub(super) fn dataset_samples() -> Vec<Sample> {
    let sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    let dataset = Dataset {
        id: crate::datasets::dataset_id(sha),
        name: "alpaca_data.json".into(),
        size: 20 << 20,
        sha256: sha.into(),
        format: "alpaca".into(),
        examples: 52_002,
        tokens: 6_100_000,
        exact: true,
        part_size: 8 << 20,
        parts: 3,
        received: 3,
        complete: true,
        created_at: T1.into(),
    };
    vec![
        sample(
            "new_dataset",
            NewDataset {
                name: "alpaca_data.json".into(),
                size: 20 << 20,
                sha256: sha.into(),
                format: "alpaca".into(),
                examples: 52_002,
                tokens: 6_100_000,
                exact: true,
                part_size: None,
            },
        ),
        sample("dataset", dataset.clone()),
        sample(
            "dataset_list",
            DatasetList {
                datasets: vec![dataset],
                used_bytes: 20 << 20,
                quota_bytes: 10 << 30,
            },
        ),
        sample(
            "dataset_deleted",
            DatasetDeleted {
                id: crate::datasets::dataset_id(sha),
                freed_bytes: 20 << 20,
            },
        ),
        sample(
            "tokenizer_file_stored",
            TokenizerFileStored {
                model: "qwen2.5-7b".into(),
                name: "tokenizer.json".into(),
                size: 7_031_645,
                sha256: sha.into(),
            },
        ),
    ]
}

/// Saved experiments.
pub(super) fn experiments_samples() -> Vec<Sample> {
    let finished = finished();
    vec![
        sample(
            "new_experiment",
            NewExperiment {
                spec: "name = \"tiny\"\n".into(),
                job_id: Some("0f1e".into()),
                published: true,
                title: None,
                share_artifacts: true,
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
                    results: Some(results()),
                }),
                artifacts: vec![Artifact {
                    name: "adapter/adapter_model.safetensors".into(),
                    size: 20 << 20,
                    sha256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
                        .into(),
                    url: "/api/experiments/ab12/artifacts/adapter%2Fadapter_model.safetensors"
                        .into(),
                    stored_at: T1.into(),
                }],
                yours: false,
            },
        ),
        sample("experiment_change", ExperimentChange { published: false }),
        sample(
            "experiment_deleted",
            ExperimentDeleted {
                id: "ab12".into(),
                freed_bytes: 16 << 10,
            },
        ),
    ]
}

/// The runner contract.
pub(super) fn runner_samples() -> Vec<Sample> {
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
                attempt: 0,
                requeued_at: None,
            },
        ),
        sample(
            "runner_job_requeued",
            runner::RunnerJob {
                id: "r-2".into(),
                job_id: "0f1f".into(),
                task: runner::RunnerTask::Command,
                state: JobState::Requeued,
                exit_code: None,
                started_at: Some(T0.into()),
                ended_at: None,
                checkpoint: false,
                message: Some(
                    "its runner stopped while it ran: it runs again from its last checkpoint"
                        .into(),
                ),
                reason: Some("RunnerRestarted".into()),
                attempt: 1,
                requeued_at: Some(T1.into()),
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
                sandbox: true,
            },
        ),
    ]
}

/// What a run achieved, as a snapshot keeps it.
fn results() -> crate::results::RunResults {
    use crate::results::{
        BenchmarkRow, EvalPoint, EvalSet, Generation, ResultRow, RunResults, Sample,
    };
    RunResults {
        version: 2,
        eval_set: EvalSet {
            source: "holdout".into(),
            share: Some(0.05),
            dataset: None,
            examples: 12,
        },
        history: vec![EvalPoint {
            step: 0,
            loss: Some(3.2),
            perplexity: Some(24.5),
            token_accuracy: Some(0.31),
        }],
        table: vec![ResultRow {
            metric: "loss".into(),
            base: Some(3.2),
            trained: Some(2.1),
            change: Some(-1.1),
            higher_is_better: None,
        }],
        samples: vec![Sample {
            prompt: "Say hello".into(),
            base: Some("hello hello".into()),
            trained: Some("Hello!".into()),
        }],
        benchmarks: vec![BenchmarkRow {
            task: "arc_easy".into(),
            metric: "acc".into(),
            base: Some(0.42),
            trained: Some(0.47),
            change: Some(0.05),
            higher_is_better: Some(true),
            examples: 500,
            fewshot: 0,
        }],
        generation: Generation {
            max_new_tokens: 16,
            greedy: true,
        },
    }
}
