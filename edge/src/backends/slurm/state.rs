//! slurmrestd's answers: the submit response (the new job's id, or Slurm's errors) and the job
//! info (`GET /slurm/v0.0.4x/job/{id}`), mapped to Onramp's job states with the exit code, the
//! signal and, for a waiting job, why it waits (in zh-CN and en).
//!
//! In data parsers v0.0.40 to v0.0.42 `job_state` is a list (the base state plus flags such as
//! `COMPLETING`), numbers may come wrapped as `{"set", "infinite", "number"}`, and `exit_code`
//! is an object `{"status", "return_code", "signal": {"id", "name"}}`.

use api::JobState;
use serde_json::Value;

/// A Slurm job as the edge needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobStatus {
    pub slurm_job_id: u64,
    /// Slurm's base state (`PENDING`, `RUNNING`, `COMPLETED`, …).
    pub slurm_state: String,
    /// The flags that came with it (`COMPLETING`, `CONFIGURING`, …).
    pub flags: Vec<String>,
    pub state: JobState,
    pub exit_code: Option<i64>,
    /// The signal that ended the job, when one did.
    pub signal: Option<i64>,
    /// Slurm's `state_reason` (`Resources`, `Priority`, …) when it says something.
    pub reason: Option<String>,
    /// What to show the user: why it waits, or how it ended (en, zh-CN).
    pub message: Option<(String, String)>,
    /// Unix seconds.
    pub start_time: Option<i64>,
    pub end_time: Option<i64>,
    /// Of `start_time..end_time`, the seconds the cluster held the job suspended (`scontrol
    /// suspend`, or gang scheduling's preemption): no run time, and no card time to bill.
    pub suspended_s: i64,
    /// While the job is suspended, since when (Unix seconds); `suspended_s` holds the suspensions
    /// before this one.
    pub suspended_since: Option<i64>,
    /// How many times Slurm started the job again (`restart_cnt`): the attempt now running or
    /// waiting, counted from 0.
    pub attempt: u32,
    /// For an attempt after the first, when Slurm requeued the job (Slurm resets `submit_time`
    /// to the requeue): where the attempt before it ended. Unix seconds.
    pub requeued_at: Option<i64>,
}

/// The Slurm job id from a submit response, or every error Slurm gave.
pub fn parse_submit(body: &Value) -> Result<u64, String> {
    errors(body)?;
    submitted_id(body).ok_or_else(|| format!("slurmrestd's submit answer has no job_id: {body}"))
}

/// The job id a submit response gives, if any (Slurm numbers jobs from 1).
pub fn submitted_id(body: &Value) -> Option<u64> {
    body.get("job_id")
        .or_else(|| body.pointer("/result/job_id"))
        .and_then(number)
        .and_then(|n| u64::try_from(n).ok())
        .filter(|n| *n > 0)
}

/// Onramp's state of a Slurm job and what to say about it.
fn state_of(
    slurm_state: &str,
    flags: &[String],
    requeued: bool,
    (exit_code, signal): (Option<i64>, Option<i64>),
    reason: Option<&str>,
) -> (JobState, Message) {
    if requeued {
        requeued_state(reason)
    } else if slurm_state == "RUNNING" && flags.iter().any(|f| f == "CONFIGURING") {
        // Its nodes are given but still booting (a cloud or powered-down node): nothing runs yet,
        // and a node that never boots bills nothing.
        (
            JobState::Queued,
            Some((
                "waiting for its node to start".into(),
                "等待节点启动".into(),
            )),
        )
    } else {
        map_state(slurm_state, exit_code, signal, reason)
    }
}

