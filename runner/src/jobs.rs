//! The job registry: accepts submissions, keeps every job's record (in memory and on disk),
//! answers queries, forwards cancels to the job's supervisor, and on start-up carries on with the
//! jobs a previous runner left queued or running (a running one runs again from its checkpoint).

use crate::assets::Assets;
use crate::clock::now_rfc3339;
use crate::error::ApiError;
use crate::report::{self, Report};
use crate::store::{JobRecord, MAX_ATTEMPTS, Store};
use crate::supervise::{self, Stop};
use crate::wire::{JobRef, JobRequest, JobState, JobView, Task};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};
use tokio::sync::{Semaphore, mpsc, watch};

pub use crate::store::QUEUED_REASON;

/// One job in memory: its record, and while it is active, the way to stop it.
struct Entry {
    record: JobRecord,
    stop: Option<mpsc::UnboundedSender<Stop>>,
    done: watch::Receiver<bool>,
}

/// The runner's jobs.
pub struct Runner {
    pub store: Store,
    pub assets: Assets,
    /// The runner's own executable, started as `onramp-runner tiny-train` for training jobs.
    pub exe: PathBuf,
    /// One permit per declared card; a job holds one while it runs, the others wait as
    /// `queued` (with [`QUEUED_REASON`] as the reason).
    pub slots: Arc<Semaphore>,
    /// The sandbox jobs run in, where there is one (`sandbox.rs`).
    pub sandbox: Option<crate::sandbox::Sandbox>,
    jobs: Mutex<BTreeMap<String, Entry>>,
    /// Reports still being posted; shutdown gives them a moment to go out.
    pending_reports: watch::Sender<usize>,
}

