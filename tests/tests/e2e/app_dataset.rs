//! The Plan page's dataset check in headless Chromium: a file chosen on the page is checked in
//! a Web Worker (its bad lines named with their numbers), its counts go into `[data]` with one
//! click, and the plan's steps then follow the file as the trainer batches it.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use crate::app_support::{WAIT, click, spec_text, start, submit_auth, verify_elsewhere};
use std::io::Write;
use std::time::Duration;

/// The first usable line of each kind the test writes, and the two bad ones.
fn alpaca_file(dir: &std::path::Path, good: usize) -> std::path::PathBuf {
    let path = dir.join("mine.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    for n in 1..=good + 2 {
        match n {
            3 => writeln!(f, "{{\"instruction\": \"no output\"}}").unwrap(),
            10 => writeln!(
                f,
                "{{\"instruction\": \"x\", \"output\": \"y\", \"colour\": 1}}"
            )
            .unwrap(),
            _ => writeln!(
                f,
                "{{\"instruction\": \"Add {n} and 1.\", \"input\": \"\", \"output\": \"{}\"}}",
                n + 1
            )
            .unwrap(),
        }
    }
    path
}

#[test]
#[ignore = "needs the built stack and Chromium: cargo xtask test"]
fn a_dataset_chosen_on_the_plan_page_is_checked_and_plans_the_epochs() {
    let (stack, browser) = start("app_dataset", Some("en"));
    browser.goto(&format!("{}/plan", stack.url)).unwrap();
    browser.wait_for("[data-testid=plan-fits]", WAIT).unwrap();
    let dir = tempfile_dir("onramp-dataset");
    let path = alpaca_file(&dir, 300);
    let input = browser
        .wait_for("[data-testid=dataset-file]", WAIT)
        .unwrap();
    browser.type_text(&input, path.to_str().unwrap()).unwrap();
    let summary = browser
        .wait_for("[data-testid=dataset-summary][data-format=alpaca]", WAIT)
        .unwrap();
    assert_eq!(
        browser
            .attribute(&summary, "data-examples")
            .unwrap()
            .as_deref(),
        Some("300")
    );
    let lines: Vec<(String, String)> = [3, 10]
        .iter()
        .map(|n| {
            let li = browser
                .wait_for(
                    &format!("[data-testid=dataset-bad] li[data-line='{n}']"),
                    WAIT,
                )
                .unwrap();
            (
                browser
                    .attribute(&li, "data-code")
                    .unwrap()
                    .unwrap_or_default(),
                browser.text(&li).unwrap(),
            )
        })
        .collect();
    assert_eq!(lines[0].0, "missing_key", "{lines:?}");
    assert_eq!(lines[1].0, "unknown_key", "{lines:?}");
    assert!(lines[1].1.contains("`colour`"), "{lines:?}");
    let tokens: u64 = browser
        .attribute(&summary, "data-tokens")
        .unwrap()
        .unwrap()
        .parse()
        .unwrap();
    click(&browser, "[data-testid=dataset-use]");
    browser
        .wait_for_text("[data-testid=dataset-used]", WAIT, |t| {
            t.contains("Set in [data]")
        })
        .unwrap();
    let spec = spec_text(&browser);
    assert!(spec.contains("examples = 300"), "{spec}");
    assert!(spec.contains(&format!("tokens = {tokens}")), "{spec}");
    // The template trains 2 epochs of 2 × 8 sequences a step: 300 examples, 15 held out.
    let plan = jobspec::plan_toml(&spec);
    let steps = plan.valid.as_ref().map(|v| v.steps());
    assert_eq!(steps, Some((2 * 285_u64).div_ceil(16)), "{spec}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs the built stack and Chromium: cargo xtask test"]
fn a_large_text_file_is_read_in_slices_and_estimated() {
    let (stack, browser) = start("app_dataset_large", Some("zh"));
    browser.goto(&format!("{}/plan", stack.url)).unwrap();
    browser.wait_for("[data-testid=plan-fits]", WAIT).unwrap();
    let dir = tempfile_dir("onramp-dataset-large");
    let path = dir.join("book.txt");
    // 64 MiB of 64-byte lines: 16 estimated tokens each, in 16 slices of the file.
    let line = format!("{}\n", "w".repeat(63));
    let lines = (64 << 20) / line.len();
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        for _ in 0..lines {
            f.write_all(line.as_bytes()).unwrap();
        }
    }
    let input = browser
        .wait_for("[data-testid=dataset-file]", WAIT)
        .unwrap();
    browser.type_text(&input, path.to_str().unwrap()).unwrap();
    let summary = browser
        .wait_for(
            "[data-testid=dataset-summary][data-format=text]",
            Duration::from_secs(120),
        )
        .unwrap();
    // The template's seq_len is 2048.
    let sequences = (lines as u64 * 16) / 2048;
    assert_eq!(
        browser.attribute(&summary, "data-examples").unwrap(),
        Some(sequences.to_string())
    );
    let text = browser.text(&summary).unwrap();
    assert!(text.contains("每轮样本"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs the built stack and Chromium: cargo xtask test"]
fn a_checked_dataset_uploads_in_parts_and_the_spec_names_it() {
    let (stack, browser) = start("app_dataset_upload", Some("en"));
    browser.goto(&format!("{}/account", stack.url)).unwrap();
    click(&browser, "[data-testid=auth-switch]");
    let email = onramp_tests::api::unique_email("app-dataset");
    submit_auth(&browser, &email, "correct horse battery");
    browser.wait_for("[data-testid=verify-note]", WAIT).unwrap();
    verify_elsewhere(&stack, &email);
    click(&browser, "[data-testid=nav-plan]");
    browser.wait_for("[data-testid=plan-fits]", WAIT).unwrap();
    let dir = tempfile_dir("onramp-dataset-upload");
    // About 9 MiB: two parts of 8 MiB.
    let path = alpaca_file(&dir, 140_000);
    let input = browser
        .wait_for("[data-testid=dataset-file]", WAIT)
        .unwrap();
    browser.type_text(&input, path.to_str().unwrap()).unwrap();
    browser
        .wait_for("[data-testid=dataset-summary][data-format=alpaca]", WAIT)
        .unwrap();
    click(&browser, "[data-testid=dataset-upload]");
    let done = browser
        .wait_for("[data-testid=dataset-uploaded]", Duration::from_secs(120))
        .unwrap();
    let id = browser.attribute(&done, "data-id").unwrap().unwrap();
    assert!(id.starts_with("ds_"), "{id}");
    let spec = spec_text(&browser);
    assert!(spec.contains(&format!("dataset = \"{id}\"")), "{spec}");
    assert!(spec.contains("examples = 140000"), "{spec}");
    let listed = browser
        .execute(
            "return fetch('/api/datasets').then(r => r.json());",
            serde_json::json!([]),
        )
        .unwrap();
    let d = &listed["datasets"][0];
    assert_eq!(
        (d["id"].as_str(), d["complete"].as_bool()),
        (Some(id.as_str()), Some(true)),
        "{listed}"
    );
    assert_eq!(
        d["size"].as_u64(),
        Some(std::fs::metadata(&path).unwrap().len()),
        "{listed}"
    );
    assert_eq!(d["parts"], 2, "{listed}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
