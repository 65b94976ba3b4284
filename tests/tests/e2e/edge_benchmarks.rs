//! A `lora` job through the whole stack with a benchmark (`eval.tasks`): a task of the runner's
//! task folder (an lm-evaluation-harness YAML over local JSONL, as an operator keeps them), on
//! data the test makes so that training teaches what the task asks. The base model is scored
//! when training starts and the trained one at the end; the trained one must do better, and the
//! scores reach `onramp results`, `onramp compare`, the job page in headless Chromium and an
//! experiment's link, read by a stranger. A task no backend lists (`eval_tasks`) is refused on
//! submission at `eval.tasks`; one listed whose data the cluster lacks, by the job before it trains.
//!
//! Needs the built stack, `../shared` and the trainer's environment (`ONRAMP_PYTHON`, which
//! `cargo xtask test` sets): ignored in a plain `cargo test`.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use crate::app_support::{WAIT, submit_auth, text_content};
use onramp_tests::api::{Client, unique_email};
use onramp_tests::cli::onramp;
use onramp_tests::stack::{Stack, StackExtras, StackOptions, random_hex};
use onramp_tests::webdriver::Browser;
use std::path::Path;
use std::time::Duration;

const TASK: &str = "onramp_sky";
/// A task the runner's backend lists whose data is not in its task folder.
const GONE: &str = "onramp_gone";
const PASSWORD: &str = "correct horse battery";
/// What the job teaches, one line of its corpus.
const FACT: &str = "The sky is blue.";

/// The task: does the model continue each start of the fact with the colour (`acc`, lm-eval's
/// greedy check), and how likely it finds it (`perplexity`).
fn task_folder(dir: &Path) {
    let items = [
        ("The sky is", " blue"),
        ("The sky", " is blue"),
        ("The sky is blue.\nThe sky is", " blue"),
        ("The sky is blue.\nThe sky", " is blue"),
    ];
    let lines: Vec<String> = items
        .iter()
        .map(|(c, r)| serde_json::json!({"context": c, "rest": r}).to_string())
        .collect();
    let data = dir.join("sky.jsonl");
    std::fs::write(&data, lines.join("\n") + "\n").unwrap();
    let yaml = format!(
        "task: {TASK}\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {}\n\
         test_split: test\noutput_type: loglikelihood\ndoc_to_text: \"{{{{context}}}}\"\n\
         doc_to_target: \"{{{{rest}}}}\"\nmetric_list:\n  - metric: acc\n    aggregation: mean\n\
         \x20   higher_is_better: true\n  - metric: perplexity\n    aggregation: perplexity\n\
         \x20   higher_is_better: false\n",
        data.display()
    );
    std::fs::write(dir.join("sky.yaml"), yaml).unwrap();
}

fn spec(dataset: &str, tasks: &str) -> String {
    onramp_tests::specs::lora_cpu("edge-benchmark", "runner")
        .replace("\"tinyshakespeare\"", &format!("\"{dataset}\""))
        .replace("steps = 12", "steps = 60")
        + &format!("\n[eval]\nholdout = 0.05\nmax_new_tokens = 4\ntasks = [{tasks}]\n")
}

fn submitted(u: &Client, spec: String) -> String {
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
    a.json["id"].as_str().unwrap().to_string()
}

fn ended(u: &Client, id: &str) -> serde_json::Value {
    onramp_tests::wait::until("the job to end", Duration::from_secs(900), || {
        let j = u.get(&format!("/api/jobs/{id}")).json;
        match j["state"].as_str() {
            Some("dispatching" | "queued" | "running") => Err(format!("so far: {j}")),
            Some(_) => Ok(Some(j)),
            None => Err(format!("no state in {j}")),
        }
    })
    .unwrap()
}

