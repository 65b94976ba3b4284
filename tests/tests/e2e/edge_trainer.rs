//! A `lora` job through the whole stack: its corpus uploaded with `onramp datasets upload` and
//! named in the spec by its id, submitted to the edge's `POST /api/jobs`, dispatched to the
//! local runner, the dataset fetched by the job from the edge with its own token, trained by onramp-train on the CPU (the real program GPU jobs run), its
//! metrics on the job's loss curve through the edge, its hold settled to the time it ran, and its
//! adapter pushed to the edge's R2 as the job's artifacts, each downloadable and checked.
//!
//! Needs the built stack, `../shared` and the trainer's environment (`ONRAMP_PYTHON`, which
//! `cargo xtask test` sets): ignored in a plain `cargo test`.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use onramp_tests::api::unique_email;
use onramp_tests::cli::onramp;
use onramp_tests::stack::{Stack, StackExtras, StackOptions, random_hex};
use std::time::Duration;

const GRANT: i64 = 10_000;

fn spec() -> String {
    onramp_tests::specs::lora_cpu("edge-lora", "runner")
}

#[test]
#[ignore = "needs the built stack, ../shared and the trainer's environment: run through `cargo xtask test`"]
fn a_lora_job_trains_through_the_edge_settles_and_its_adapter_downloads() {
    let stack = Stack::start_with(
        StackOptions::for_test("edge-trainer"),
        StackExtras {
            vars: vec![("SIGNUP_GRANT_FEN".into(), GRANT.to_string())],
            extra_backends: Vec::new(),
        },
    )
    .expect("stack starts");
    let u = stack.signup(&unique_email("lora"), "correct horse battery");
    let dataset = onramp_tests::cli::upload_corpus(&stack, &u);
    let a = u.request(
        "POST",
        "/api/jobs",
        Some(
            spec()
                .replace("\"tinyshakespeare\"", &format!("\"{dataset}\""))
                .into_bytes(),
        ),
        &[
            ("content-type", "application/toml"),
            ("idempotency-key", &random_hex(8)),
        ],
    );
    assert_eq!(a.status, 201, "{:?}", a.json);
    assert_eq!(a.json["backend"], "local", "{:?}", a.json);
    let id = a.json["id"].as_str().unwrap().to_string();
    let hold = a.json["hold_fen"].as_i64().unwrap();
    assert_eq!(u.balance(), GRANT - hold);

    let job = onramp_tests::wait::until("the trainer to finish", Duration::from_secs(900), || {
        let j = u.get(&format!("/api/jobs/{id}")).json;
        match j["state"].as_str() {
            Some("dispatching" | "queued" | "running") => Err(format!("so far: {j}")),
            Some(_) => Ok(Some(j)),
            None => Err(format!("no state in {j}")),
        }
    })
    .unwrap_or_else(|e| {
        panic!(
            "{e}\n--- log ---\n{}",
            u.get(&format!("/api/jobs/{id}/logs")).json["text"]
        )
    });
    let log = u.get(&format!("/api/jobs/{id}/logs")).json["text"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert_eq!(job["state"], "succeeded", "{job}\n{log}");
    assert!(log.contains("lora of mini"), "{log}");

    // The loss curve the job page draws: every step, falling.
    let m = u.get(&format!("/api/jobs/{id}/metrics")).json;
    let losses: Vec<f64> = m["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["loss"].as_f64().unwrap())
        .collect();
    assert!(losses.len() >= 12, "{m}");
    assert!(
        losses.last().unwrap() < losses.first().unwrap(),
        "{losses:?}"
    );
    assert_eq!(m["metrics"].as_array().unwrap().last().unwrap()["step"], 12);

    // The hold settled to what ran; the balance is the ledger's sum.
    let charged = job["charged_fen"].as_i64().unwrap();
    assert!((0..=hold).contains(&charged), "{job}");
    assert_eq!(u.balance(), GRANT - charged);

    // The adapter is the job's artifacts (no model-tiny checkpoint for the playground).
    assert_eq!(job["checkpoint"], false, "{job}");
    assert_eq!(u.get(&format!("/api/jobs/{id}/checkpoint")).status, 404);
    artifacts_pushed(&u, &id);
    results_shown(&stack, &u, &id);
    let saved = results_kept_by_experiments(&stack, &u, &id);
    let good = id.clone();

    // A dataset the machine does not have: the job fails before training, and its page says
    // why and where the trainer looked.
    let spec = spec().replace("\"tinyshakespeare\"", "\"no-such-corpus\"");
    let a = u.request(
        "POST",
        "/api/jobs",
        Some(spec.into_bytes()),
        &[
            ("content-type", "application/toml"),
            ("idempotency-key", &random_hex(8)),
        ],
    );
    assert_eq!(a.status, 201, "{:?}", a.json);
    let bad = a.json["id"].as_str().unwrap().to_string();
    let id = bad.clone();
    let job = onramp_tests::wait::until("the bad job to end", Duration::from_secs(300), || {
        let j = u.get(&format!("/api/jobs/{id}")).json;
        match j["state"].as_str() {
            Some("dispatching" | "queued" | "running") => Err(format!("so far: {j}")),
            _ => Ok(Some(j)),
        }
    })
    .unwrap();
    assert_eq!(job["state"], "failed", "{job}");
    let msg = job["message"].as_str().unwrap_or("");
    assert!(
        msg.contains("exited with code 4") && msg.contains("no-such-corpus"),
        "{job}"
    );
    assert_eq!(job["checkpoint"], false);
    compared(&stack, &u, &good, &bad);
    experiments_compared(&stack, &u, &saved, &bad);
}

/// `onramp compare` of an experiment (by its link) beside a job, and of one saved from a spec
/// alone: what each snapshot kept, as the app's Compare page shows it.
fn experiments_compared(stack: &Stack, u: &onramp_tests::api::Client, saved: &str, bad: &str) {
    let plan_only = u.post(
        "/api/experiments",
        &serde_json::json!({"spec": spec().replace("lr = 1e-2", "lr = 5e-3")}),
    );
    assert_eq!(plan_only.status, 201, "{:?}", plan_only.json);
    let plan_only = format!("e/{}", plan_only.json["id"].as_str().unwrap());
    let link = format!("{}/e/{saved}", stack.url);
    let (c, keys) = compare_json(stack, u, &[&link, bad, &plan_only]);
    let runs = &c["jobs"];
    assert_eq!(
        (runs[0]["id"].as_str(), runs[0]["state"].as_str()),
        (Some(format!("e/{saved}").as_str()), Some("succeeded")),
        "{c}"
    );
    assert!(runs[0]["results"]["table"].is_array(), "{c}");
    assert_eq!(
        runs[0]["points"].as_array().unwrap().last().unwrap()["step"],
        12,
        "{c}"
    );
    assert!(
        runs[2]["state"].is_null() && runs[2]["results"].is_null(),
        "{c}"
    );
    assert_eq!(keys, ["data.dataset", "train.lr"], "{c}");
    let text = onramp(stack, u, &["compare", &link, &plan_only]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(&format!("e/{saved}")), "{text}");
    let gone = onramp(stack, u, &["compare", &link, "e/nosuchexperiment"]);
    assert!(!gone.status.success());
}

/// `onramp compare RUNS… --json`, which must succeed: the comparison, and the keys its specs
/// differ in.
fn compare_json(
    stack: &Stack,
    u: &onramp_tests::api::Client,
    runs: &[&str],
) -> (serde_json::Value, Vec<String>) {
    let args: Vec<&str> = [&["compare"], runs, &["--json"]].concat();
    let out = onramp(stack, u, &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys = c["spec_diff"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["key"].as_str().unwrap().to_string())
        .collect();
    (c, keys)
}

/// `onramp compare`: the two jobs side by side; their specs differ only in the dataset, and
/// only the one that trained has results.
fn compared(stack: &Stack, u: &onramp_tests::api::Client, good: &str, bad: &str) {
    let (c, keys) = compare_json(stack, u, &[good, bad]);
    assert_eq!(keys, ["data.dataset"], "{c}");
    assert_eq!(c["jobs"][0]["state"], "succeeded", "{c}");
    assert_eq!(
        c["jobs"][0]["points"].as_array().unwrap().last().unwrap()["step"],
        12
    );
    assert!(c["jobs"][0]["results"]["table"].is_array(), "{c}");
    assert!(c["jobs"][1]["results"].is_null(), "{c}");
    let text = onramp(stack, u, &["compare", good, bad]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("spec differences") && text.contains("data.dataset"),
        "{text}"
    );
    let one = onramp(stack, u, &["compare", good]);
    assert!(!one.status.success(), "comparing needs two jobs");
}

/// An experiment saved from the job keeps what it achieved, for whoever opens the link: the
/// measures always, the samples (prompts from the owner's data) only when its files are shared.
/// Gives the id of the one without its files.
fn results_kept_by_experiments(stack: &Stack, u: &onramp_tests::api::Client, id: &str) -> String {
    let spec = u.get(&format!("/api/jobs/{id}")).json["spec"].clone();
    let stranger = onramp_tests::api::Client::new(&stack.url);
    let mut kept = Vec::new();
    for share in [false, true] {
        let saved = u.post(
            "/api/experiments",
            &serde_json::json!({"spec": spec, "job_id": id, "share_artifacts": share}),
        );
        assert_eq!(saved.status, 201, "{:?}", saved.json);
        let x = stranger.get(&format!(
            "/api/experiments/{}",
            saved.json["id"].as_str().unwrap()
        ));
        assert_eq!(x.status, 200, "{:?}", x.json);
        let r = &x.json["job"]["results"];
        let loss = r["table"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["metric"] == "loss")
            .unwrap_or_else(|| panic!("{r}"));
        assert!(
            loss["trained"].as_f64().unwrap() < loss["base"].as_f64().unwrap(),
            "{r}"
        );
        assert_eq!(
            r["history"][0]["step"], 0,
            "the base model's evaluation: {r}"
        );
        let samples = r["samples"].as_array().map_or(0, Vec::len);
        assert_eq!(samples > 0, share, "samples only with the files: {r}");
        kept.push(saved.json["id"].as_str().unwrap().to_string());
    }
    kept.swap_remove(0)
}

/// What the job achieved, as `onramp results` shows it: the base model measured before
/// training and the trained one after, on the held-out share, and the eval set's own prompts
/// answered by both.
fn results_shown(stack: &Stack, u: &onramp_tests::api::Client, id: &str) {
    let out = onramp(stack, u, &["results", id, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["eval_set"]["source"], "holdout", "{r}");
    let loss = r["table"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["metric"] == "loss")
        .unwrap_or_else(|| panic!("{r}"));
    let (base, trained) = (
        loss["base"].as_f64().unwrap(),
        loss["trained"].as_f64().unwrap(),
    );
    assert!(trained < base, "{r}");
    assert_eq!(r["history"][0]["step"], 0, "{r}");
    assert_eq!(r["samples"].as_array().unwrap().len(), 3, "{r}");
    let out = onramp(stack, u, &["results", id]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains(&format!("results of job {id}")),
        "{text}"
    );
    assert!(
        text.contains("eval loss") && text.contains("(better)"),
        "{text}"
    );
    let none = onramp(stack, u, &["results", "0123456789abcdef"]);
    assert!(!none.status.success());
}

/// The job is not among the playground's checkpoints, and the trainer pushed what it trained
/// to the edge's R2: the adapter's Hugging Face folder with the run beside it, and the final
/// metrics; each downloads with the sha256 it is listed with.
fn artifacts_pushed(u: &onramp_tests::api::Client, id: &str) {
    let listed = u.get("/api/checkpoints").json;
    assert!(!listed.to_string().contains(id), "{listed}");
    let files = u.artifacts_checked(
        id,
        &[
            "adapter/adapter_config.json",
            "adapter/adapter_model.safetensors",
            "adapter/onramp-run.json",
            "metrics.json",
            "results.json",
            "spec.toml",
            "job.log",
        ],
    );
    // The job's log as far as the trainer had written it when it pushed.
    let (_, log) = files.iter().find(|(n, _)| n == "job.log").unwrap();
    let log = String::from_utf8_lossy(log);
    assert!(log.contains("lora of mini"), "{log}");
    let (_, config) = files
        .iter()
        .find(|(n, _)| n == "adapter/adapter_config.json")
        .unwrap();
    let config: serde_json::Value = serde_json::from_slice(config).unwrap();
    assert_eq!(config["r"], 8, "{config}");
}
