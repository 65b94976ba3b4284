//! A `lora` job on the real runner runs onramp-train on the CPU, as the edge dispatches it: a
//! command job carrying the spec, whose command is jobspec's own launch line. The loss falls,
//! the metrics are POSTed with the job's token, and the adapter lands in the job's folder.
//!
//! Needs the built runner, `../shared` and the trainer's environment (`ONRAMP_PYTHON`, or the
//! one `cargo xtask setup` installed): ignored in a plain `cargo test`, run by `cargo xtask test`.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use onramp_tests::runner::{ReportSink, TestRunner};
use serde_json::{Value, json};
use std::time::Duration;

fn spec() -> String {
    onramp_tests::specs::lora_cpu("runner-lora", "runner")
}

#[test]
#[ignore = "needs the built runner, ../shared and the trainer's environment: run through `cargo xtask test`"]
fn a_lora_job_trains_with_onramp_train_and_leaves_its_adapter() {
    let (valid, diags) = jobspec::validate_toml(&spec());
    let valid = valid.unwrap_or_else(|| panic!("{diags:?}"));
    let command = jobspec::launch::torchrun_command(&valid);
    assert_eq!(command, "python -m onramp_train onramp-run.json");

    let r = TestRunner::start("runner-trainer").unwrap();
    let sink = ReportSink::start().unwrap();
    let body = json!({"job_id": "edge-lora", "task": "command", "spec_toml": spec(),
        "command": ["sh", "-c", command], "env": {}, "time_limit_s": 1200,
        "report_url": sink.url, "report_token": "tok-lora"});
    let id = r.submit(&body).unwrap();
    let v = r
        .wait_state(&id, Duration::from_secs(900), |s| {
            !matches!(s, "queued" | "running")
        })
        .unwrap();
    let log = r.read_log(&id).unwrap();
    assert_eq!(v["state"], "succeeded", "{v}\n{log}");
    assert!(log.contains("lora of mini (config: mini)"), "{log}");

    let adapter = r.job_dir(&id).join("out/final/adapter_config.json");
    assert!(
        adapter.is_file(),
        "no adapter at {}\n{log}",
        adapter.display()
    );

    let got = onramp_tests::wait::until("the last metrics", Duration::from_secs(20), || {
        let got = sink.received();
        let steps: Vec<u64> = got
            .iter()
            .filter_map(|g| g.body["metrics"].as_array())
            .flatten()
            .filter_map(|m| m["step"].as_u64())
            .collect();
        Ok(steps.contains(&12).then_some(got))
    })
    .unwrap();
    assert!(
        got.iter()
            .all(|g| g.authorization.as_deref() == Some("Bearer tok-lora"))
    );
    let losses: Vec<f64> = got
        .iter()
        .filter_map(|g| g.body["metrics"].as_array())
        .flatten()
        .map(|m: &Value| m["loss"].as_f64().unwrap())
        .collect();
    let (first, last) = (losses[0], *losses.last().unwrap());
    assert!(last < first, "the loss did not fall: {losses:?}");
}

/// Every step's loss that reports with `token` carried, the last word for each step.
fn losses(sink: &ReportSink, token: &str) -> std::collections::BTreeMap<u64, f64> {
    let auth = format!("Bearer {token}");
    sink.received()
        .iter()
        .filter(|g| g.authorization.as_deref() == Some(auth.as_str()))
        .filter_map(|g| g.body["metrics"].as_array())
        .flatten()
        .filter_map(|m| Some((m["step"].as_u64()?, m["loss"].as_f64()?)))
        .collect()
}

#[test]
#[ignore = "needs the built runner, ../shared and the trainer's environment: run through `cargo xtask test`"]
fn a_lora_job_resumes_from_its_checkpoint_when_its_runner_crashed() {
    let toml = spec().replace("steps = 12", "steps = 16") + "\n[checkpoint]\nevery_steps = 4\n";
    let (valid, diags) = jobspec::validate_toml(&toml);
    let valid = valid.unwrap_or_else(|| panic!("{diags:?}"));
    let command = jobspec::launch::torchrun_command(&valid);
    let mut r = TestRunner::start("runner-trainer-crash").unwrap();
    let sink = ReportSink::start().unwrap();
    let body = |job: &str, token: &str| {
        json!({"job_id": job, "task": "command", "spec_toml": toml,
            "command": ["sh", "-c", command], "env": {}, "time_limit_s": 1200,
            "report_url": sink.url, "report_token": token})
    };
    let id = r.submit(&body("edge-crash", "tok-crash")).unwrap();
    onramp_tests::wait::until("step 5", Duration::from_secs(600), || {
        Ok(losses(&sink, "tok-crash").contains_key(&5).then_some(()))
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", r.read_log(&id).unwrap_or_default()));

    // The runner dies; the next one stops the trainer it left (SIGTERM: it saves a checkpoint at
    // the end of its step) and runs the job again, which resumes there.
    r.crash();
    r.restart().unwrap();
    let v = r
        .wait_state(&id, Duration::from_secs(900), |s| {
            !matches!(s, "queued" | "running" | "requeued")
        })
        .unwrap();
    let log = r.read_log(&id).unwrap();
    assert_eq!(
        (v["state"].as_str(), v["attempt"].as_u64()),
        (Some("succeeded"), Some(1)),
        "{v}\n{log}"
    );
    assert!(
        log.contains("stopped by the cluster (SIGTERM) at step"),
        "{log}"
    );
    let second = &log[log
        .find("attempt 2 of this job starts")
        .expect("the second attempt")..];
    let from: u64 = second
        .split("resuming from ")
        .nth(1)
        .and_then(|l| {
            l.lines()
                .next()?
                .rsplit("checkpoint-")
                .next()?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("the second attempt did not resume: {second}"));
    assert!(from >= 5, "{log}");

    // The same spec without a crash: every step's loss is the same.
    let whole = r.submit(&body("edge-whole", "tok-whole")).unwrap();
    let v = r
        .wait_state(&whole, Duration::from_secs(900), |s| {
            !matches!(s, "queued" | "running")
        })
        .unwrap();
    assert_eq!(v["state"], "succeeded", "{v}");
    let (a, b) = (losses(&sink, "tok-crash"), losses(&sink, "tok-whole"));
    assert_eq!(
        a.keys().copied().collect::<Vec<_>>(),
        (1..=16).collect::<Vec<_>>(),
        "{a:?}"
    );
    assert_eq!(a.len(), b.len(), "{a:?}\n{b:?}");
    for ((step, x), y) in a.iter().zip(b.values()) {
        assert!((x - y).abs() <= 1e-4 * x.abs(), "step {step}: {a:?}\n{b:?}");
    }
    println!(
        "runner crash: resumed from step {from}; the losses of all 16 steps equal an uninterrupted run's"
    );
}
