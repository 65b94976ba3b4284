//! One job's life: stop what a previous runner left running of it, wait for a slot, start the
//! process in its own process group with its output in the job's log, enforce the time limit
//! (all attempts together), stop the whole group on cancel, and record and report how it ended
//! (or, when the runner stops, leave it requeued for the next one).

use crate::assets::Assets;
use crate::clock::now_rfc3339;
use crate::store::{JobRecord, LOG};
use crate::wire::JobState;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Semaphore, mpsc, watch};

/// What supervising a job needs of the runner that started it (`jobs::Runner` is the one): a
/// narrow handle, so that this module names nothing of `jobs`, which alone drives it.
pub trait Host: Send + Sync + 'static {
    /// The job's record as it is now.
    fn record(&self, id: &str) -> Option<JobRecord>;
    /// Changes the job's record, stores it, and returns it as changed.
    fn update(&self, id: &str, change: impl FnOnce(&mut JobRecord)) -> Option<JobRecord>;
    /// The job stopped running: nothing can stop it any more.
    fn finished(&self, id: &str);
    /// Tells whoever submitted the job its state, when it asked to be told.
    fn report_state(&self, r: &JobRecord);
    /// One permit per card: a job holds one while it runs.
    fn slots(&self) -> Arc<Semaphore>;
    /// The job's folder.
    fn job_dir(&self, id: &str) -> PathBuf;
    fn assets(&self) -> &Assets;
    /// The sandbox jobs run in, if any.
    fn sandbox(&self) -> Option<&crate::sandbox::Sandbox>;
    /// The folder of the runner's job for the edge's job `job_id`, if this runner ran it.
    fn folder_of_edge_job(&self, job_id: &str) -> Option<PathBuf>;
}

/// How long a cancelled job gets between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(2);
/// How long a job the runner stops (it shuts down, or it finds what a runner before it left
/// running) gets between SIGTERM and SIGKILL: the trainer saves a checkpoint at the end of the
/// step it is in (as for Slurm's requeue), and the job runs again from it.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// Why a job is being stopped from outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Cancel,
    /// The runner is shutting down; the job runs again under the next runner.
    Shutdown,
}

/// How the process ended.
enum Outcome {
    Exited(ExitStatus),
    TimedOut,
    Stopped(Stop),
}

pub async fn run<H: Host>(
    runner: Arc<H>,
    id: String,
    mut stop: mpsc::UnboundedReceiver<Stop>,
    done: watch::Sender<bool>,
) {
    let ended = supervise(&runner, &id, &mut stop).await;
    runner.finished(&id);
    let changed = if ended.0.is_terminal() {
        runner.update(&id, |r| {
            r.state = ended.0;
            r.exit_code = ended.1;
            r.message = ended.2;
            r.ended_at = Some(now_rfc3339());
            r.pgid = None;
        })
    } else {
        // The runner stops and the job is not over: the next runner runs it again.
        runner.update(&id, |r| {
            r.requeue(std::time::SystemTime::now());
            r.pgid = None;
        })
    };
    if let Some(r) = changed {
        runner.report_state(&r);
    }
    let _ = done.send(true);
}