impl Runner {
    /// Loads the records on disk and carries on with the jobs a previous runner left active:
    /// a queued job waits again; a running one is requeued (`JobRecord::requeue`) and runs again
    /// from its last checkpoint once what the previous runner left of it has stopped. A job the
    /// runner stopped [`MAX_ATTEMPTS`] times under it is lost instead, and the edge is told.
    pub fn open(
        store: Store,
        assets: Assets,
        exe: PathBuf,
        cards: usize,
        sandbox: Option<crate::sandbox::Sandbox>,
    ) -> (Arc<Runner>, Vec<String>) {
        let (records, mut problems) = store.load_all();
        let mut jobs = BTreeMap::new();
        let mut to_report = Vec::new();
        let mut to_run = Vec::new();
        for mut record in records {
            let before = record.clone();
            let mut active = !record.state.is_terminal();
            if record.out_of_attempts() {
                if let Some(pgid) = record.pgid {
                    supervise::kill_orphan_group(pgid, &store.job_dir(&record.id));
                }
                record.state = JobState::Lost;
                record.ended_at = Some(now_rfc3339());
                record.message = Some(format!(
                    "its runner stopped while it ran, {MAX_ATTEMPTS} times: it is not run again"
                ));
                record.pgid = None;
                to_report.push(record.clone());
                active = false;
            }
            record.requeue(SystemTime::now());
            if record != before
                && let Err(e) = store.save(&record)
            {
                problems.push(e);
            }
            let entry = if active {
                let (stop_tx, stop_rx) = mpsc::unbounded_channel();
                let (done_tx, done) = watch::channel(false);
                to_run.push((record.id.clone(), stop_rx, done_tx));
                Entry {
                    record,
                    stop: Some(stop_tx),
                    done,
                }
            } else {
                Entry {
                    record,
                    stop: None,
                    done: watch::channel(true).1,
                }
            };
            jobs.insert(entry.record.id.clone(), entry);
        }
        let runner = Arc::new(Runner {
            store,
            assets,
            exe,
            slots: Arc::new(Semaphore::new(cards.max(1))),
            sandbox,
            jobs: Mutex::new(jobs),
            pending_reports: watch::channel(0).0,
        });
        for record in to_report {
            runner.report_state(&record);
        }
        for (id, stop, done) in to_run {
            tokio::spawn(supervise::run(runner.clone(), id, stop, done));
        }
        (runner, problems)
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Entry>> {
        // A handler that panicked while holding the lock leaves consistent records behind (each
        // change is one assignment), so the poison is not worth refusing every later request.
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Accepts a job. A second submission with the same edge `job_id` and the same content
    /// returns the first job (the edge may retry after a timeout); different content is a 409.
    pub fn submit(self: &Arc<Self>, req: JobRequest) -> Result<JobRef, ApiError> {
        let argv = match req.task {
            Task::Command => req.command.clone(),
            Task::TinyTrain => {
                crate::tiny_args::runner_argv(&self.exe, &self.assets, &req.spec_toml)?
            }
        };
        let mut jobs = self.lock();
        if let Some(e) = jobs.values().find(|e| e.record.job_id == req.job_id) {
            let r = &e.record;
            let same = r.task == req.task
                && r.spec_toml == req.spec_toml
                && r.env == req.env
                && r.time_limit_s == req.time_limit_s
                && r.report == req.report
                && (req.task != Task::Command || r.argv == req.command);
            if !same {
                return Err(ApiError::conflict(format!(
                    "job_id {:?} was already submitted with different content (runner job {})",
                    req.job_id, r.id
                )));
            }
            return Ok(JobRef {
                id: r.id.clone(),
                state: r.state,
            });
        }
        let id = new_id();
        let record = JobRecord {
            id: id.clone(),
            job_id: req.job_id,
            task: req.task,
            state: JobState::Queued,
            argv,
            env: req.env,
            spec_toml: req.spec_toml,
            time_limit_s: req.time_limit_s,
            report: req.report,
            created_at: now_rfc3339(),
            started_at: None,
            ended_at: None,
            exit_code: None,
            pgid: None,
            message: None,
            attempt: 0,
            requeued_at: None,
            used_s: 0,
        };
        self.store.create(&record).map_err(ApiError::internal)?;
        let (stop_tx, stop_rx) = mpsc::unbounded_channel();
        let (done_tx, done_rx) = watch::channel(false);
        jobs.insert(
            id.clone(),
            Entry {
                record,
                stop: Some(stop_tx),
                done: done_rx,
            },
        );
        drop(jobs);
        tokio::spawn(supervise::run(self.clone(), id.clone(), stop_rx, done_tx));
        Ok(JobRef {
            id,
            state: JobState::Queued,
        })
    }

    /// The folder of the job the edge knows as `job_id` (its `checkpoint.resume_from` names it).
    pub fn folder_of_edge_job(&self, job_id: &str) -> Option<PathBuf> {
        self.lock()
            .values()
            .find(|e| e.record.job_id == job_id)
            .map(|e| self.store.job_dir(&e.record.id))
    }

    pub fn record(&self, id: &str) -> Option<JobRecord> {
        self.lock().get(id).map(|e| e.record.clone())
    }

    pub fn get(&self, id: &str) -> Result<JobView, ApiError> {
        self.record(id)
            .map(|r| self.store.view(&r))
            .ok_or_else(|| unknown(id))
    }

    pub fn list(&self) -> Vec<JobView> {
        let records: Vec<JobRecord> = self.lock().values().map(|e| e.record.clone()).collect();
        let mut views: Vec<JobView> = records.iter().map(|r| self.store.view(r)).collect();
        views.sort_by(|a, b| a.id.cmp(&b.id));
        views
    }

    pub fn running_jobs(&self) -> usize {
        self.lock()
            .values()
            .filter(|e| e.record.state == JobState::Running)
            .count()
    }

    /// Applies `change` to a job's record and saves it; returns the new record.
    pub fn update(&self, id: &str, change: impl FnOnce(&mut JobRecord)) -> Option<JobRecord> {
        let mut jobs = self.lock();
        let entry = jobs.get_mut(id)?;
        change(&mut entry.record);
        if let Err(e) = self.store.save(&entry.record) {
            // The in-memory record stays right; the next change rewrites the file.
            eprintln!("onramp-runner: {e}");
        }
        Some(entry.record.clone())
    }

    /// Stops a queued or running job and waits (briefly) until its supervisor has recorded the
    /// end; a job that already ended is left as it is.
    pub async fn cancel(&self, id: &str) -> Result<JobRef, ApiError> {
        let (stop, mut done) = {
            let jobs = self.lock();
            let e = jobs.get(id).ok_or_else(|| unknown(id))?;
            (e.stop.clone(), e.done.clone())
        };
        if let Some(stop) = stop {
            // The supervisor may have just finished and dropped its receiver: then there is
            // nothing left to stop.
            let _ = stop.send(Stop::Cancel);
            let _ = tokio::time::timeout(
                supervise::KILL_GRACE + Duration::from_secs(5),
                done.wait_for(|d| *d),
            )
            .await;
        }
        let r = self.record(id).ok_or_else(|| unknown(id))?;
        Ok(JobRef {
            id: r.id,
            state: r.state,
        })
    }

    /// Removes the folders of the jobs that ended more than `retention` before `now`, with
    /// everything they left there (log, checkpoints, outputs; the edge holds its own copy of the
    /// log and the artifacts the job pushed). Their records stay, so the edge still learns how
    /// they ended; a job that continues one of them is told its folder is gone. Returns the
    /// runner ids whose folders went.
    pub fn sweep_folders(&self, retention: Duration, now: std::time::SystemTime) -> Vec<String> {
        let now_ms = now
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let cutoff =
            now_ms.saturating_sub(i64::try_from(retention.as_millis()).unwrap_or(i64::MAX));
        let due: Vec<String> = self
            .lock()
            .values()
            .filter(|e| e.stop.is_none() && e.record.state.is_terminal())
            .filter(|e| {
                e.record
                    .ended_at
                    .as_deref()
                    .and_then(api::time::parse_rfc3339_ms)
                    .is_some_and(|ended| ended <= cutoff)
            })
            .map(|e| e.record.id.clone())
            .collect();
        due.into_iter()
            .filter(|id| {
                let dir = self.store.job_dir(id);
                match std::fs::remove_dir_all(&dir) {
                    Ok(()) => true,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
                    Err(e) => {
                        eprintln!("onramp-runner: cannot remove {}: {e}", dir.display());
                        false
                    }
                }
            })
            .collect()
    }

    /// Called by a supervisor when its job has ended.
    pub fn finished(&self, id: &str) {
        if let Some(e) = self.lock().get_mut(id) {
            e.stop = None;
        }
    }

    /// Stops every active job (the runner is shutting down) and waits for their supervisors: a
    /// running job gets SIGTERM and [`supervise::SHUTDOWN_GRACE`] to save its checkpoint, and is
    /// left requeued for the next runner; a queued one stays queued.
    pub async fn shutdown(&self) {
        let active: Vec<_> = self
            .lock()
            .values()
            .filter_map(|e| e.stop.clone().map(|s| (s, e.done.clone())))
            .collect();
        for (stop, _) in &active {
            let _ = stop.send(Stop::Shutdown);
        }
        for (_, mut done) in active {
            let _ = tokio::time::timeout(
                supervise::SHUTDOWN_GRACE + Duration::from_secs(2),
                done.wait_for(|d| *d),
            )
            .await;
        }
        let mut pending = self.pending_reports.subscribe();
        let _ = tokio::time::timeout(Duration::from_secs(3), pending.wait_for(|n| *n == 0)).await;
    }

    /// Tells the edge the job's state, in the background; failures are logged only. A job
    /// waiting (queued, or requeued for its next attempt) says nothing: only its backend may say
    /// so, and the edge reads that from the runner's answer.
    pub fn report_state(&self, r: &JobRecord) {
        let Some(target) = r.report.clone() else {
            return;
        };
        if matches!(r.state, JobState::Queued | JobState::Requeued) {
            return;
        }
        let report = Report {
            state: Some(r.state.as_str().to_string()),
            metrics: None,
            message: r.message.clone(),
            attempt: (r.state == JobState::Running && r.attempt > 0).then_some(r.attempt),
        };
        let id = r.id.clone();
        let pending = self.pending_reports.clone();
        pending.send_modify(|n| *n += 1);
        tokio::spawn(async move {
            if let Err(e) = report::post(target, report).await {
                eprintln!("onramp-runner: job {id}: {e}");
            }
            pending.send_modify(|n| *n -= 1);
        });
    }
}

fn unknown(id: &str) -> ApiError {
    ApiError::no_such_job(id)
}

/// A new runner job id: `rj-` and 16 hex digits from the kernel's generator.
fn new_id() -> String {
    use std::io::Read;
    let mut buf = [0u8; 8];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .is_err()
    {
        // Without /dev/urandom the clock still gives a unique id within this runner.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        buf = t.to_le_bytes();
    }
    let hex: String = buf.iter().map(|b| format!("{b:02x}")).collect();
    format!("rj-{hex}")
}

impl supervise::Host for Runner {
    fn record(&self, id: &str) -> Option<JobRecord> {
        Runner::record(self, id)
    }
    fn update(&self, id: &str, change: impl FnOnce(&mut JobRecord)) -> Option<JobRecord> {
        Runner::update(self, id, change)
    }
    fn finished(&self, id: &str) {
        Runner::finished(self, id);
    }
    fn report_state(&self, r: &JobRecord) {
        Runner::report_state(self, r);
    }
    fn slots(&self) -> Arc<Semaphore> {
        self.slots.clone()
    }
    fn job_dir(&self, id: &str) -> PathBuf {
        self.store.job_dir(id)
    }
    fn assets(&self) -> &Assets {
        &self.assets
    }
    fn sandbox(&self) -> Option<&crate::sandbox::Sandbox> {
        self.sandbox.as_ref()
    }
    fn folder_of_edge_job(&self, job_id: &str) -> Option<PathBuf> {
        Runner::folder_of_edge_job(self, job_id)
    }
}
