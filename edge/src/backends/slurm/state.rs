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
    let reason = job
        .get("state_reason")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty() && *r != "None")
        .map(str::to_string);
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
        attempt,
        requeued_at: job
            .get("submit_time")
            .and_then(number)
            .filter(|t| *t > 0 && attempt > 0),
    })
}

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
        "RUNNING" | "SUSPENDED" => (JobState::Running, None),
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

/// Why a pending job waits, in words a user can act on (en, zh-CN).
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
mod tests {
    use super::*;
    use expect_test::{Expect, expect};
    use serde_json::json;

    fn job(state: &[&str], rc: i64, sig: i64, reason: &str) -> Value {
        json!({"jobs": [{
            "job_id": 7, "job_state": state, "state_reason": reason,
            "exit_code": {"status": ["EXITED"],
                          "return_code": {"set": true, "infinite": false, "number": rc},
                          "signal": {"id": {"set": sig > 0, "infinite": false, "number": sig}, "name": ""}},
            "start_time": {"set": true, "infinite": false, "number": 1_700_000_000},
            "end_time": {"set": true, "infinite": false, "number": 0}
        }], "errors": [], "warnings": []})
    }

    fn check(body: Value, expected: Expect) {
        let s = parse_job(&body).unwrap();
        let msg = s
            .message
            .map_or_else(String::new, |(en, zh)| format!(" | {en} | {zh}"));
        expected.assert_eq(&format!(
            "{} {:?} → {} code={:?} signal={:?}{msg}",
            s.slurm_state,
            s.flags,
            s.state.as_str(),
            s.exit_code,
            s.signal
        ));
    }

    #[test]
    fn maps_every_state() {
        check(
            job(&["PENDING"], 0, 0, "Resources"),
            expect![
                "PENDING [] → queued code=Some(0) signal=None | waiting for resources: not enough free GPUs or nodes right now (Resources) | 等待资源：目前空闲的 GPU 或节点不足（Resources）"
            ],
        );
        check(
            job(&["RUNNING", "CONFIGURING"], 0, 0, "None"),
            expect![
                "RUNNING [\"CONFIGURING\"] → queued code=Some(0) signal=None | waiting for its node to start | 等待节点启动"
            ],
        );
        check(
            job(&["COMPLETED"], 0, 0, "None"),
            expect!["COMPLETED [] → succeeded code=Some(0) signal=None"],
        );
        check(
            job(&["FAILED"], 3, 0, "NonZeroExitCode"),
            expect!["FAILED [] → failed code=Some(3) signal=None | exited with code 3 | 退出码 3"],
        );
        check(
            job(&["CANCELLED"], 0, 15, "None"),
            expect!["CANCELLED [] → cancelled code=Some(0) signal=Some(15) | cancelled | 已取消"],
        );
        check(
            job(&["TIMEOUT"], 0, 0, "TimeLimit"),
            expect![
                "TIMEOUT [] → timed_out code=Some(0) signal=None | killed at its time limit | 达到时间上限，已被终止"
            ],
        );
        check(
            job(&["NODE_FAIL"], 0, 9, "None"),
            expect![
                "NODE_FAIL [] → failed code=Some(0) signal=Some(9) | the node running the job failed | 运行作业的节点发生故障"
            ],
        );
        check(
            job(&["BOOT_FAIL"], 0, 0, "NodeDown"),
            expect![
                "BOOT_FAIL [] → failed code=Some(0) signal=None | the node given to the job failed to start; the job never ran | 分配给作业的节点未能启动，作业没有运行"
            ],
        );
        check(
            job(&["FAILED"], 0, 9, "None"),
            expect![
                "FAILED [] → failed code=Some(0) signal=Some(9) | killed by signal 9 | 被信号 9 终止"
            ],
        );
        check(
            job(&["COMPLETED", "COMPLETING"], 2, 0, "None"),
            expect![
                "COMPLETED [\"COMPLETING\"] → failed code=Some(2) signal=None | exited with code 2 | 退出码 2"
            ],
        );
    }

    /// What Slurm 24.11 answered for a job requeued by `scontrol requeue`: first PENDING with
    /// COMPLETING while the attempt's processes end, then PENDING held back until its begin time,
    /// with `restart_cnt` 1 and `submit_time` reset to the requeue.
    #[test]
    fn a_requeued_job_is_live_with_its_attempt() {
        let mut body = job(&["PENDING", "COMPLETING"], 0, 0, "None");
        body["jobs"][0]["restart_cnt"] = json!(1);
        body["jobs"][0]["submit_time"] =
            json!({"set": true, "infinite": false, "number": 1_700_000_100});
        let s = parse_job(&body).unwrap();
        assert_eq!(
            (s.state, s.attempt, s.requeued_at),
            (JobState::Requeued, 1, Some(1_700_000_100))
        );
        body["jobs"][0]["job_state"] = json!(["PENDING"]);
        body["jobs"][0]["state_reason"] = json!("BeginTime");
        check(
            body.clone(),
            expect![
                "PENDING [] → requeued code=Some(0) signal=None | stopped by the cluster and requeued: it runs again from its last checkpoint; waiting for its start time (BeginTime) | 被集群停止并重新排队：将从最近的检查点继续运行；等待开始时间（BeginTime）"
            ],
        );
        // A node that failed under a requeueable job: the flag says it comes back.
        check(
            job(&["NODE_FAIL", "REQUEUED"], 0, 9, "None"),
            expect![
                "NODE_FAIL [\"REQUEUED\"] → requeued code=Some(0) signal=Some(9) | stopped by the cluster and requeued: it runs again from its last checkpoint | 被集群停止并重新排队：将从最近的检查点继续运行"
            ],
        );
        // Running again: attempt 1, no requeue time before the job has been requeued.
        body["jobs"][0]["job_state"] = json!(["RUNNING"]);
        let s = parse_job(&body).unwrap();
        assert_eq!((s.state, s.attempt), (JobState::Running, 1));
        let s = parse_job(&job(&["RUNNING"], 0, 0, "None")).unwrap();
        assert_eq!((s.attempt, s.requeued_at), (0, None));
    }