/// Runs the job to its end; returns its final state, exit code and message.
async fn supervise<H: Host>(
    runner: &Arc<H>,
    id: &str,
    stop: &mut mpsc::UnboundedReceiver<Stop>,
) -> Ended {
    let Some(record) = runner.record(id) else {
        return failed("job record vanished".into());
    };
    let dir = runner.job_dir(id);
    let permit = match wait_turn(runner, &record, &dir, stop).await {
        Ok(p) => p,
        Err(ended) => return ended,
    };
    let limit = record.time_left_s();
    if limit == 0 {
        return (
            JobState::TimedOut,
            None,
            Some(format!(
                "its earlier attempts used its whole time limit of {} s",
                record.time_limit_s
            )),
        );
    }
    let log_path = dir.join(LOG);
    // Not through a link the job left in its place (an earlier attempt's job wrote the folder).
    let log = match crate::confined::open(&dir, Path::new(LOG), crate::confined::How::Append) {
        Ok(f) => f,
        Err(e) => return failed(format!("cannot open the log {}: {e}", log_path.display())),
    };
    let mut cmd = match job_command(runner.as_ref(), &record, &dir, &log) {
        Ok(cmd) => cmd,
        Err(msg) => return failed(msg),
    };
    if record.attempt > 0 {
        let _ = writeln!(
            &log,
            "onramp-runner: attempt {} of this job starts (its runner stopped while it ran); {limit} s of its time limit are left",
            record.attempt + 1
        );
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let msg = format!("cannot start {:?}: {e}", record.argv[0]);
            let _ = writeln!(&log, "onramp-runner: {msg}");
            return failed(msg);
        }
    };
    let pgid = child.id();
    if let Some(r) = runner.update(id, |r| {
        r.state = JobState::Running;
        r.started_at = Some(now_rfc3339());
        r.pgid = pgid;
    }) {
        runner.report_state(&r);
    }
    let limit = Duration::from_secs(limit);
    let outcome = tokio::select! {
        status = child.wait() => match status {
            Ok(s) => Outcome::Exited(s),
            Err(e) => return failed(format!("cannot wait for the job: {e}")),
        },
        _ = tokio::time::sleep(limit) => Outcome::TimedOut,
        s = stop.recv() => Outcome::Stopped(s.unwrap_or(Stop::Shutdown)),
    };
    end_group(&mut child, pgid, &outcome).await;
    drop(permit);
    ended_state(
        outcome,
        runner.sandbox().is_some(),
        &record,
        &log,
        &log_path,
    )
}

/// Waits until the job may start: what a runner before this one left running of it has stopped
/// (saving its checkpoint), and a slot is free. A cancel meanwhile ends it without running
/// anything more.
async fn wait_turn<H: Host>(
    runner: &Arc<H>,
    record: &JobRecord,
    dir: &Path,
    stop: &mut mpsc::UnboundedReceiver<Stop>,
) -> Result<tokio::sync::OwnedSemaphorePermit, Ended> {
    if let Some(pgid) = record.pgid {
        tokio::select! {
            () = stop_orphan_group(pgid, dir) => {}
            s = stop.recv() => {
                kill_orphan_group(pgid, dir);
                return Err(stopped_state(s.unwrap_or(Stop::Shutdown), true));
            }
        }
        runner.update(&record.id, |r| r.pgid = None);
    }
    tokio::select! {
        p = runner.slots().acquire_owned() => p.map_err(|_| stopped_state(Stop::Shutdown, false)),
        s = stop.recv() => Err(stopped_state(s.unwrap_or(Stop::Shutdown), record.attempt > 0)),
    }
}

/// How a job ended: its state, exit code and the reason shown on its page.
type Ended = (JobState, Option<i32>, Option<String>);

fn failed(msg: String) -> Ended {
    (JobState::Failed, None, Some(msg))
}

