//! The runner's HTTP API against the real `onramp-runner` binary: command jobs (logs with
//! offsets, exit codes, a clean environment), cancel killing the whole process group, the time
//! limit, a restarted runner running its active jobs again, the retention of ended jobs' folders, and the error
//! shapes.
//!
//! They need the built runner (`cargo build -p onramp-runner`), so they are ignored in a plain
//! `cargo test`; `cargo xtask test` builds it and runs them.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use onramp_tests::runner::TestRunner;
use serde_json::{Value, json};
use std::time::Duration;

fn command_job(job_id: &str, script: &str, time_limit_s: u64) -> Value {
    json!({"job_id": job_id, "task": "command", "spec_toml": "",
           "command": ["sh", "-c", script], "env": {}, "time_limit_s": time_limit_s,
           "report_url": null, "report_token": null})
}

fn terminal(s: &str) -> bool {
    !matches!(s, "queued" | "running" | "requeued")
}

/// Whether a process is gone (or a zombie waiting for its parent).
fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// A `sleep` that no other process runs: its argument, a number of seconds past 300.
fn sleep_marker() -> String {
    let n = u32::from_str_radix(&onramp_tests::stack::random_hex(6), 16).unwrap_or(0);
    format!("300.{n}")
}

/// The pid, as this machine sees it, of the `sleep {marker}` a job started: a sandboxed job sees
/// pids of its own namespace, so it cannot say which.
fn pid_of_sleep(marker: &str) -> u32 {
    let wanted = format!("sleep\0{marker}\0");
    onramp_tests::wait::until(
        &format!("a process `sleep {marker}`"),
        Duration::from_secs(20),
        || {
            let found = std::fs::read_dir("/proc")
                .map_err(|e| e.to_string())?
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
                .find(|pid| {
                    std::fs::read(format!("/proc/{pid}/cmdline"))
                        .is_ok_and(|c| c == wanted.as_bytes())
                });
            Ok(found)
        },
    )
    .unwrap()
}

#[test]
#[ignore = "needs the built runner: run through `cargo xtask test`"]
fn a_command_job_runs_with_its_logs_exit_code_and_a_clean_environment() {
    let r = TestRunner::start("runner-cmd").unwrap();
    let script = "echo out-1; echo err-1 >&2; echo \"x=$X secret=[$ONRAMP_RUNNER_SECRET] job=$ONRAMP_JOB_ID\"; exit 3";
    let mut body = command_job("edge-1", script, 30);
    body["env"] = json!({"X": "42"});
    let id = r.submit(&body).unwrap();
    assert!(id.starts_with("rj-"), "{id}");
    let v = r
        .wait_state(&id, Duration::from_secs(20), terminal)
        .unwrap();
    assert_eq!(v["state"], "failed", "{v}");
    assert_eq!(v["exit_code"], 3, "{v}");
    assert_eq!(v["job_id"], "edge-1");
    assert!(v["started_at"].as_str().unwrap().ends_with('Z'), "{v}");
    assert!(v["ended_at"].as_str().unwrap() >= v["started_at"].as_str().unwrap());
    assert_eq!(v["checkpoint"], false);
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("exited with code 3"),
        "{v}"
    );

    let log = r.read_log(&id).unwrap();
    assert!(log.contains("out-1\n") && log.contains("err-1\n"), "{log}");
    // The job sees its own environment, never the runner's secret.
    assert!(log.contains("x=42 secret=[] job=edge-1"), "{log}");
    assert!(!log.contains(&r.secret));

    // Reading from an offset gives the rest; the end is eof with nothing more.
    let (status, tail) = r.get(&format!("/jobs/{id}/logs?offset=6"));
    assert_eq!(status, 200, "{tail}");
    assert_eq!(tail["offset"], 6);
    assert_eq!(tail["text"].as_str().unwrap(), &log[6..]);
    let end = tail["next_offset"].as_u64().unwrap();
    assert_eq!(end as usize, log.len());
    let (_, at_end) = r.get(&format!("/jobs/{id}/logs?offset={end}"));
    assert_eq!(
        at_end,
        json!({"offset": end, "next_offset": end, "text": "", "eof": true})
    );
    let (status, past) = r.get(&format!("/jobs/{id}/logs?offset={}", end + 1));
    assert_eq!(status, 400, "{past}");
    assert_eq!(past["error"]["code"], "bad_request");

    // A job that exits 0 succeeds; both are listed.
    let ok = r.submit(&command_job("edge-2", "true", 30)).unwrap();
    let v = r
        .wait_state(&ok, Duration::from_secs(20), terminal)
        .unwrap();
    assert_eq!(
        (v["state"].clone(), v["exit_code"].clone()),
        (json!("succeeded"), json!(0))
    );
    let (_, list) = r.get("/jobs");
    let ids: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&id.as_str()) && ids.contains(&ok.as_str()),
        "{list}"
    );

    // A command that cannot start fails with the reason.
    let bad = json!({"job_id": "edge-3", "task": "command", "command": ["/no/such/program"],
                     "time_limit_s": 5});
    let bad = r.submit(&bad).unwrap();
    let v = r
        .wait_state(&bad, Duration::from_secs(20), terminal)
        .unwrap();
    assert_eq!(v["state"], "failed", "{v}");
    assert!(
        v["message"].as_str().unwrap().contains("cannot start"),
        "{v}"
    );
}

