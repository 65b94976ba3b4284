//! Two real runs compared in the app (called by `app_trainer`'s test once both LoRA jobs, at
//! two learning rates, have trained): ticked on the jobs page, compared on `/compare` with their
//! curves overlaid, their results side by side and their specs diffed key by key; then shared,
//! and the link opened by a browser with no account sees the same comparison, read-only.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use crate::app_support::{WAIT, click, set_value};
use onramp_tests::stack::Stack;
use onramp_tests::webdriver::Browser;
use serde_json::{Value, json};
use std::time::Duration;

/// Runs `script` until it returns something other than `null`/`false`.
fn until(browser: &Browser, what: &str, timeout: Duration, script: &str) -> Value {
    onramp_tests::wait::until(what, timeout, || {
        let v = browser
            .execute(script, json!([]))
            .map_err(|e| e.to_string())?;
        Ok((!v.is_null() && v != json!(false)).then_some(v))
    })
    .unwrap()
}

pub fn compared(stack: &Stack, browser: &Browser, a: &str, b: &str) {
    // The second run ends too.
    let state =
        onramp_tests::wait::until("the second run to end", Duration::from_secs(900), || {
            let s = browser
            .execute(
                "return fetch('/api/jobs/' + arguments[0]).then(r => r.json()).then(j => j.state);",
                json!([b]),
            )
            .map_err(|e| e.to_string())?;
            match s.as_str() {
                Some("succeeded" | "failed" | "cancelled" | "timed_out" | "lost") => Ok(Some(s)),
                _ => Err(format!("so far: {s}")),
            }
        })
        .unwrap();
    assert_eq!(state, "succeeded");

    // Tick both on the jobs page and compare them.
    browser.goto(&format!("{}/jobs", stack.url)).unwrap();
    browser
        .wait_for("[data-testid=jobs-compare-hint]", WAIT)
        .unwrap();
    click(
        browser,
        &format!("[data-job=\"{a}\"] [data-testid=job-pick]"),
    );
    click(
        browser,
        &format!("[data-job=\"{b}\"] [data-testid=job-pick]"),
    );
    click(browser, "[data-testid=jobs-compare]");
    let url = browser.current_url().unwrap();
    assert!(url.contains(&format!("/compare?jobs={a},{b}")), "{url}");
    let charged = charged(browser, &[a, b]);
    seen(browser, &charged);

    // By tokens: both runs train the same tokens a step, so the axis changes, not the curves.
    set_value(browser, "[data-testid=compare-align]", "tokens");
    browser
        .wait_for("[data-testid=compare-chart][data-align=tokens]", WAIT)
        .unwrap();

    // Shared: each job saved as a published experiment, and the link shows the comparison to a
    // browser that has no account.
    click(browser, "[data-testid=compare-share]");
    let link = until(
        browser,
        "the comparison's link",
        WAIT,
        "const a = document.querySelector('[data-testid=compare-link-open]');
         return a ? a.getAttribute('href') : null;",
    );
    let link = link.as_str().unwrap().to_string();
    assert!(link.starts_with("/compare?e="), "{link}");
    let stranger = Browser::start(Some("en")).expect("a second chromium starts");
    stranger.goto(&format!("{}{link}", stack.url)).unwrap();
    seen(&stranger, &charged);
    assert!(
        stranger
            .find("[data-testid=compare-share]")
            .unwrap()
            .is_none(),
        "a comparison of experiments is its own link"
    );
    experiment_results_shown(stack, &stranger, &link);
}

