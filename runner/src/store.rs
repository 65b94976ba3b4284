//! Job records on disk: one folder per job under `<state>/jobs/<id>/`, the job's own, holding
//! `output.log` (the job's stdout and stderr), what the job writes and, for tiny-train,
//! `checkpoint/`; and the job's record beside those folders, `<state>/records/<id>.json`,
//! rewritten atomically on every change. Records are what lets the runner's state survive a
//! restart. A record never lies in the job's folder: the job may write there, and the sandbox
//! (`sandbox.rs`) cannot keep a file read-only that the runner replaces by a rename (the rename
//! dissolves a bind mount over it in the job's namespace). A record that an earlier runner left
//! in the job's folder (`jobs/<id>/job.json`) is moved to `records/` when the store opens.

use crate::confined::How;
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
    /// Which run of the job this is, from 0: a job active when its runner stopped runs again
    /// (`jobs::requeue`). `started_at` is the current attempt's start.
    #[serde(default)]
    pub attempt: u32,
    /// When the attempt before this one stopped.
    #[serde(default)]
    pub requeued_at: Option<String>,
    /// Seconds the earlier attempts ran: the time limit is for all attempts together.
    #[serde(default)]
    pub used_s: u64,
}

/// The most runs of one job on a runner: a job active each time its runner stops (one that
/// brings the machine down, say) is not run for ever.
pub const MAX_ATTEMPTS: u32 = 10;

/// What a job's record says once its runner stopped while it ran.
pub const REQUEUED_MESSAGE: &str =
    "its runner stopped while it ran: it runs again from its last checkpoint";

impl JobRecord {
    /// The runner stopped while this job ran (a crash, found when the next runner opens its
    /// records, or a shutdown that stopped the job): it runs again as its next attempt, from its
    /// last checkpoint. The attempt's time counts against the job's time limit. A job that was
    /// not running is left as it is.
    pub fn requeue(&mut self, now: std::time::SystemTime) {
        if self.state != JobState::Running {
            return;
        }
        let now_s = now
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let started_s = self
            .started_at
            .as_deref()
            .and_then(api::time::parse_rfc3339_ms)
            .and_then(|ms| u64::try_from(ms / 1000).ok());
        let ran = started_s.map_or(0, |s| now_s.saturating_sub(s));
        self.used_s = self.used_s.saturating_add(ran);
        self.attempt = self.attempt.saturating_add(1);
        self.requeued_at = Some(crate::clock::rfc3339(now));
        self.state = JobState::Requeued;
        self.message = Some(REQUEUED_MESSAGE.into());
    }

    /// Whether the job may not run again: its next attempt would pass [`MAX_ATTEMPTS`] (a job
    /// the runner stopped under it that often, on a crash or a shutdown).
    pub fn out_of_attempts(&self) -> bool {
        let next = match self.state {
            JobState::Running => self.attempt.saturating_add(1),
            _ => self.attempt,
        };
        !self.state.is_terminal() && next >= MAX_ATTEMPTS
    }

    /// How long this attempt may run: what its earlier attempts left of the time limit.
    pub fn time_left_s(&self) -> u64 {
        self.time_limit_s.saturating_sub(self.used_s)
    }
}

/// Where the jobs live.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    records: PathBuf,
}

/// Where an earlier runner kept a job's record, in the job's folder.
const LEGACY_RECORD: &str = "job.json";
pub const LOG: &str = "output.log";
pub const CHECKPOINT_DIR: &str = "checkpoint";

/// Why a queued job waits on this runner, as a reason code the edge words in every language:
/// all the cards it declares are taken by running jobs.
pub const QUEUED_REASON: &str = "CardsInUse";
/// Why a job waits to run again: its runner stopped while it was active, and this one runs it
/// again from its last checkpoint.
pub const REQUEUED_REASON: &str = "RunnerRestarted";
/// The file `GET /jobs/{id}/checkpoint` serves: model-tiny's safetensors with its config in the
/// metadata, which `model_tiny::load_weights` (and so the playground) opens as is.
pub const CHECKPOINT_FILE: &str = "model.safetensors";

impl Store {
    pub fn open(state_dir: &Path) -> Result<Store, String> {
        let root = state_dir.join("jobs");
        let records = state_dir.join("records");
        for dir in [&root, &records] {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let store = Store { root, records };
        store.move_legacy_records()?;
        Ok(store)
    }

    /// Moves the records an earlier runner kept in the jobs' folders to `records/`.
    fn move_legacy_records(&self) -> Result<(), String> {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return Ok(());
        };
        for entry in entries.flatten() {
            let legacy = entry.path().join(LEGACY_RECORD);
            let Some(id) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if legacy.is_file() && !self.record_path(&id).exists() {
                std::fs::rename(&legacy, self.record_path(&id))
                    .map_err(|e| format!("cannot move {}: {e}", legacy.display()))?;
            }
        }
        Ok(())
    }

    fn record_path(&self, id: &str) -> PathBuf {
        self.records.join(format!("{id}.json"))
    }

    pub fn job_dir(&self, id: &str) -> PathBuf {
        self.root.join(id)
    }

    /// The job's log, opened to read without following a link the job put in its place
    /// (`confined`).
    pub fn open_log(&self, id: &str) -> std::io::Result<std::fs::File> {
        crate::confined::open(&self.job_dir(id), Path::new(LOG), How::Read)
    }

