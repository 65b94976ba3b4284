//! Bring your own data, the whole journey in headless Chromium: a newcomer signs up, puts a LoRA
//! spec for a model of numbers on the Plan page and chooses their own alpaca file. The page checks
//! it and counts its tokens with the model's own tokenizer (the operator stored it as `tok512`,
//! exported from the SentencePiece model the runner trains with), uploads it in parts, and names
//! it in `data.dataset` with its counts. The user then plans the run by epochs and submits it to
//! the runner. The job fetches the file from the edge with its own token and trains the steps the
//! plan derived from the page's counts. The trainer counts what the page counted, so the job has
//! no warning, and its loss falls.
//!
//! Needs the built stack, `../shared` and the trainer's environment (`ONRAMP_PYTHON`, which
//! `cargo xtask test` sets): ignored in a plain `cargo test`.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use crate::app_support::{WAIT, click, set_value, spec_text, text_content};
use onramp_tests::stack::{Stack, StackExtras, StackOptions};
use onramp_tests::webdriver::Browser;
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `n` sums to learn (`Add 7 and 1.` → `8`), one alpaca record a line.
fn sums_file(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join("sums.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    for i in 0..n {
        let (a, b) = (i % 10, (i / 10) % 10);
        writeln!(
            f,
            "{}",
            json!({"instruction": format!("Add {a} and {b}."), "input": "", "output": format!("{}", a + b)})
        )
        .unwrap();
    }
    path
}

/// The tokenizer onramp-train trains a model of numbers of vocabulary 512 with, exported by the
/// trainer's environment as an operator does (`python -m onramp_train.export_tokenizer`).
fn exported_tok512(dir: &Path) -> PathBuf {
    let python = std::env::var("ONRAMP_PYTHON").expect("ONRAMP_PYTHON (set by cargo xtask test)");
    let out = dir.join("tok512");
    let status = std::process::Command::new(python)
        .args(["-m", "onramp_train.export_tokenizer", "512"])
        .arg(&out)
        .env(
            "PYTHONPATH",
            onramp_tests::paths::repo_root().join("trainer/src"),
        )
        .env(
            "ONRAMP_MODELS",
            onramp_tests::paths::shared_dir().join("models"),
        )
        .env_remove("ONRAMP_TOKENIZER")
        .status()
        .unwrap();
    assert!(status.success(), "export_tokenizer: {status}");
    out
}

/// What the edge answers the signed-in page at `path` (JSON).
fn api(browser: &Browser, path: &str) -> Value {
    browser
        .execute(
            "return fetch(arguments[0]).then(r => r.json());",
            json!([path]),
        )
        .unwrap()
}

/// The job's whole log, paged from the edge as the job page does.
fn job_log(browser: &Browser, id: &str) -> String {
    let mut text = String::new();
    for _ in 0..100 {
        let page = api(
            browser,
            &format!("/api/jobs/{id}/logs?offset={}", text.len()),
        );
        text.push_str(page["text"].as_str().unwrap_or_default());
        if page["eof"] == true || page["text"].as_str().is_none_or(str::is_empty) {
            break;
        }
    }
    text
}

/// Chooses the file on the Plan page: checked with tok512, exact; the counts go into `[data]`
/// and the file is uploaded. The dataset's id and the counted tokens.
fn checked_and_uploaded(browser: &Browser, path: &Path, examples: usize) -> (String, u64) {
    let input = browser
        .wait_for("[data-testid=dataset-file]", WAIT)
        .unwrap();
    browser.type_text(&input, path.to_str().unwrap()).unwrap();
    let summary = browser
        .wait_for(
            "[data-testid=dataset-summary][data-format=alpaca][data-exact=true]",
            WAIT,
        )
        .unwrap_or_else(|e| {
            panic!(
                "{e}: {}",
                text_content(browser, "[data-testid=dataset-summary]")
            )
        });
    let attr = |name: &str| browser.attribute(&summary, name).unwrap().unwrap();
    assert_eq!(attr("data-examples"), examples.to_string());
    let tokens: u64 = attr("data-tokens").parse().unwrap();
    click(browser, "[data-testid=dataset-use]");
    click(browser, "[data-testid=dataset-upload]");
    let done = browser
        .wait_for("[data-testid=dataset-uploaded]", Duration::from_secs(120))
        .unwrap();
    let id = browser.attribute(&done, "data-id").unwrap().unwrap();
    let spec = spec_text(browser);
    for line in [
        format!("dataset = \"{id}\""),
        format!("examples = {examples}"),
        format!("tokens = {tokens}"),
    ] {
        assert!(spec.contains(&line), "{line} in\n{spec}");
    }
    (id, tokens)
}