/// The corpus that teaches the fact, uploaded with the CLI: its dataset id.
fn uploaded(stack: &Stack, u: &Client) -> String {
    let corpus = stack.state_dir.join("sky.txt");
    std::fs::write(&corpus, format!("{FACT}\n").repeat(400)).unwrap();
    let args = [
        "datasets",
        "upload",
        corpus.to_str().unwrap(),
        "--seq-len",
        "64",
        "--json",
    ];
    let up = onramp(stack, u, &args);
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    serde_json::from_slice::<serde_json::Value>(&up.stdout).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `onramp results`: the trained model does better on both measures. Returns the rows.
fn scores_shown(stack: &Stack, u: &Client, id: &str) -> serde_json::Value {
    let out = onramp(stack, u, &["results", id, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = |metric: &str| {
        r["benchmarks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["task"] == TASK && b["metric"] == metric)
            .unwrap_or_else(|| panic!("{r}"))
            .clone()
    };
    let (acc, ppl) = (row("acc"), row("perplexity"));
    let (base, trained) = (
        acc["base"].as_f64().unwrap(),
        acc["trained"].as_f64().unwrap(),
    );
    assert!(
        trained > base && trained >= 0.75,
        "training taught what the task asks: {acc}"
    );
    assert!(
        ppl["trained"].as_f64().unwrap() < ppl["base"].as_f64().unwrap(),
        "{ppl}"
    );
    let text = onramp(stack, u, &["results", id]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("benchmarks (lm-evaluation-harness, 0-shot)") && text.contains(TASK),
        "{text}"
    );
    r["benchmarks"].clone()
}

/// The job page, signed in in headless Chromium: the benchmarks table holds the task's rows,
/// base against trained as `onramp results` gave them, the accuracy marked better.
fn seen_on_the_job_page(stack: &Stack, email: &str, id: &str, rows: &serde_json::Value) {
    let browser = Browser::start(Some("en")).expect("chromium starts");
    browser.goto(&format!("{}/account", stack.url)).unwrap();
    browser
        .wait_for("[data-testid=auth-form][data-mode=login]", WAIT)
        .unwrap();
    submit_auth(&browser, email, PASSWORD);
    browser.wait_for("[data-testid=balance]", WAIT).unwrap();
    browser.goto(&format!("{}/jobs/{id}", stack.url)).unwrap();
    let acc = format!("[data-testid=run-benchmarks] [data-task={TASK}][data-metric=acc]");
    browser
        .wait_for(&acc, WAIT)
        .unwrap_or_else(|e| panic!("{e}: {}", text_content(&browser, "[data-testid=page-job]")));
    for metric in ["acc", "perplexity"] {
        let row = format!("[data-testid=run-benchmarks] [data-task={TASK}][data-metric={metric}]");
        let want = rows
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["task"] == TASK && r["metric"] == metric)
            .unwrap();
        for (cell, key) in [("result-base", "base"), ("result-trained", "trained")] {
            assert_eq!(
                text_content(&browser, &format!("{row} [data-testid={cell}]")),
                api::results::show_measure(want[key].as_f64()),
                "{metric} {key} on the page against `onramp results`"
            );
        }
    }
    let better = browser
        .execute(
            "return document.querySelector(arguments[0]).dataset.better;",
            serde_json::json!([format!("{acc} [data-testid=result-change]")]),
        )
        .unwrap();
    assert_eq!(better, "better", "the trained accuracy is marked better");
}

/// An experiment of the job: a stranger with its link reads the same scores.
fn shared(stack: &Stack, u: &Client, job: &serde_json::Value, rows: &serde_json::Value) {
    let saved = u.post(
        "/api/experiments",
        &serde_json::json!({"spec": job["spec"], "job_id": job["id"], "share_artifacts": false}),
    );
    assert_eq!(saved.status, 201, "{:?}", saved.json);
    let x = Client::new(&stack.url).get(&format!(
        "/api/experiments/{}",
        saved.json["id"].as_str().unwrap()
    ));
    assert_eq!(x.status, 200, "{:?}", x.json);
    assert_eq!(
        &x.json["job"]["results"]["benchmarks"], rows,
        "{:?}",
        x.json
    );
}

#[test]
#[ignore = "needs the built stack, ../shared and the trainer's environment: run through `cargo xtask test`"]
fn a_benchmark_of_the_runners_task_folder_is_scored_before_and_after_and_shared() {
    let stack = Stack::start_with(
        StackOptions {
            // GONE is listed without its data: an operator's list the cluster does not match.
            runner_eval_tasks: vec![TASK.into(), GONE.into()],
            ..StackOptions::for_test("edge-benchmarks")
        },
        StackExtras {
            vars: vec![("SIGNUP_GRANT_FEN".into(), "10000".into())],
            extra_backends: Vec::new(),
        },
    )
    .expect("stack starts");
    task_folder(&stack.eval_tasks());
    let email = unique_email("bench");
    let u = stack.signup(&email, PASSWORD);
    let dataset = uploaded(&stack, &u);

    // A task no backend lists: refused on submission at eval.tasks, no money moved.
    let before = u.balance();
    let refused = u.request(
        "POST",
        "/api/jobs",
        Some(spec(&dataset, "\"no_such_task\"").into_bytes()),
        &[
            ("content-type", "application/toml"),
            ("idempotency-key", &random_hex(8)),
        ],
    );
    assert_eq!(refused.status, 422, "{}", refused.shown());
    let d = &refused.json["error"]["details"]["diagnostics"][0];
    assert_eq!(d["path"], "eval.tasks", "{}", refused.shown());
    assert!(
        d["message"].as_str().unwrap_or("").contains(&format!("\"no_such_task\", so it cannot be scored; tasks these backends can score: \"{GONE}\", \"{TASK}\"")),
        "{}",
        refused.shown()
    );
    assert_eq!(u.balance(), before);
    // A task the backend lists and the cluster does not have: refused by the job before it trains.
    let missing = submitted(&u, spec(&dataset, &format!("\"{GONE}\"")));
    let job = ended(&u, &missing);
    assert_eq!(job["state"], "failed", "{job}");
    let said = job["message"].as_str().unwrap_or("");
    assert!(said.contains(&format!("no task '{GONE}'")), "{job}");

    let id = submitted(&u, spec(&dataset, &format!("\"{TASK}\"")));
    let job = ended(&u, &id);
    let log = u.get(&format!("/api/jobs/{id}/logs")).json["text"].to_string();
    assert_eq!(job["state"], "succeeded", "{job}\n{log}");
    let rows = scores_shown(&stack, &u, &id);
    seen_on_the_job_page(&stack, &email, &id, &rows);

    // Side by side with the job that was refused, which has no results.
    let cmp = onramp(&stack, &u, &["compare", &id, &missing]);
    let cmp = String::from_utf8_lossy(&cmp.stdout);
    assert!(cmp.contains(&format!("{TASK} · acc (trained)")), "{cmp}");
    shared(&stack, &u, &job, &rows);
}