    /// The job's model-tiny checkpoint, opened to read as [`Self::open_log`] opens the log.
    pub fn open_checkpoint(&self, id: &str) -> std::io::Result<std::fs::File> {
        let rel = Path::new(CHECKPOINT_DIR).join(CHECKPOINT_FILE);
        crate::confined::open(&self.job_dir(id), &rel, How::Read)
    }

    /// Whether the job left a model-tiny checkpoint: what `GET /jobs/{id}/checkpoint` serves and
    /// the playground opens. (onramp-train's result, a folder, goes to the edge as the job's
    /// artifacts: `trainer/src/onramp_train/artifacts.py`.)
    pub fn has_result(&self, id: &str) -> bool {
        self.open_checkpoint(id).is_ok()
    }

    /// Creates the job's folder (its owner's only: it holds a tenant's data and model) and
    /// writes its first record.
    pub fn create(&self, record: &JobRecord) -> Result<(), String> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = self.job_dir(&record.id);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        self.save(record)
    }

    /// Rewrites the record atomically (a temp file renamed over it), readable by the runner only
    /// because it holds the job's report token.
    pub fn save(&self, record: &JobRecord) -> Result<(), String> {
        let path = self.record_path(&record.id);
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
            std::fs::rename(&tmp, &path)?;
            // The rename itself made durable: after a power loss the record is the new one.
            std::fs::File::open(&self.records)?.sync_all()
        };
        write().map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    /// Every record on disk, oldest first. Unreadable records are reported, not dropped silently.
    pub fn load_all(&self) -> (Vec<JobRecord>, Vec<String>) {
        let mut records = Vec::new();
        let mut problems = Vec::new();
        let entries = match std::fs::read_dir(&self.records) {
            Ok(e) => e,
            Err(e) => return (records, vec![format!("{}: {e}", self.records.display())]),
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.is_file() || path.extension().is_none_or(|e| e != "json") {
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
            reason: match r.state {
                JobState::Queued => Some(QUEUED_REASON.to_string()),
                JobState::Requeued => Some(REQUEUED_REASON.to_string()),
                _ => None,
            },
            attempt: r.attempt,
            requeued_at: r.requeued_at.clone(),
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
            attempt: 0,
            requeued_at: None,
            used_s: 0,
        }
    }

    #[test]
    fn a_running_job_requeued_counts_its_time_and_a_waiting_one_is_left() {
        let at = |s: u64| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s);
        let mut r = record("a", JobState::Running);
        r.time_limit_s = 100;
        r.started_at = Some(crate::clock::rfc3339(at(1_000)));
        r.requeue(at(1_030));
        assert_eq!(
            (r.state, r.attempt, r.used_s, r.time_left_s()),
            (JobState::Requeued, 1, 30, 70)
        );
        assert_eq!(r.requeued_at.as_deref(), Some("1970-01-01T00:17:10.000Z"));
        // Its second attempt runs from 2000 s until the runner stops again at 2080 s: its time
        // limit is spent.
        r.state = JobState::Running;
        r.started_at = Some(crate::clock::rfc3339(at(2_000)));
        r.requeue(at(2_080));
        assert_eq!((r.attempt, r.used_s, r.time_left_s()), (2, 110, 0));
        // Ten runs at most, however the runner stopped under the job.
        let mut r = record("n", JobState::Running);
        r.attempt = MAX_ATTEMPTS - 2;
        assert!(!r.out_of_attempts());
        r.attempt = MAX_ATTEMPTS - 1;
        assert!(r.out_of_attempts());
        r.state = JobState::Requeued;
        assert!(!r.out_of_attempts());
        r.attempt = MAX_ATTEMPTS;
        assert!(r.out_of_attempts());
        r.state = JobState::Succeeded;
        assert!(!r.out_of_attempts());
        let mut q = record("q", JobState::Queued);
        q.requeue(at(5));
        assert_eq!(q, record("q", JobState::Queued));
        // A clock that went back counts nothing.
        let mut b = record("b", JobState::Running);
        b.started_at = Some(crate::clock::rfc3339(at(50)));
        b.requeue(at(10));
        assert_eq!((b.attempt, b.used_s), (1, 0));
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
        std::fs::write(store.record_path("broken"), b"{").unwrap();
        let (records, problems) = store.load_all();
        assert_eq!(records, vec![a, record("bb", JobState::Succeeded)]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("broken"), "{problems:?}");
        // No record lies in a job's folder, where the job could write it.
        assert!(!store.job_dir("a").join(LEGACY_RECORD).exists());
        // A job's folder is its owner's only: another user of the machine reads nothing in it.
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(store.job_dir("a"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_record_an_earlier_runner_left_in_the_jobs_folder_is_moved_out_of_it() {
        let dir = std::env::temp_dir().join(format!("runner-legacy-{}", std::process::id()));
        let old = record("old", JobState::Running);
        std::fs::create_dir_all(dir.join("jobs/old")).unwrap();
        std::fs::write(
            dir.join("jobs/old").join(LEGACY_RECORD),
            serde_json::to_vec(&old).unwrap(),
        )
        .unwrap();
        let store = Store::open(&dir).unwrap();
        assert!(!store.job_dir("old").join(LEGACY_RECORD).exists());
        assert_eq!(store.load_all(), (vec![old], vec![]));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