/// The comparison of the two runs: what each was charged (`charged`, as the jobs say) and how
/// long it ran, both curves on one plot, the trained eval loss of each, and the specs differing
/// in their names, learning rates and whether the adapter is merged only.
fn seen(browser: &Browser, charged: &[String]) {
    browser
        .wait_for("[data-testid=compare-chart][data-runs=\"2\"]", WAIT)
        .unwrap();
    charges_and_times_shown(browser, charged);
    let points = browser
        .execute(
            "return [...document.querySelectorAll('[data-testid=compare-train]')]
               .map(p => Number(p.dataset.points));",
            json!([]),
        )
        .unwrap();
    assert_eq!(points, json!([12, 12]), "each run's 12 steps");
    let evals = browser
        .execute(
            "return [...document.querySelectorAll('[data-testid=compare-val]')]
               .map(p => Number(p.dataset.points));",
            json!([]),
        )
        .unwrap();
    assert!(
        evals
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n.as_u64() >= Some(2)),
        "each run's eval curve: {evals}"
    );
    let loss = until(
        browser,
        "the results side by side",
        WAIT,
        "const cells = [...document.querySelectorAll(
            '[data-testid=compare-results] tr[data-metric=loss] [data-testid=compare-result]')];
         return cells.length ? cells.map(c => [c.textContent, c.dataset.better]) : null;",
    );
    let loss = loss.as_array().unwrap();
    assert_eq!(loss.len(), 2, "{loss:?}");
    for cell in loss {
        assert!(cell[0].as_str().unwrap().contains('→'), "{cell}");
        assert_eq!(cell[1], "better", "the eval loss fell in each run: {cell}");
    }
    let keys = browser
        .execute(
            "return [...document.querySelectorAll('[data-testid=compare-spec-key]')]
               .map(r => [r.dataset.key, ...[...r.querySelectorAll('td')].map(c => c.textContent)]);",
            json!([]),
        )
        .unwrap();
    assert_eq!(
        keys,
        json!([
            ["name", "app-lora", "app-lora-b"],
            ["output.merge_adapter", "true", "false"],
            ["train.lr", "0.01", "0.005"]
        ]),
        "{keys}"
    );
}

/// What each job was charged, as the API says to its owner (signed in in `browser`).
fn charged(browser: &Browser, ids: &[&str]) -> Vec<String> {
    ids.iter()
        .map(|id| {
            let fen = browser
                .execute(
                    "return fetch('/api/jobs/' + arguments[0]).then(r => r.json()).then(j => j.charged_fen);",
                    json!([id]),
                )
                .unwrap();
            jobspec::yuan(fen.as_u64().expect("a run that ended was charged"))
        })
        .collect()
}

/// The comparison's facts: each run's charge (`charged`) and how long it ran.
fn charges_and_times_shown(browser: &Browser, charged: &[String]) {
    let facts = |row: &str| {
        browser
            .execute(
                "return [...document.querySelectorAll(`[data-testid=${arguments[0]}] td`)]
                   .map(c => c.textContent);",
                json!([row]),
            )
            .unwrap()
    };
    assert_eq!(
        facts("compare-charged"),
        json!(charged),
        "each run's charge"
    );
    let times = facts("compare-time");
    let times: Vec<&str> = times
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.as_str())
        .collect();
    assert!(
        times.len() == 2
            && times
                .iter()
                .all(|t| t.ends_with('s') && t.chars().next().is_some_and(|c| c.is_ascii_digit())),
        "how long each ran: {times:?}"
    );
}

/// One experiment of the shared comparison (`link`), opened on its own page by a stranger: its
/// run's results, read-only.
fn experiment_results_shown(stack: &Stack, stranger: &Browser, link: &str) {
    let first = link
        .trim_start_matches("/compare?e=")
        .split([',', '&'])
        .next()
        .unwrap()
        .to_string();
    stranger.goto(&format!("{}/e/{first}", stack.url)).unwrap();
    let loss = until(
        stranger,
        "the experiment's results",
        WAIT,
        "const r = document.querySelector('[data-testid=run-results] tr[data-metric=loss]');
         return r ? [...r.children].map(c => c.textContent) : null;",
    );
    let (base, trained): (f64, f64) = (
        loss[1].as_str().unwrap().parse().unwrap(),
        loss[2].as_str().unwrap().parse().unwrap(),
    );
    assert!(trained < base, "{loss}");
}