    /// A job whose node never booted used no card time: it ends where it started.
    #[test]
    fn a_node_that_never_booted_gives_the_job_no_time() {
        let mut body = job(&["BOOT_FAIL"], 0, 0, "None");
        body["jobs"][0]["end_time"] =
            json!({"set": true, "infinite": false, "number": 1_700_000_300});
        let s = parse_job(&body).unwrap();
        assert_eq!(
            (s.state, s.start_time, s.end_time),
            (JobState::Failed, Some(1_700_000_300), Some(1_700_000_300))
        );
        // A node that failed under a running job: the time it ran is the job's.
        body["jobs"][0]["job_state"] = json!(["NODE_FAIL"]);
        let s = parse_job(&body).unwrap();
        assert_eq!(
            (s.start_time, s.end_time),
            (Some(1_700_000_000), Some(1_700_000_300))
        );
    }

    #[test]
    fn times_and_plain_numbers() {
        let s = parse_job(&job(&["RUNNING"], 0, 0, "None")).unwrap();
        assert_eq!((s.start_time, s.end_time), (Some(1_700_000_000), None));
        let plain = json!({"jobs": [{"job_id": 9, "job_state": "COMPLETED", "exit_code": 0}]});
        let s = parse_job(&plain).unwrap();
        assert_eq!(
            (s.slurm_job_id, s.state, s.exit_code),
            (9, JobState::Succeeded, Some(0))
        );
    }

    #[test]
    fn submit_answers_and_errors() {
        // v0.0.40 puts job_id at the top; v0.0.41 and v0.0.42 also under "result".
        assert_eq!(
            parse_submit(&json!({"job_id": 12, "step_id": "batch", "errors": []})),
            Ok(12)
        );
        assert_eq!(
            parse_submit(&json!({"result": {"job_id": 13}, "errors": []})),
            Ok(13)
        );
        let err = parse_submit(&json!({"errors": [{"description": "Requested node configuration is not available", "error_number": 2014, "error": "Unable to allocate resources", "source": "slurm_submit_batch_job()"}]}))
            .unwrap_err();
        expect!["slurmrestd: Requested node configuration is not available: Unable to allocate resources"].assert_eq(&err);
        assert!(
            parse_job(&json!({"jobs": []}))
                .unwrap_err()
                .contains("lists no job")
        );
        assert!(parse_job(&json!({"jobs": [{"job_id": 1, "job_state": ["WEIRD"]}]})).is_err());
    }
    /// v0.0.43 (Slurm 25.05) answers in the same shapes: the submit answer with `job_id` at the
    /// top and under `result`, the job with its state list and wrapped numbers.
    #[test]
    fn reads_v0043_answers() {
        let submitted = json!({"job_id": 21, "step_id": "batch", "job_submit_user_msg": "",
            "result": {"job_id": 21, "step_id": "batch", "error_code": 0, "error": "No error",
                       "job_submit_user_msg": ""},
            "meta": {"plugin": {"data_parser": "data_parser/v0.0.43"}}, "errors": [], "warnings": []});
        assert_eq!(parse_submit(&submitted), Ok(21));
        let job = json!({"jobs": [{
            "job_id": 21, "name": "tiny-j1", "job_state": ["COMPLETED"], "state_reason": "None",
            "exit_code": {"status": ["SUCCESS"],
                          "return_code": {"set": true, "infinite": false, "number": 0},
                          "signal": {"id": {"set": false, "infinite": false, "number": 0}, "name": ""}},
            "start_time": {"set": true, "infinite": false, "number": 1_767_225_600},
            "end_time": {"set": true, "infinite": false, "number": 1_767_225_660}
        }], "meta": {"plugin": {"data_parser": "data_parser/v0.0.43"}}, "errors": [], "warnings": []});
        let s = parse_job(&job).unwrap();
        assert_eq!(
            (
                s.slurm_job_id,
                s.state,
                s.exit_code,
                s.start_time,
                s.end_time
            ),
            (
                21,
                JobState::Succeeded,
                Some(0),
                Some(1_767_225_600),
                Some(1_767_225_660)
            )
        );
    }

    #[test]
    fn a_held_or_impossible_job_says_so_in_both_languages() {
        let (en, zh) = pending_reason("JobHeldAdmin");
        assert!(
            en.starts_with("held by the cluster") && en.ends_with("(JobHeldAdmin)"),
            "{en}"
        );
        assert!(zh.starts_with("被集群挂起"), "{zh}");
        let (en, zh) = pending_reason("PartitionTimeLimit");
        assert!(
            en.starts_with("cannot start") && zh.starts_with("无法开始"),
            "{en} {zh}"
        );
        assert!(pending_reason("SomethingNew").0.starts_with("waiting ("));
    }
}