/// Waits for job `id` to end and requires that it trained `dataset` (its id, examples and tokens
/// as the page counted them) for the plan's `steps`: no warning of counts far from the plan's,
/// and a loss that falls.
fn trained(browser: &Browser, id: &str, dataset: (&str, usize, u64), steps: u64) {
    let (dataset, examples, tokens) = dataset;
    let job = onramp_tests::wait::until("the job to end", Duration::from_secs(900), || {
        let job = api(browser, &format!("/api/jobs/{id}"));
        match job["state"].as_str() {
            Some("succeeded" | "failed" | "cancelled") => Ok(Some(job)),
            _ => Err(format!("so far: {job}")),
        }
    })
    .unwrap();
    let log = job_log(browser, id);
    assert_eq!(job["state"], "succeeded", "{job}\n{log}");
    // The trainer trained the uploaded file, fetched into its folder, and found the page's counts.
    assert!(log.contains(&format!("datasets/{dataset}")), "{log}");
    assert!(
        log.contains(&format!("counted {examples} examples, {tokens} tokens")),
        "{log}"
    );
    assert!(!log.contains("warning: the dataset holds"), "{log}");
    assert!(
        !job["message"]
            .as_str()
            .unwrap_or_default()
            .contains("warning"),
        "{job}"
    );
    let metrics = api(browser, &format!("/api/jobs/{id}/metrics"));
    let points = metrics["metrics"].as_array().unwrap();
    assert_eq!(
        points.last().and_then(|p| p["step"].as_u64()),
        Some(steps),
        "{metrics}"
    );
    let losses: Vec<f64> = points.iter().filter_map(|p| p["loss"].as_f64()).collect();
    assert!(
        losses.last().unwrap() < losses.first().unwrap(),
        "the loss falls: {losses:?}"
    );
}

#[test]
#[ignore = "needs the built stack, ../shared and the trainer's environment: run through `cargo xtask test`"]
fn a_file_chosen_on_the_plan_page_is_uploaded_planned_by_epochs_and_trained() {
    let stack = Stack::start_with(
        StackOptions::for_test("app-own-data"),
        StackExtras {
            vars: vec![("SIGNUP_GRANT_FEN".into(), "10000".into())],
            extra_backends: Vec::new(),
        },
    )
    .expect("stack starts");
    let browser = Browser::start(Some("en")).expect("chromium starts");
    let dir = std::env::temp_dir().join(format!("onramp-own-data-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    crate::app_dataset::store_tokenizer(&stack, &exported_tok512(&dir), "tok512");
    crate::app_trainer::sign_up_with_credit(&stack, &browser);

    click(&browser, "[data-testid=nav-plan]");
    let spec = onramp_tests::specs::lora_cpu("own-data", "auto");
    set_value(&browser, "[data-testid=plan-toml]", &spec);
    onramp_tests::wait::until("the spec in the editor", WAIT, || {
        Ok(spec_text(&browser)
            .contains("name = \"own-data\"")
            .then_some(()))
    })
    .unwrap();
    let examples = 60;
    let (dataset, tokens) = checked_and_uploaded(&browser, &sums_file(&dir, examples), examples);

    // By epochs now: two passes over the file, the steps derived from the page's counts.
    let uploaded = spec_text(&browser);
    let by_epochs = uploaded.replace("steps = 12", "epochs = 2");
    assert_ne!(by_epochs, uploaded);
    set_value(&browser, "[data-testid=plan-toml]", &by_epochs);
    let plan = jobspec::plan_toml(&by_epochs);
    let steps = plan.valid.as_ref().map(|v| v.steps()).unwrap();
    assert!(steps > 12, "{steps} steps for {by_epochs}");
    set_value(&browser, "[data-testid=submit-backend]", "runner");
    onramp_tests::wait::until("epochs and the runner in the spec", WAIT, || {
        let s = spec_text(&browser);
        Ok((s.contains("epochs = 2") && s.contains("backend = \"runner\"")).then_some(()))
    })
    .unwrap();
    click(&browser, "[data-testid=submit-job]:not([disabled])");
    let page = browser.wait_for("[data-testid=page-job]", WAIT).unwrap();
    let id = browser.attribute(&page, "data-id").unwrap().unwrap();
    browser
        .wait_for(
            &format!("[data-testid=job-progress][data-total=\"{steps}\"]"),
            WAIT * 10,
        )
        .expect("the plan's steps on the job page");
    trained(&browser, &id, (&dataset, examples, tokens), steps);
    let _ = std::fs::remove_dir_all(&dir);
}
