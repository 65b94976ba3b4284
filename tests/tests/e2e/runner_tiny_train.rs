//! A tiny-train job on the real runner really trains model-tiny: the loss falls, the metrics and
//! state changes are POSTed with the job's token to a stand-in for the edge, and the checkpoint
//! it writes is served as model-tiny's self-describing safetensors file.
//!
//! Needs the built runner and `../shared` (models, tinyshakespeare): ignored in a plain
//! `cargo test`, run by `cargo xtask test`.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use onramp_tests::runner::{Received, ReportSink, TestRunner};
use serde_json::{Value, json};
use std::time::Duration;

/// The tiny-train template, shortened so the test takes seconds.
fn spec(steps: u32) -> String {
    let template = include_str!("../../../jobspec/specs/tiny-train-stories260k.toml");
    template
        .replace("steps = 200", &format!("steps = {steps}"))
        .replace("seq_len = 256", "seq_len = 64")
        .replace("micro_batch = 8", "micro_batch = 4")
}

#[test]
#[ignore = "needs the built runner and ../shared: run through `cargo xtask test`"]
fn a_tiny_train_job_trains_reports_metrics_and_writes_a_checkpoint() {
    let r = TestRunner::start("runner-tiny").unwrap();
    let sink = ReportSink::start().unwrap();
    let body = json!({"job_id": "edge-tiny", "task": "tiny-train", "spec_toml": spec(60),
        "env": {}, "time_limit_s": 600, "report_url": sink.url, "report_token": "tok-123"});
    let started = std::time::Instant::now();
    let id = r.submit(&body).unwrap();
    let v = r
        .wait_state(&id, Duration::from_secs(300), |s| {
            !matches!(s, "queued" | "running")
        })
        .unwrap();
    let took = started.elapsed();
    let log = r.read_log(&id).unwrap();
    assert_eq!(v["state"], "succeeded", "{v}\n{log}");
    assert_eq!(v["checkpoint"], true, "{v}");
    assert!(log.contains("fine-tuning its published weights"), "{log}");
    eprintln!("tiny-train: 60 steps of 4x64 in {took:.1?}");

    // Every report carries the job's token; the state goes running → succeeded, after the metrics.
    let got = onramp_tests::wait::until("the final report", Duration::from_secs(20), || {
        let got = sink.received();
        Ok(got
            .iter()
            .any(|g| g.body["state"] == "succeeded")
            .then_some(got))
    })
    .unwrap();
    assert!(
        got.iter()
            .all(|g| g.authorization.as_deref() == Some("Bearer tok-123"))
    );
    let got = reports_apart_from_the_push(got);
    let states: Vec<&str> = got
        .iter()
        .filter_map(|g| g.body["state"].as_str())
        .collect();
    assert_eq!(states, ["running", "succeeded"], "{got:?}");
    let last_state = got
        .iter()
        .position(|g| g.body["state"] == "succeeded")
        .unwrap();
    let metrics: Vec<&Value> = got[..last_state]
        .iter()
        .filter_map(|g| g.body["metrics"].as_array())
        .flatten()
        .collect();
    let steps: Vec<u64> = metrics
        .iter()
        .map(|m| m["step"].as_u64().unwrap())
        .collect();
    assert!(steps.len() >= 10, "{steps:?}");
    assert!(steps.windows(2).all(|w| w[0] < w[1]), "{steps:?}");
    assert_eq!(*steps.last().unwrap(), 60);
    for m in &metrics {
        for key in ["loss", "lr", "tokens_per_s", "elapsed_s"] {
            assert!(m[key].as_f64().is_some_and(f64::is_finite), "{key} in {m}");
        }
    }
    // Real training: the loss on tinyshakespeare falls from where stories260K starts.
    let first = metrics[0]["loss"].as_f64().unwrap();
    let last_val = metrics
        .iter()
        .rev()
        .find_map(|m| m["val_loss"].as_f64())
        .unwrap();
    let last = metrics.last().unwrap()["loss"].as_f64().unwrap();
    assert!(
        last < first && last_val < first,
        "loss {first} → {last} (val {last_val})"
    );

    // The checkpoint is model-tiny's safetensors with its config inside.
    let (status, bytes) = r.get_bytes(&format!("/jobs/{id}/checkpoint"));
    assert_eq!(status, 200);
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: Value = serde_json::from_slice(&bytes[8..8 + header_len]).unwrap();
    assert_eq!(
        header["__metadata__"]["format"], "onramp-model-tiny/1",
        "{header}"
    );
    let config: Value =
        serde_json::from_str(header["__metadata__"]["config"].as_str().unwrap()).unwrap();
    assert_eq!(config["dim"], 64);
    assert_eq!(config["vocab_size"], 512);
    assert!(header["tok_embeddings.weight"].is_object(), "{header}");

    // A command job has no checkpoint.
    let (status, _) = r.get_bytes("/jobs/rj-none/checkpoint");
    assert_eq!(status, 404);
}

#[test]
#[ignore = "needs the built runner and ../shared: run through `cargo xtask test`"]
fn a_tiny_train_job_that_cannot_report_still_trains() {
    let r = TestRunner::start("runner-tiny-noreport").unwrap();
    // Nothing listens on port 9 (discard): every report fails, training must not.
    let body = json!({"job_id": "edge-tiny2", "task": "tiny-train", "spec_toml": spec(10),
        "time_limit_s": 600, "report_url": "http://127.0.0.1:9/report", "report_token": "t"});
    let id = r.submit(&body).unwrap();
    let v = r
        .wait_state(&id, Duration::from_secs(300), |s| {
            !matches!(s, "queued" | "running")
        })
        .unwrap();
    let log = r.read_log(&id).unwrap();
    assert_eq!(v["state"], "succeeded", "{v}\n{log}");
    assert!(
        log.contains("report to http://127.0.0.1:9/report failed"),
        "{log}"
    );
    assert_eq!(v["checkpoint"], true);
}

/// What the sink received, less the job's push of its checkpoint as the artifact
/// `model.safetensors`, which it must have tried (this sink keeps none: the push fails, which
/// does not fail the job).
fn reports_apart_from_the_push(got: Vec<Received>) -> Vec<Received> {
    let (reports, pushed): (Vec<_>, Vec<_>) = got.into_iter().partition(|g| g.path == "/report");
    assert!(
        !pushed.is_empty()
            && pushed
                .iter()
                .all(|g| g.path.starts_with("/artifacts/model.safetensors")),
        "{pushed:?}"
    );
    reports
}