/// The job's process as the record says, in its own process group and folder (in the sandbox,
/// where there is one), with a clean environment, its output into `log`.
fn job_command<H: Host>(
    runner: &H,
    record: &JobRecord,
    dir: &Path,
    log: &std::fs::File,
) -> Result<tokio::process::Command, String> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    // In the sandbox a missing program would be the sandbox's failure: say so before.
    if crate::sandbox::find_program(&record.argv[0], &path, dir).is_none() {
        return Err(format!(
            "cannot start {:?}: no such program (nor on PATH)",
            record.argv[0]
        ));
    }
    let mut cmd = match runner.sandbox() {
        Some(sandbox) => {
            let (program, args) = sandbox.command(dir, &record.argv);
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(args);
            cmd
        }
        None => {
            let mut cmd = tokio::process::Command::new(&record.argv[0]);
            cmd.args(&record.argv[1..]);
            cmd
        }
    };
    cmd.current_dir(dir)
        // A clean environment: the runner's own (its secret above all) never reaches a job.
        .env_clear()
        .env("PATH", &path)
        .env("HOME", dir)
        .env("LANG", "C.UTF-8")
        .env("ONRAMP_JOB_ID", &record.job_id)
        .env("ONRAMP_RUNNER_JOB_ID", &record.id)
        .envs(&record.env)
        .stdin(Stdio::null())
        .process_group(0)
        .kill_on_drop(false);
    // A command job that carries a spec runs onramp-train on it (jobspec's CPU command).
    if record.task == crate::wire::Task::Command && !record.spec_toml.trim().is_empty() {
        crate::trainer::continue_from(dir, &record.spec_toml, |id| runner.folder_of_edge_job(id))?;
        cmd.envs(crate::trainer::prepare(
            dir,
            &record.spec_toml,
            runner.assets(),
        )?);
    }
    if let Some(t) = &record.report {
        cmd.env("ONRAMP_REPORT_URL", &t.url)
            .env("ONRAMP_REPORT_TOKEN", &t.token);
    }
    let (out, err) = log
        .try_clone()
        .and_then(|out| Ok((out, log.try_clone()?)))
        .map_err(|e| format!("cannot share the log: {e}"))?;
    cmd.stdout(Stdio::from(out)).stderr(Stdio::from(err));
    Ok(cmd)
}

/// Ends the job's process group: a job that did not exit by itself gets SIGTERM, then SIGKILL
/// after the grace period; whatever it left behind in its group (background children) goes too.
async fn end_group(child: &mut tokio::process::Child, pgid: Option<u32>, outcome: &Outcome) {
    if let Some(pgid) = pgid {
        if !matches!(outcome, Outcome::Exited(_)) {
            let grace = match outcome {
                Outcome::Stopped(Stop::Shutdown) => SHUTDOWN_GRACE,
                _ => KILL_GRACE,
            };
            signal_group(pgid, Signal::SIGTERM);
            // The job's first process may end at once (a shell) while what it started still
            // saves its checkpoint: the group gets the grace time, not the first process alone.
            let deadline = tokio::time::Instant::now() + grace;
            let _ = tokio::time::timeout_at(deadline, child.wait()).await;
            group_gone_by(pgid, deadline).await;
        }
        signal_group(pgid, Signal::SIGKILL);
    }
    let _ = child.wait().await;
}

/// The state an outcome means; the runner's own reason goes into the log too.
fn ended_state(
    outcome: Outcome,
    sandboxed: bool,
    record: &JobRecord,
    log: &std::fs::File,
    log_path: &Path,
) -> Ended {
    match outcome {
        Outcome::Exited(status) => exited_state(status, sandboxed, log_path),
        Outcome::TimedOut => {
            let msg = format!("killed at its time limit of {} s", record.time_limit_s);
            let _ = writeln!(&*log, "onramp-runner: {msg}");
            (JobState::TimedOut, None, Some(msg))
        }
        Outcome::Stopped(Stop::Shutdown) => {
            let _ = writeln!(
                &*log,
                "onramp-runner: the runner stops; this job runs again from its last checkpoint when it is back"
            );
            stopped_state(Stop::Shutdown, true)
        }
        Outcome::Stopped(s) => {
            let (state, code, msg) = stopped_state(s, true);
            if let Some(m) = &msg {
                let _ = writeln!(&*log, "onramp-runner: {m}");
            }
            (state, code, msg)
        }
    }
}

fn stopped_state(stop: Stop, was_running: bool) -> (JobState, Option<i32>, Option<String>) {
    match stop {
        Stop::Cancel if was_running => (JobState::Cancelled, None, Some("cancelled".into())),
        Stop::Cancel => (
            JobState::Cancelled,
            None,
            Some("cancelled before it started".into()),
        ),
        // Not an end: the job runs again under the next runner (`run`).
        Stop::Shutdown => (JobState::Requeued, None, None),
    }
}

