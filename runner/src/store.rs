//! Job records on disk: one folder per job under `<state>/jobs/<id>/` holding `job.json` (the
//! record, rewritten atomically on every change), `output.log` (the job's stdout and stderr) and,
//! for training jobs, `checkpoint/`. Records are what lets the runner's state survive a restart.

use crate::wire::{JobState, JobView, ReportTarget, Task};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Everything the runner knows about one job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    pub id: String,
    pub job_id: String,
    pub task: Task,
    pub state: JobState,
    /// The argv that runs (for tiny-train, the runner's own `tiny-train` subcommand).
    pub argv: Vec<String>,
    /// The job's own environment on top of the runner's minimal one.
    pub env: BTreeMap<String, String>,
    pub spec_toml: String,
    pub time_limit_s: u64,
    pub report: Option<ReportTarget>,
    pub created_at: String,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    pub exit_code: Option<i32>,
    /// The process group of the running job, so that a restarted runner can stop its orphans.
    pub pgid: Option<u32>,
    pub message: Option<String>,
}

/// Where the jobs live.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

const RECORD: &str = "job.json";
pub const LOG: &str = "output.log";
pub const CHECKPOINT_DIR: &str = "checkpoint";

/// Why a queued job waits on this runner, as a reason code the edge words in every language:
/// all the cards it declares are taken by running jobs.
pub const QUEUED_REASON: &str = "CardsInUse";
/// The file `GET /jobs/{id}/checkpoint` serves: model-tiny's safetensors with its config in the
/// metadata, which `model_tiny::load_weights` (and so the playground) opens as is.
pub const CHECKPOINT_FILE: &str = "model.safetensors";

impl Store {
    pub fn open(state_dir: &Path) -> Result<Store, String> {
        let root = state_dir.join("jobs");
        std::fs::create_dir_all(&root)
            .map_err(|e| format!("cannot create {}: {e}", root.display()))?;
        Ok(Store { root })
    }

    pub fn job_dir(&self, id: &str) -> PathBuf {
        self.root.join(id)
    }

    pub fn log_path(&self, id: &str) -> PathBuf {
        self.job_dir(id).join(LOG)
    }

    pub fn checkpoint_path(&self, id: &str) -> PathBuf {
        self.job_dir(id).join(CHECKPOINT_DIR).join(CHECKPOINT_FILE)
    }

    /// Whether the job left a model-tiny checkpoint: what `GET /jobs/{id}/checkpoint` serves and
    /// the playground opens. (onramp-train's result, a folder, goes to the edge as the job's
    /// artifacts: `trainer/src/onramp_train/artifacts.py`.)
    pub fn has_result(&self, id: &str) -> bool {
        self.checkpoint_path(id).is_file()
    }

    /// Creates the job's folder and writes its first record.
    pub fn create(&self, record: &JobRecord) -> Result<(), String> {
        let dir = self.job_dir(&record.id);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        self.save(record)
    }

    /// Rewrites the record atomically (a temp file renamed over it), readable by the runner only
    /// because it holds the job's report token.
    pub fn save(&self, record: &JobRecord) -> Result<(), String> {
        let path = self.job_dir(&record.id).join(RECORD);
        let tmp = path.with_extension("json.tmp");
        let bytes = serde_json::to_vec_pretty(record)
            .map_err(|e| format!("cannot serialise job {}: {e}", record.id))?;
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(&bytes)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)
        };
        write().map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// Every record on disk, oldest first. Unreadable records are reported, not dropped silently.
    pub fn load_all(&self) -> (Vec<JobRecord>, Vec<String>) {
        let mut records = Vec::new();
        let mut problems = Vec::new();
        let entries = match std::fs::read_dir(&self.root) {
            Ok(e) => e,
            Err(e) => return (records, vec![format!("{}: {e}", self.root.display())]),
        };
        for entry in entries.flatten() {
            let path = entry.path().join(RECORD);
            if !path.is_file() {
                continue;
            }
            match std::fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|b| serde_json::from_slice::<JobRecord>(&b).map_err(|e| e.to_string()))
            {
                Ok(r) => records.push(r),
                Err(e) => problems.push(format!("{}: {e}", path.display())),
            }
        }
        records.sort_by(|a, b| (&a.created_at, &a.id).cmp(&(&b.created_at, &b.id)));
        (records, problems)
    }

    pub fn view(&self, r: &JobRecord) -> JobView {
        JobView {
            id: r.id.clone(),
            job_id: r.job_id.clone(),
            task: r.task,
            state: r.state,
            exit_code: r.exit_code,
            started_at: r.started_at.clone(),
            ended_at: r.ended_at.clone(),
            checkpoint: self.has_result(&r.id),
            message: r.message.clone(),
            reason: (r.state == JobState::Queued).then(|| QUEUED_REASON.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn record(id: &str, state: JobState) -> JobRecord {
        JobRecord {
            id: id.into(),
            job_id: format!("edge-{id}"),
            task: Task::Command,
            state,
            argv: vec!["true".into()],
            env: BTreeMap::new(),
            spec_toml: String::new(),
            time_limit_s: 10,
            report: None,
            created_at: format!("2026-01-01T00:00:0{}Z", id.len()),
            started_at: None,
            ended_at: None,
            exit_code: None,
            pgid: None,
            message: None,
        }
    }

    #[test]
    fn records_round_trip_and_bad_ones_are_reported() {
        let dir = std::env::temp_dir().join(format!("runner-store-{}", std::process::id()));
        let store = Store::open(&dir).unwrap();
        let mut a = record("a", JobState::Queued);
        store.create(&a).unwrap();
        a.state = JobState::Running;
        store.save(&a).unwrap();
        store.create(&record("bb", JobState::Succeeded)).unwrap();
        std::fs::create_dir_all(store.job_dir("broken")).unwrap();
        std::fs::write(store.job_dir("broken").join(RECORD), b"{").unwrap();
        let (records, problems) = store.load_all();
        assert_eq!(records, vec![a, record("bb", JobState::Succeeded)]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("broken"), "{problems:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
