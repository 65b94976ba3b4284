//! The mapping of slurmrestd's job answers, on answers as each data parser writes them.

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
    body["jobs"][0]["end_time"] = json!({"set": true, "infinite": false, "number": 1_700_000_300});
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
    expect![
        "slurmrestd: Requested node configuration is not available: Unable to allocate resources"
    ]
    .assert_eq(&err);
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

/// A job in `state` with Slurm's `start_time` and `end_time`, and its `suspend_time` and
/// `pre_sus_time` when given.
fn timed(state: &str, (start, end): (i64, i64), sus: Option<(i64, i64)>) -> JobStatus {
    let t = |n: i64| json!({"set": true, "infinite": false, "number": n});
    let mut body = job(&[state], 0, 0, "None");
    body["jobs"][0]["start_time"] = t(start);
    body["jobs"][0]["end_time"] = t(end);
    if let Some((last, before)) = sus {
        body["jobs"][0]["suspend_time"] = t(last);
        body["jobs"][0]["pre_sus_time"] = t(before);
    }
    parse_job(&body).unwrap()
}

/// Answers as Slurm 24.11 gave them: a job run 2 s, suspended 6 s, resumed and ended at once;
/// one cancelled while suspended (Slurm ends it at its suspension); one never suspended.
#[test]
fn a_suspension_is_no_run_time() {
    let with = |state: &str, span: (i64, i64), sus: Option<(i64, i64)>| {
        timed(state, span, sus).suspended_s
    };
    let start = 1_796_638_148;
    assert_eq!(
        with("COMPLETED", (start, start + 8), Some((start + 8, 2))),
        6
    );
    assert_eq!(
        with("COMPLETED", (start, start + 20), Some((start + 8, 2))),
        6
    );
    assert_eq!(
        with("CANCELLED", (start, start + 3), Some((start + 3, 3))),
        0
    );
    assert_eq!(with("COMPLETED", (start, start + 8), None), 0);
    // Unset or nonsense never bills less than nothing or more than the span.
    assert_eq!(
        with("COMPLETED", (start, start + 8), Some((start + 8, 99))),
        0
    );
    assert_eq!(
        with("COMPLETED", (start, start + 8), Some((start + 50, 0))),
        0
    );
    let mut body = job(&["RUNNING"], 0, 0, "None");
    body["jobs"][0]["suspend_time"] = json!({"set": false, "infinite": false, "number": 0});
    assert_eq!(parse_job(&body).unwrap().suspended_s, 0);
}

/// A suspended job is running, and says the cluster suspended it, in both languages.
#[test]
fn a_suspended_job_runs_and_says_so() {
    let s = parse_job(&job(&["SUSPENDED"], 0, 0, "Resources")).unwrap();
    assert_eq!(
        (s.state, s.reason.as_deref()),
        (JobState::Running, Some(SUSPENDED))
    );
    let (en, zh) = s.message.unwrap();
    assert!(en.starts_with("suspended by the cluster") && en.contains("not billed"));
    assert!(zh.starts_with("被集群暂停") && zh.contains("不计费"));
    let s = parse_job(&job(&["RUNNING"], 0, 0, "None")).unwrap();
    assert_eq!((s.reason, s.message), (None, None));
}

/// While a job runs, Slurm's `end_time` is its forecast end (moved on by each resume): the
/// suspensions that ended come out of the same formula; the one going on says since when.
#[test]
fn a_live_job_says_what_it_spent_suspended() {
    let start = 1_796_638_148;
    let live = |state: &str, end: i64, last: i64, before: i64| {
        let s = timed(state, (start, end), Some((last, before)));
        (s.suspended_s, s.suspended_since)
    };
    // Suspended 2 s in (its first suspension): none before it, this one since then.
    assert_eq!(
        live("SUSPENDED", start + 1800, start + 2, 2),
        (0, Some(start + 2))
    );
    // Resumed after 6 s: the forecast end moved on by 6 s, and 6 s were spent suspended.
    assert_eq!(live("RUNNING", start + 1806, start + 8, 2), (6, None));
    // Suspended again later: the first suspension is counted, the second goes on.
    assert_eq!(
        live("SUSPENDED", start + 1806, start + 20, 14),
        (6, Some(start + 20))
    );
}