fn exited_state(
    status: ExitStatus,
    sandboxed: bool,
    log: &Path,
) -> (JobState, Option<i32>, Option<String>) {
    use std::os::unix::process::ExitStatusExt;
    let (code, signal) = if sandboxed {
        crate::sandbox::Sandbox::status(status.code(), status.signal())
    } else {
        (status.code(), status.signal())
    };
    match (code, signal) {
        (Some(0), _) => (JobState::Succeeded, Some(0), None),
        (Some(code), _) => {
            let last = last_line(log).map(|l| format!(": {l}")).unwrap_or_default();
            (
                JobState::Failed,
                Some(code),
                Some(format!("exited with code {code}{last}")),
            )
        }
        (None, sig) => {
            let sig = sig.unwrap_or(0);
            (
                JobState::Failed,
                None,
                Some(format!("killed by signal {sig}")),
            )
        }
    }
}

/// The last non-empty line of the log (at most 1000 characters: the trainer's reasons name the
/// plan's fixes), to say why a job failed.
fn last_line(log: &Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let (dir, name) = (log.parent()?, Path::new(log.file_name()?));
    // Its last 4 KiB only, without following a link: the job owns its log.
    let mut f = crate::confined::open(dir, name, crate::confined::How::Read).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(4096))).ok()?;
    let mut tail = Vec::new();
    f.take(4096).read_to_end(&mut tail).ok()?;
    let text = String::from_utf8_lossy(&tail);
    let line = text.lines().rev().find(|l| !l.trim().is_empty())?;
    Some(line.trim().chars().take(1000).collect())
}

/// Signals a whole process group; a group that is already gone is not an error.
pub fn signal_group(pgid: u32, signal: Signal) {
    if let Ok(pgid) = i32::try_from(pgid) {
        let _ = killpg(Pid::from_raw(pgid), signal);
    }
}

/// Whether the process group a previous runner left for a job is still that job's: its leader
/// still works in the job's folder (the pid may have been reused by something else since).
fn orphan_of(pgid: u32, job_dir: &Path) -> bool {
    let cwd = std::fs::read_link(format!("/proc/{pgid}/cwd"));
    let job_dir = std::fs::canonicalize(job_dir).unwrap_or_else(|_| job_dir.to_path_buf());
    cwd.is_ok_and(|c| c == job_dir)
}

/// Kills the process group a previous runner left running for a job, if it is still the job's.
pub fn kill_orphan_group(pgid: u32, job_dir: &Path) {
    if orphan_of(pgid, job_dir) {
        signal_group(pgid, Signal::SIGKILL);
    }
}

/// Stops the process group a previous runner left running for a job, if it is still the job's:
/// SIGTERM, so that a trainer saves its checkpoint, then SIGKILL once [`SHUTDOWN_GRACE`] passed.
pub async fn stop_orphan_group(pgid: u32, job_dir: &Path) {
    if !orphan_of(pgid, job_dir) {
        return;
    }
    signal_group(pgid, Signal::SIGTERM);
    group_gone_by(pgid, tokio::time::Instant::now() + SHUTDOWN_GRACE).await;
    signal_group(pgid, Signal::SIGKILL);
}

/// Waits until no process of the group runs any more, or until `deadline`.
async fn group_gone_by(pgid: u32, deadline: tokio::time::Instant) {
    while group_alive(pgid) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether any process of the group runs (one that ended and waits for its parent does not).
fn group_alive(pgid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .any(|stat| {
            // After the command's closing parenthesis: state, ppid, pgrp, ...
            let mut f = stat.rsplit(')').next().unwrap_or("").split_whitespace();
            let state = f.next();
            let pgrp = f.nth(1).and_then(|p| p.parse::<u32>().ok());
            pgrp == Some(pgid) && !matches!(state, Some("Z" | "X"))
        })
}
