//! End to end through the edge's jobs API with the real runner: a tiny-train spec submitted to
//! `POST /api/jobs` is dispatched to `onramp-runner`, really trains, its metrics reach the edge
//! with the job's token, its checkpoint is served through the edge, and its credit hold settles
//! to the time it ran. A job that reaches its time limit is killed and pays its whole hold; a job
//! whose runner crashes runs again under the next runner and is billed for both attempts.
//!
//! Needs the built stack (worker, runner) and `../shared`: ignored in a plain `cargo test`, run by
//! `cargo xtask test`.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use onramp_tests::api::{Client, unique_email};
use onramp_tests::stack::{Stack, StackExtras, StackOptions, random_hex};
use serde_json::Value;
use std::time::Duration;

const GRANT: i64 = 10_000;

fn tiny_spec(steps: u32) -> String {
    onramp_tests::specs::tiny_train(steps)
}

#[test]
#[ignore = "needs the built stack and ../shared: run through `cargo xtask test`"]
fn a_tiny_train_job_runs_on_the_runner_through_the_edge_and_settles() {
    let stack = Stack::start_with(
        StackOptions::for_test("runner-edge"),
        StackExtras {
            vars: vec![("SIGNUP_GRANT_FEN".into(), GRANT.to_string())],
            extra_backends: Vec::new(),
        },
    )
    .expect("stack starts");
    let u = stack.signup(&unique_email("tiny"), "correct horse battery");
    let a = u.request(
        "POST",
        "/api/jobs",
        Some(tiny_spec(30).into_bytes()),
        &[
            ("content-type", "application/toml"),
            ("idempotency-key", &random_hex(8)),
        ],
    );
    assert_eq!(a.status, 201, "{:?}", a.json);
    assert_eq!(a.json["backend"], "local", "{:?}", a.json);
    let id = a.json["id"].as_str().expect("id").to_string();
    let hold = a.json["hold_fen"].as_i64().expect("hold");
    assert!(hold > 0, "{:?}", a.json);
    assert_eq!(u.balance(), GRANT - hold);

    let job = onramp_tests::wait::until("the job to finish", Duration::from_secs(300), || {
        let j = u.get(&format!("/api/jobs/{id}")).json;
        match j["state"].as_str() {
            Some("queued" | "running") => Err(format!("so far: {j}")),
            Some(_) => Ok(Some(j)),
            None => Err(format!("no state in {j}")),
        }
    })
    .unwrap_or_else(|e| panic!("{e}\n--- runner log ---\n{}", runner_log(&stack)));
    assert_eq!(job["state"], "succeeded", "{job}");

    // The job's own reports reached the edge: real losses, step by step.
    let m = u.get(&format!("/api/jobs/{id}/metrics")).json;
    let points: Vec<&Value> = m["metrics"].as_array().expect("metrics").iter().collect();
    assert!(points.len() >= 10, "{m}");
    assert_eq!(points.last().expect("a point")["step"], 30, "{m}");
    assert!(
        points
            .iter()
            .all(|p| p["loss"].as_f64().is_some_and(|l| l > 0.0 && l < 10.0))
    );

    // The hold settled to the card time used, the rest released.
    let charged = job["charged_fen"].as_i64().expect("charged");
    assert!((0..=hold).contains(&charged), "{job}");
    assert_eq!(u.balance(), GRANT - charged);
    let ledger = u.get("/api/ledger").json;
    let kinds: Vec<&str> = ledger["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert!(
        kinds.contains(&"hold") && kinds.contains(&"release"),
        "{ledger}"
    );

    // The checkpoint comes through the edge as model-tiny's safetensors.
    let ck = u.get(&format!("/api/jobs/{id}/checkpoint"));
    assert_eq!(ck.status, 200, "{:?}", ck.json);
    let header_len = u64::from_le_bytes(ck.bytes[..8].try_into().expect("8 bytes")) as usize;
    let header: Value = serde_json::from_slice(&ck.bytes[8..8 + header_len]).expect("header");
    assert_eq!(header["__metadata__"]["format"], "onramp-model-tiny/1");
    checkpoint_is_the_pushed_artifact(&u, &id, &ck.bytes);
}