/// The words of a job's `job_state`: its base state and flags.
fn job_states(job: &Value) -> Vec<String> {
    match job.get("job_state") {
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        // Older parsers sent one string; accept it rather than fail a poll.
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// The job's status from a job-info response.
pub fn parse_job(body: &Value) -> Result<JobStatus, String> {
    errors(body)?;
    let job = body
        .get("jobs")
        .and_then(Value::as_array)
        .and_then(|j| j.first())
        .ok_or_else(|| format!("slurmrestd's job answer lists no job: {body}"))?;
    let slurm_job_id = job
        .get("job_id")
        .and_then(number)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or("the job has no job_id")?;
    let (base, flags): (Vec<String>, Vec<String>) = job_states(job)
        .into_iter()
        .partition(|s| BASE_STATES.contains(&s.as_str()));
    let slurm_state = base
        .first()
        .cloned()
        .ok_or_else(|| format!("job {slurm_job_id} has no known job_state: {job}"))?;
    let exit = job.get("exit_code");
    let exit_code = exit.and_then(|e| match e {
        Value::Object(_) => e.get("return_code").and_then(number),
        other => number(other),
    });
    let signal = exit
        .and_then(|e| e.pointer("/signal/id"))
        .and_then(number)
        .filter(|s| *s > 0);
    let reason = reason_of(job, &slurm_state);
    let attempt = job
        .get("restart_cnt")
        .and_then(number)
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(0);
    // Requeued: on its way back to the queue (a REQUEUE flag, whatever the base state says), or
    // back in it after an attempt ran.
    let requeued = flags.iter().any(|f| REQUEUE_FLAGS.contains(&f.as_str()))
        || (attempt > 0 && slurm_state == "PENDING");
    let (state, message) = state_of(
        &slurm_state,
        &flags,
        requeued,
        (exit_code, signal),
        reason.as_deref(),
    );
    let end_time = job.get("end_time").and_then(number).filter(|t| *t > 0);
    // A node that never booted ran nothing: Slurm's start is when it gave the job the node, and
    // the time until it gave up waiting for the boot is no card time of the job's.
    let start_time = match slurm_state.as_str() {
        "BOOT_FAIL" if !requeued => end_time,
        _ => job.get("start_time").and_then(number).filter(|t| *t > 0),
    };
    let (suspended_s, suspended_since) = suspension(job, &slurm_state, start_time, end_time);
    Ok(JobStatus {
        slurm_job_id,
        slurm_state,
        flags,
        state,
        exit_code,
        signal,
        reason,
        message,
        start_time,
        end_time,
        suspended_s,
        suspended_since,
        attempt,
        requeued_at: job
            .get("submit_time")
            .and_then(number)
            .filter(|t| *t > 0 && attempt > 0),
    })
}

/// Slurm's reason for the job's state, when it gives one. A suspended job runs again where it
/// stopped, when the cluster resumes it: it says so in its own code, whatever Slurm's reason
/// (none, or why it was last pending).
fn reason_of(job: &Value, slurm_state: &str) -> Option<String> {
    match slurm_state {
        "SUSPENDED" => Some(SUSPENDED.to_string()),
        _ => job
            .get("state_reason")
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty() && *r != "None")
            .map(str::to_string),
    }
}

/// What `job` spent suspended: the seconds of `start..end` ([`suspended_s`]), and since when
/// it is suspended now, if it is.
fn suspension(
    job: &Value,
    state: &str,
    start: Option<i64>,
    end: Option<i64>,
) -> (i64, Option<i64>) {
    let since = job.get("suspend_time").and_then(number);
    (
        suspended_s(job, start, end),
        since.filter(|t| *t > 0 && state == "SUSPENDED"),
    )
}

/// The seconds of `start..end` that job spent suspended. Slurm keeps no total of them in its job
/// info, but its run time (squeue's `TIME`): `pre_sus_time`, what ran before the last suspension,
/// plus the time from the last resume (`suspend_time`) to the end. A job cancelled while
/// suspended ends at its suspension (Slurm sets `end_time` to it), so its run time is its span.
fn suspended_s(job: &Value, start: Option<i64>, end: Option<i64>) -> i64 {
    let (Some(start), Some(end)) = (start, end) else {
        return 0;
    };
    let span = (end - start).max(0);
    let last = job.get("suspend_time").and_then(number);
    let Some(last) = last.filter(|t| *t > 0 && (start..=end).contains(t)) else {
        return 0;
    };
    let before = job.get("pre_sus_time").and_then(number).unwrap_or(0).max(0);
    let ran = before.saturating_add((end - last).max(0));
    (span - ran).clamp(0, span)
}

/// The reason code of a running job the cluster holds suspended.
pub const SUSPENDED: &str = "Suspended";

/// The flags Slurm sets on a job it puts back in the queue.
const REQUEUE_FLAGS: &[&str] = &["REQUEUED", "REQUEUE_HOLD", "REQUEUE_CRON", "REQUEUE_FED"];

/// A requeued job: live, waiting to run again (why, when Slurm says).
fn requeued_state(reason: Option<&str>) -> (JobState, Message) {
    let (en, zh) = (
        "stopped by the cluster and requeued: it runs again from its last checkpoint",
        "被集群停止并重新排队：将从最近的检查点继续运行",
    );
    let message = match reason.map(pending_reason) {
        Some((why_en, why_zh)) => (format!("{en}; {why_en}"), format!("{zh}；{why_zh}")),
        None => (en.to_string(), zh.to_string()),
    };
    (JobState::Requeued, Some(message))
}

/// Slurm's base job states (the rest of `job_state` are flags).
const BASE_STATES: &[&str] = &[
    "PENDING",
    "RUNNING",
    "SUSPENDED",
    "COMPLETED",
    "CANCELLED",
    "FAILED",
    "TIMEOUT",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
    "OUT_OF_MEMORY",
];

type Message = Option<(String, String)>;

fn map_state(
    base: &str,
    exit_code: Option<i64>,
    signal: Option<i64>,
    reason: Option<&str>,
) -> (JobState, Message) {
    let msg = |en: String, zh: String| Some((en, zh));
    match base {
        "PENDING" => (JobState::Queued, reason.map(pending_reason)),
        "RUNNING" => (JobState::Running, None),
        "SUSPENDED" => (JobState::Running, Some(pending_reason(SUSPENDED))),
        "COMPLETED" if exit_code.unwrap_or(0) == 0 => (JobState::Succeeded, None),
        "CANCELLED" => (
            JobState::Cancelled,
            msg("cancelled".into(), "已取消".into()),
        ),
        "TIMEOUT" | "DEADLINE" => (
            JobState::TimedOut,
            msg(
                "killed at its time limit".into(),
                "达到时间上限，已被终止".into(),
            ),
        ),
        "NODE_FAIL" => (
            JobState::Failed,
            msg(
                "the node running the job failed".into(),
                "运行作业的节点发生故障".into(),
            ),
        ),
        "BOOT_FAIL" => (
            JobState::Failed,
            msg(
                "the node given to the job failed to start; the job never ran".into(),
                "分配给作业的节点未能启动，作业没有运行".into(),
            ),
        ),
        "OUT_OF_MEMORY" => (
            JobState::Failed,
            msg("ran out of memory".into(), "内存不足".into()),
        ),
        "PREEMPTED" => (
            JobState::Failed,
            msg("preempted by another job".into(), "被其他作业抢占".into()),
        ),
        // FAILED, or COMPLETED with a non-zero code.
        _ => match (signal, exit_code) {
            (Some(sig), _) => (
                JobState::Failed,
                msg(
                    format!("killed by signal {sig}"),
                    format!("被信号 {sig} 终止"),
                ),
            ),
            (None, Some(code)) => (
                JobState::Failed,
                msg(format!("exited with code {code}"), format!("退出码 {code}")),
            ),
            (None, None) => (JobState::Failed, msg("failed".into(), "失败".into())),
        },
    }
}

/// Why a pending job waits (or a running one is suspended), in words a user can act on (en,
/// zh-CN).
pub fn pending_reason(reason: &str) -> (String, String) {
    let (en, zh) = match reason {
        "Resources" => (
            "waiting for resources: not enough free GPUs or nodes right now",
            "等待资源：目前空闲的 GPU 或节点不足",
        ),
        "Priority" => (
            "waiting behind jobs with higher priority",
            "排在优先级更高的作业之后",
        ),
        "ReqNodeNotAvail" | "NodeDown" => (
            "waiting: the nodes it needs are not available",
            "等待：所需节点不可用",
        ),
        "PartitionDown" | "PartitionInactive" => {
            ("waiting: the partition is down", "等待：分区已停用")
        }
        "BeginTime" => ("waiting for its start time", "等待开始时间"),
        // Not waiting to start: stopped mid-run by the cluster (`scontrol suspend`, gang
        // scheduling), still holding its cards.
        SUSPENDED => (
            "suspended by the cluster: it goes on where it stopped when the cluster resumes it; \
             the time it is suspended is not billed",
            "被集群暂停：集群恢复后将从暂停处继续运行；暂停期间不计费",
        ),
        "Dependency" => ("waiting for another job to finish", "等待另一个作业完成"),
        // The local runner's own code: it runs as many jobs as it declares cards.
        "CardsInUse" => (
            "waiting for a free card: the backend's cards are all in use by other jobs; it starts when one ends",
            "等待空闲的卡：该后端的卡都在运行其他作业，有作业结束后即开始",
        ),
        // The local runner's: it stopped while the job ran, and runs it again.
        "RunnerRestarted" => (
            "its runner stopped while it ran: it runs again from its last checkpoint",
            "运行器在作业运行时停止：作业将从最近的检查点继续运行",
        ),
        // Held: Slurm starts it only once someone releases it, which Onramp does not do.
        "JobHeldAdmin" | "JobHeldUser" | "JobHoldMaxRequeue" | "launch failed requeued held" => (
            "held by the cluster: it does not start until the cluster's administrators release \
             it; cancel it to give back what it holds",
            "被集群挂起：集群管理员释放之前不会开始；取消作业即可退回预扣的额度",
        ),
        // Beyond what the partition or the account allows: it never starts as asked.
        "PartitionTimeLimit"
        | "PartitionNodeLimit"
        | "BadConstraints"
        | "InvalidQOS"
        | "InvalidAccount"
        | "QOSMaxWallDurationPerJobLimit" => (
            "cannot start: it asks for more than the cluster's partition or account allows; \
             cancel it and ask for less",
            "无法开始：所需资源超出了集群分区或账户的限制；请取消作业并减少所需资源",
        ),
        "QOSMaxGRESPerUser" | "AssocGrpGRES" | "QOSGrpGRES" => (
            "waiting: the GPU quota is in use by other jobs",
            "等待：GPU 配额已被其他作业占用",
        ),
        _ => ("waiting", "等待中"),
    };
    (format!("{en} ({reason})"), format!("{zh}（{reason}）"))
}

/// Slurm's errors, joined, when the answer has any.
fn errors(body: &Value) -> Result<(), String> {
    let list = body
        .get("errors")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if list.is_empty() {
        return Ok(());
    }
    let text: Vec<String> = list
        .iter()
        .map(|e| {
            let field = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let (desc, err) = (field("description"), field("error"));
            match (desc.is_empty(), err.is_empty()) {
                (false, false) => format!("{desc}: {err}"),
                (false, true) => desc,
                (true, false) => err,
                (true, true) => e.to_string(),
            }
        })
        .collect();
    Err(format!("slurmrestd: {}", text.join("; ")))
}

/// A plain number, or the `{"set", "infinite", "number"}` wrapper (unset or infinite → none).
fn number(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::Object(o) => {
            let set = o.get("set").and_then(Value::as_bool).unwrap_or(true);
            let infinite = o.get("infinite").and_then(Value::as_bool).unwrap_or(false);
            if !set || infinite {
                return None;
            }
            o.get("number").and_then(Value::as_i64)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
