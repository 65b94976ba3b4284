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