/// The checkpoint the edge serves is the artifact tiny-train pushed to the edge's R2: the same
/// bytes, a range of them too.
fn checkpoint_is_the_pushed_artifact(u: &Client, id: &str, checkpoint: &[u8]) {
    let files = u.artifacts_checked(id, &["model.safetensors"]);
    assert_eq!(
        files[0].1, checkpoint,
        "the checkpoint is the pushed artifact"
    );
    let head = u.request(
        "GET",
        &format!("/api/jobs/{id}/checkpoint"),
        None,
        &[("range", "bytes=0-7")],
    );
    assert_eq!(
        (head.status, head.bytes.as_slice()),
        (206, &checkpoint[..8])
    );
}

/// A tiny-train job that trains far longer than its time limit (or the test) waits, but not so
/// long that jobspec calls the limit physically impossible (the 100%-MFU bound).
fn endless_spec(time_limit: &str, steps: u32) -> String {
    tiny_spec(steps).replace(
        "time_limit = \"30m\"",
        &format!("time_limit = \"{time_limit}\""),
    )
}

fn submit(u: &Client, spec: &str) -> Value {
    let a = u.submit_spec(spec, &random_hex(8));
    assert_eq!(a.status, 201, "{:?}", a.json);
    a.json
}

fn wait_state(
    stack: &Stack,
    u: &Client,
    id: &str,
    done: impl Fn(&str) -> bool,
    secs: u64,
) -> Value {
    onramp_tests::wait::until(&format!("job {id}"), Duration::from_secs(secs), || {
        let j = u.get(&format!("/api/jobs/{id}")).json;
        match j["state"].as_str() {
            Some(s) if done(s) => Ok(Some(j)),
            _ => Err(format!("so far: {j}")),
        }
    })
    .unwrap_or_else(|e| panic!("{e}\n--- runner log ---\n{}", runner_log(stack)))
}

/// What `seconds` of one CPU cost at `price` fen an hour (rounded up, as the edge bills).
fn cost_of(seconds: u64, price: u64) -> i64 {
    i64::try_from(jobspec::estimate::cost_fen(price, 1, seconds)).unwrap()
}

#[test]
#[ignore = "needs the built stack and ../shared: run through `cargo xtask test`"]
fn the_time_limit_bills_the_whole_hold_and_a_crashed_runner_runs_its_job_again() {
    let mut stack = Stack::start_with(
        StackOptions::for_test("runner-faults"),
        StackExtras {
            vars: vec![("SIGNUP_GRANT_FEN".into(), GRANT.to_string())],
            extra_backends: Vec::new(),
        },
    )
    .expect("stack starts");
    let u = stack.signup(&unique_email("faults"), "correct horse battery");

    // The time limit: the runner kills the job and says so; the edge captures the whole hold.
    let a = submit(&u, &endless_spec("4s", 5_000));
    let id = a["id"].as_str().unwrap().to_string();
    let hold = a["hold_fen"].as_i64().unwrap();
    assert!(hold > 0, "{a}");
    let job = wait_state(&stack, &u, &id, |s| s != "queued" && s != "running", 60);
    assert_eq!(job["state"], "timed_out", "{job}");
    assert_eq!(job["charged_fen"], hold, "{job}");
    assert_eq!(u.balance(), GRANT - hold);

    a_crashed_runners_job_runs_again_billed_twice(&mut stack, &u);
}