#[test]
#[ignore = "needs the built runner: run through `cargo xtask test`"]
fn cancel_kills_the_whole_process_group() {
    let r = TestRunner::start("runner-cancel").unwrap();
    // The job's own child, in the background: it must die with the job.
    let marker = sleep_marker();
    let id = r
        .submit(&command_job(
            "edge-c",
            &format!("sleep {marker} & wait"),
            600,
        ))
        .unwrap();
    r.wait_state(&id, Duration::from_secs(20), |s| s == "running")
        .unwrap();
    let pid = pid_of_sleep(&marker);
    assert!(!process_gone(pid));
    let (status, v) = r.post(&format!("/jobs/{id}/cancel"), &json!({}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(v, json!({"id": id, "state": "cancelled"}));
    onramp_tests::wait::until("the job's child to die", Duration::from_secs(10), || {
        Ok(process_gone(pid).then_some(()))
    })
    .unwrap();
    let v = r.wait_state(&id, Duration::from_secs(5), terminal).unwrap();
    assert_eq!(v["state"], "cancelled");
    assert_eq!(v["exit_code"], Value::Null);
    // Cancelling again changes nothing.
    let (status, again) = r.post(&format!("/jobs/{id}/cancel"), &json!({}));
    assert_eq!((status, again["state"].clone()), (200, json!("cancelled")));
}

#[test]
#[ignore = "needs the built runner: run through `cargo xtask test`"]
fn a_runner_with_one_card_runs_one_job_and_queues_the_next_with_a_reason() {
    let r = TestRunner::start("runner-capacity").unwrap();
    let flags = r.state_dir.join("flags");
    std::fs::create_dir_all(&flags).unwrap();
    let f = flags.display();
    // The first job holds the runner's only card until the test releases it.
    let first = r
        .submit(&command_job(
            "edge-first",
            &format!("while [ ! -f {f}/release ]; do sleep 0.05; done"),
            600,
        ))
        .unwrap();
    r.wait_state(&first, Duration::from_secs(20), |s| s == "running")
        .unwrap();
    // The second fails if it runs before the first was let go (a job writes nothing outside its
    // own folder: when it started is checked against the first's end below).
    let second = r
        .submit(&command_job(
            "edge-second",
            &format!("test -f {f}/release"),
            60,
        ))
        .unwrap();
    let (_, v) = r.get(&format!("/jobs/{second}"));
    assert_eq!(
        (v["state"].as_str(), v["reason"].as_str()),
        (Some("queued"), Some("CardsInUse")),
        "{v}"
    );
    let (_, v) = r.get(&format!("/jobs/{first}"));
    assert_eq!(
        (v["state"].as_str(), v["reason"].as_str()),
        (Some("running"), None),
        "{v}"
    );

    std::fs::write(flags.join("release"), "").unwrap();
    let a = r
        .wait_state(&first, Duration::from_secs(20), terminal)
        .unwrap();
    let b = r
        .wait_state(&second, Duration::from_secs(20), terminal)
        .unwrap();
    assert_eq!(
        (a["state"].as_str(), b["state"].as_str()),
        (Some("succeeded"), Some("succeeded")),
        "{a} {b}"
    );
    assert!(
        b["started_at"].as_str() >= a["ended_at"].as_str(),
        "{a} {b}"
    );
    assert_eq!(b["reason"], Value::Null, "{b}");
}

#[test]
#[ignore = "needs the built runner: run through `cargo xtask test`"]
fn the_time_limit_kills_the_job_as_timed_out() {
    let r = TestRunner::start("runner-limit").unwrap();
    let id = r
        .submit(&command_job("edge-t", "echo started; sleep 120", 1))
        .unwrap();
    let v = r
        .wait_state(&id, Duration::from_secs(15), terminal)
        .unwrap();
    assert_eq!(v["state"], "timed_out", "{v}");
    let log = r.read_log(&id).unwrap();
    assert!(log.starts_with("started\n"), "{log}");
    assert!(log.contains("time limit of 1 s"), "{log}");
}

#[test]
#[ignore = "needs the built runner: run through `cargo xtask test`"]
fn an_ended_jobs_folder_goes_after_the_retention_and_its_record_stays() {
    let r =
        TestRunner::start_with("runner-retention", &["--cards", "2", "--retention", "2s"]).unwrap();
    let marker = sleep_marker();
    let active = r
        .submit(&command_job(
            "edge-long",
            &format!("echo mine > mine.txt; exec sleep {marker}"),
            600,
        ))
        .unwrap();
    r.wait_state(&active, Duration::from_secs(20), |s| s == "running")
        .unwrap();
    let done = r
        .submit(&command_job("edge-short", "echo mine > mine.txt", 30))
        .unwrap();
    let v = r
        .wait_state(&done, Duration::from_secs(20), terminal)
        .unwrap();
    assert_eq!(v["state"], "succeeded", "{v}");
    let folder = r.job_dir(&done);
    assert!(folder.join("mine.txt").is_file());
    onramp_tests::wait::until(
        "the ended job's folder to go",
        Duration::from_secs(30),
        || Ok((!folder.exists()).then_some(())),
    )
    .unwrap();
    assert!(r.log().contains("its folder is removed"), "{}", r.log());
    // Its record stays, so the edge still learns how it ended.
    let (status, v) = r.get(&format!("/jobs/{done}"));
    assert_eq!(
        (status, v["state"].as_str()),
        (200, Some("succeeded")),
        "{v}"
    );
    // A running job keeps its folder, however long it has run.
    let (_, v) = r.get(&format!("/jobs/{active}"));
    assert_eq!(v["state"], "running", "{v}");
    assert!(r.job_dir(&active).join("mine.txt").is_file());
    let (status, _) = r.post(&format!("/jobs/{active}/cancel"), &json!({}));
    assert_eq!(status, 200);
}

/// A job that saves its step on SIGTERM (as the trainer saves its checkpoint) and starts from
/// the saved step: it counts to 60, a step every 0.1 s.
const RESUMABLE: &str = "n=$(cat step 2>/dev/null || echo 0); echo \"starts at $n\"; \
    trap 'echo $n > step; echo \"saved at $n\"; exit 143' TERM; \
    while [ $n -lt 60 ]; do n=$((n+1)); echo $n > progress; sleep 0.1; done; echo \"done at $n\"";

#[test]
#[ignore = "needs the built runner: run through `cargo xtask test`"]
fn a_restarted_runner_runs_its_active_jobs_again_from_their_checkpoints() {
    let mut r = TestRunner::start("runner-restart").unwrap();
    let done = r
        .submit(&command_job("edge-done", "echo finished", 30))
        .unwrap();
    r.wait_state(&done, Duration::from_secs(20), terminal)
        .unwrap();
    let active = r
        .submit(&command_job("edge-active", RESUMABLE, 600))
        .unwrap();
    let progress = r.job_dir(&active).join("progress");
    let at_step = |n: u32| {
        move || {
            let step: u32 = std::fs::read_to_string(&progress)
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0);
            Ok((step >= n).then_some(()))
        }
    };
    onramp_tests::wait::until("step 10", Duration::from_secs(30), at_step(10)).unwrap();

    // A crash leaves the job running; the next runner stops it (SIGTERM: it saves its step) and
    // runs it again as its second attempt, which starts where the first saved.
    r.crash();
    r.restart().unwrap();
    let v = r
        .wait_state(&active, Duration::from_secs(60), terminal)
        .unwrap();
    assert_eq!(v["state"], "succeeded", "{v}\n{}", r.log());
    assert_eq!(v["attempt"], 1, "{v}");
    let requeued = edge::time::parse_rfc3339_ms(v["requeued_at"].as_str().unwrap()).unwrap();
    let started = edge::time::parse_rfc3339_ms(v["started_at"].as_str().unwrap()).unwrap();
    assert!(
        requeued <= started,
        "the second attempt starts after the first stopped: {v}"
    );
    let log = r.read_log(&active).unwrap();
    let saved: u32 = after(&log, "saved at ");
    assert!(saved >= 10, "{log}");
    assert_eq!(after::<u32>(&log, "starts at "), 0, "{log}");
    assert!(log.contains("attempt 2 of this job starts"), "{log}");
    assert!(log.contains(&format!("starts at {saved}\n")), "{log}");
    assert!(log.ends_with("done at 60\n"), "{log}");
    // The finished job and its log are as they were.
    let (_, v) = r.get(&format!("/jobs/{done}"));
    assert_eq!(
        (v["state"].as_str(), v.get("attempt")),
        (Some("succeeded"), None),
        "{v}"
    );
    assert_eq!(r.read_log(&done).unwrap(), "finished\n");
}

#[test]
#[ignore = "needs the built runner: run through `cargo xtask test`"]
fn a_runner_stopped_leaves_its_running_job_requeued_and_the_next_runs_it() {
    let mut r = TestRunner::start("runner-stop").unwrap();
    let marker = sleep_marker();
    let second = r
        .submit(&command_job("edge-second", &format!("sleep {marker}"), 600))
        .unwrap();
    r.wait_state(&second, Duration::from_secs(20), |s| s == "running")
        .unwrap();
    let pid = pid_of_sleep(&marker);
    r.service.take(); // SIGTERM to the runner
    assert!(process_gone(pid), "a stopped runner stops its jobs");
    let record =
        std::fs::read_to_string(r.state_dir.join(format!("state/records/{second}.json"))).unwrap();
    let record: Value = serde_json::from_str(&record).unwrap();
    assert_eq!(
        (record["state"].as_str(), record["attempt"].as_u64()),
        (Some("requeued"), Some(1)),
        "{record}"
    );
    r.restart().unwrap();
    let v = r
        .wait_state(&second, Duration::from_secs(20), |s| s == "running")
        .unwrap();
    assert_eq!(v["attempt"], 1, "{v}");
    let again = pid_of_sleep(&marker);
    assert_ne!(again, pid);
    let (status, v) = r.post(&format!("/jobs/{second}/cancel"), &json!({}));
    assert_eq!(
        (status, v["state"].as_str()),
        (200, Some("cancelled")),
        "{v}"
    );
}

/// The number after the first `prefix` in `log`.
fn after<T: std::str::FromStr>(log: &str, prefix: &str) -> T {
    let at = log
        .find(prefix)
        .unwrap_or_else(|| panic!("no {prefix:?} in {log}"))
        + prefix.len();
    let digits: String = log[at..].chars().take_while(char::is_ascii_digit).collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no number after {prefix:?} in {log}"))
}

#[test]
#[ignore = "needs the built runner: run through `cargo xtask test`"]
fn bad_requests_get_the_json_error_shape() {
    let r = TestRunner::start("runner-errors").unwrap();
    let unauthorized = onramp_tests::http()
        .get(&format!("{}/jobs", r.url))
        .call()
        .unwrap();
    assert_eq!(unauthorized.status(), 401);

    let cases = [
        (
            json!({"job_id": "a", "task": "dance", "time_limit_s": 5}),
            "task",
        ),
        (
            json!({"job_id": "a", "task": "command", "command": [], "time_limit_s": 5}),
            "command",
        ),
        (
            json!({"job_id": "a", "task": "command", "command": ["true"], "time_limit_s": 0}),
            "time_limit_s",
        ),
        (
            json!({"job_id": "a", "task": "tiny-train", "spec_toml": "name = 'x'\ntask = 'sft'", "time_limit_s": 5}),
            "spec_toml",
        ),
        (
            json!({"job_id": "a", "task": "command", "command": ["true"], "time_limit_s": 5,
                "report_url": "http://127.0.0.1:9/r"}),
            "report_token",
        ),
        (json!({"task": "command"}), "body"),
    ];
    for (body, field) in cases {
        let (status, v) = r.post("/jobs", &body);
        assert_eq!(status, 400, "{body} → {v}");
        assert_eq!(v["error"]["code"], "bad_request", "{v}");
        assert_eq!(v["error"]["details"]["field"], field, "{body} → {v}");
        assert!(!v["error"]["message"].as_str().unwrap().is_empty());
    }
    // An unknown job has a code of its own: the edge ends a job only on that one.
    let (status, v) = r.get("/jobs/rj-nope");
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (404, json!("no_such_job"))
    );
    let (status, _) = r.get("/jobs/rj-nope/logs");
    assert_eq!(status, 404);
    let (status, _) = r.post("/jobs/rj-nope/cancel", &json!({}));
    assert_eq!(status, 404);
    let (status, v) = r.get("/nothing/here");
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (404, json!("not_found"))
    );

    // The same job_id twice is the same job; with other content it is a conflict.
    let body = command_job("edge-dup", "true", 30);
    let first = r.submit(&body).unwrap();
    assert_eq!(r.submit(&body).unwrap(), first);
    let (status, v) = r.post("/jobs", &command_job("edge-dup", "false", 30));
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (409, json!("conflict"))
    );
    // The edge finds a job by its own id after a submission whose answer it never got.
    let (status, found) = r.get("/jobs?job_id=edge-dup");
    assert_eq!(status, 200, "{found}");
    assert_eq!(found.as_array().map(Vec::len), Some(1), "{found}");
    assert_eq!(found[0]["id"], first.as_str());
    let (_, none) = r.get("/jobs?job_id=no-such-edge-job");
    assert_eq!(none, json!([]));

    let (status, h) = r.get("/health");
    assert_eq!(status, 200);
    assert_eq!(h["service"], "onramp-runner");
    assert_eq!(h["resources"]["gpus"], 0);
    assert!(h["resources"]["cpus"].as_u64().unwrap() >= 1, "{h}");
    assert!(h["resources"]["memory_bytes"].as_u64().unwrap() > 0, "{h}");
    assert!(h["resources"]["running_jobs"].is_u64(), "{h}");
}