/// A crash: the runner dies while the job trains. Until a runner answers, the sweep cannot tell
/// and charges nothing; the restarted runner stops what was left of the job and runs it again
/// (requeued, then running its second attempt); the edge bills both attempts.
fn a_crashed_runners_job_runs_again_billed_twice(stack: &mut Stack, u: &Client) {
    let before = u.balance();
    let submitted = std::time::Instant::now();
    let a = submit(u, &endless_spec("1h", 1_000_000));
    let id = a["id"].as_str().unwrap().to_string();
    let hold = a["hold_fen"].as_i64().unwrap();
    wait_state(stack, u, &id, |s| s == "running", 60);
    // The first attempt trains a while (2 s), so that its time is more than a start. (Its
    // metrics come every 1% of its million steps: no step to wait for.)
    onramp_tests::wait::until("2 s of training", Duration::from_secs(60), || {
        let j = u.get(&format!("/api/jobs/{id}")).json;
        let started = j["started_at"]
            .as_str()
            .and_then(edge::time::parse_rfc3339_ms);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|e| e.to_string())?
            .as_millis();
        let now = i64::try_from(now).map_err(|e| e.to_string())?;
        Ok(started.filter(|t| now - t >= 2_000).map(|_| ()))
    })
    .unwrap();
    kill_runner(stack);
    let admin = Client::with_bearer(&stack.url, &stack.admin_token);
    let r = admin.request("POST", "/api/admin/reconcile?silent_after_s=0", None, &[]);
    assert_eq!(
        (r.status, r.json["unreachable"].as_i64()),
        (200, Some(1)),
        "{:?}",
        r.json
    );
    assert_eq!(u.get(&format!("/api/jobs/{id}")).json["state"], "running");
    assert_eq!(u.balance(), before - hold);

    stack.crash_and_restart_runner().unwrap();
    let job = onramp_tests::wait::until("the second attempt", Duration::from_secs(60), || {
        let r = admin.request("POST", "/api/admin/reconcile?silent_after_s=0", None, &[]);
        assert_eq!(r.status, 200, "{:?}", r.json);
        let j = u.get(&format!("/api/jobs/{id}")).json;
        let second = j["attempts"][1]["started_at"].is_string();
        if j["state"] == "running" && second {
            Ok(Some(j))
        } else {
            Err(format!("so far: {j}"))
        }
    })
    .unwrap_or_else(|e| panic!("{e}\n--- runner log ---\n{}", runner_log(stack)));
    let first = &job["attempts"][0];
    let t = |v: &Value| edge::time::parse_rfc3339_ms(v.as_str().unwrap()).unwrap();
    let first_ms = t(&first["ended_at"]) - t(&first["started_at"]);
    assert!(first_ms > 0, "{job}");
    assert!(
        t(&first["ended_at"]) <= t(&job["attempts"][1]["started_at"]),
        "{job}"
    );
    let r = u.post(&format!("/api/jobs/{id}/cancel"), &serde_json::json!({}));
    assert_eq!(r.status, 200, "{:?}", r.json);
    let job = wait_state(stack, u, &id, |s| s == "cancelled", 30);
    let charged = job["charged_fen"].as_i64().unwrap();
    // At least the first attempt's time (a second of slack for whole-second times), at most what
    // the time from submission to settlement costs, and less than the hold.
    let first_cost = cost_of(
        u64::try_from(first_ms / 1000).unwrap().saturating_sub(1),
        10,
    );
    let upper = cost_of(submitted.elapsed().as_secs() + 1, 10);
    assert!((first_cost..=upper).contains(&charged), "{job}");
    assert!(charged < hold, "{job}");
    assert_eq!(u.balance(), before - charged);
    println!(
        "runner restart: attempt 0 ran {first_ms} ms; charged {charged} fen (attempt 0 alone \
         {first_cost}, hold {hold})"
    );
    a_later_sweep_changes_nothing(&admin, u, &id, before - charged);
}

/// Kills the stack's runner (its jobs, in process groups of their own, go on) and waits until it
/// no longer answers.
fn kill_runner(stack: &Stack) {
    let runner_url = stack.runner_url.clone().unwrap();
    if let Some(r) = stack.runner.as_ref() {
        onramp_tests::process::signal_group(r.pid(), "KILL");
    }
    onramp_tests::wait::until(
        "the runner to stop answering",
        Duration::from_secs(10),
        || {
            Ok(onramp_tests::http()
                .get(&format!("{runner_url}/health"))
                .call()
                .is_err()
                .then_some(()))
        },
    )
    .unwrap();
}

fn a_later_sweep_changes_nothing(admin: &Client, u: &Client, id: &str, balance: i64) {
    let charged = u.get(&format!("/api/jobs/{id}")).json["charged_fen"].clone();
    let r = admin.request("POST", "/api/admin/reconcile?silent_after_s=0", None, &[]);
    assert_eq!(r.status, 200, "{:?}", r.json);
    assert_eq!(
        u.get(&format!("/api/jobs/{id}")).json["charged_fen"],
        charged
    );
    assert_eq!(u.balance(), balance);
}

fn runner_log(stack: &Stack) -> String {
    stack
        .runner
        .as_ref()
        .map(|r| r.log_tail(3000))
        .unwrap_or_default()
}
