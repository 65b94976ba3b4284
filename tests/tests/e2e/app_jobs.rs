//! Submitting and managing jobs from the app, the refusals first: signed out (with a link to sign
//! in), not enough credit for the hold, a backend that is down (503, nothing charged); then a job
//! on the local runner, submitted with a double click, that is cancelled from its page, and the
//! jobs list showing it (once).
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use crate::app_support::{
    WAIT, click, set_value, spec_text, submit_auth, text_content, verify_elsewhere,
};
use onramp_tests::api::unique_email;
use onramp_tests::stack::{Stack, StackExtras, StackOptions};
use onramp_tests::webdriver::Browser;
use serde_json::json;

/// Replaces the spec's `time_limit` and `steps` and waits for the plan to take it.
fn edit_spec(browser: &Browser, time_limit: &str, steps: u32) {
    let text = spec_text(browser)
        .lines()
        .map(|l| {
            if l.starts_with("time_limit") {
                format!("time_limit = \"{time_limit}\"")
            } else if l.starts_with("steps") {
                format!("steps = {steps}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    set_value(browser, "[data-testid=plan-toml]", &text);
    onramp_tests::wait::until("the edit to reach the plan", WAIT, || {
        Ok(spec_text(browser)
            .contains(&format!("time_limit = \"{time_limit}\""))
            .then_some(()))
    })
    .unwrap();
}

fn hold_fen(browser: &Browser) -> i64 {
    let el = browser.wait_for("[data-testid=submit-hold]", WAIT).unwrap();
    browser
        .attribute(&el, "data-fen")
        .unwrap()
        .and_then(|f| f.parse().ok())
        .unwrap()
}

/// Clicks Submit and waits for the refusal with `code`; returns its text.
fn submit_refused(browser: &Browser, code: &str) -> String {
    click(browser, "[data-testid=submit-job]:not([disabled])");
    let sel = format!("[data-testid=submit-error][data-code={code}]");
    browser.wait_for(&sel, WAIT).unwrap_or_else(|e| {
        panic!(
            "{e}: {}",
            text_content(browser, "[data-testid=submit-panel]")
        )
    });
    text_content(browser, &sel)
}

#[test]
#[ignore = "needs the built stack and ../shared: run through `cargo xtask test`"]
fn refusals_then_a_job_cancelled_from_its_page_and_listed() {
    // A second backend that takes CPU jobs but is down: nothing listens on its port.
    let down = format!(
        "http://127.0.0.1:{}",
        onramp_tests::process::free_port().unwrap()
    );
    let stack = Stack::start_with(
        StackOptions::for_test("app-jobs"),
        StackExtras {
            vars: Vec::new(),
            extra_backends: vec![json!({
                "name": "hpc-down", "kind": "slurm", "url": down, "secret": "jwt", "cards": {"cpu": 1}
            })],
        },
    )
    .expect("stack starts");
    let browser = Browser::start(Some("en")).expect("chromium starts");
    browser.goto(&format!("{}/plan", stack.url)).unwrap();
    click(&browser, "[data-testid=template-tiny-train-stories260k]");
    browser
        .wait_for(
            "[data-testid=submit-backend] option[data-name=hpc-down]",
            WAIT,
        )
        .expect("GET /api/backends lists both backends for CPU jobs");

    // Signed out: refused, with a way to sign in.
    let text = submit_refused(&browser, "unauthenticated");
    assert!(text.contains("not signed in"), "{text}");
    click(&browser, "[data-testid=submit-sign-in]");
    click(&browser, "[data-testid=auth-switch]");
    let email = unique_email("app-jobs");
    submit_auth(&browser, &email, "correct horse battery");
    browser
        .wait_for("[data-testid=verify-note]", WAIT)
        .expect("signed up; the trial waits for the email");
    verify_elsewhere(&stack, &email);
    click(&browser, "[data-testid=nav-plan]");
    click(&browser, "[data-testid=nav-account]");
    browser
        .wait_for("[data-testid=balance][data-fen=\"1000\"]", WAIT)
        .expect("the trial grant once the email is verified");

    // A hold larger than the balance: refused as not enough credit.
    click(&browser, "[data-testid=nav-plan]");
    edit_spec(&browser, "7d", 5000);
    assert!(
        hold_fen(&browser) > 1000,
        "7 days of CPU (the most the runner takes) cost more than the grant"
    );
    let text = submit_refused(&browser, "insufficient_credit");
    assert!(text.contains("Not enough credit"), "{text}");

    // The backend that is down: 503, nothing charged.
    edit_spec(&browser, "30m", 5000);
    set_value(&browser, "[data-testid=submit-backend]", "slurm");
    onramp_tests::wait::until("the backend choice in the spec", WAIT, || {
        Ok(spec_text(&browser)
            .contains("backend = \"slurm\"")
            .then_some(()))
    })
    .unwrap();
    let text = submit_refused(&browser, "backend_unavailable");
    assert!(text.contains("nothing was charged"), "{text}");

    // The local runner: the job starts, and is cancelled from its page.
    set_value(&browser, "[data-testid=submit-backend]", "runner");
    onramp_tests::wait::until("the runner in the spec", WAIT, || {
        Ok(spec_text(&browser)
            .contains("backend = \"runner\"")
            .then_some(()))
    })
    .unwrap();
    // A double click: two clicks in the same moment make one job (the list below has one row).
    let ready = "[data-testid=submit-job]:not([disabled])";
    browser.wait_for(ready, WAIT).unwrap();
    browser
        .execute(
            "const b = document.querySelector(arguments[0]); b.click(); b.click(); return true;",
            json!([ready]),
        )
        .unwrap();
    let page = browser.wait_for("[data-testid=page-job]", WAIT).unwrap();
    let job_id = browser.attribute(&page, "data-id").unwrap().unwrap();
    browser
        .wait_for("[data-testid=page-job][data-state=running]", WAIT)
        .expect("the job runs");
    assert_eq!(text_content(&browser, "[data-testid=job-backend]"), "local");
    click(&browser, "[data-testid=job-cancel]:not([disabled])");
    browser
        .wait_for("[data-testid=page-job][data-state=cancelled]", WAIT)
        .expect("cancelled from its page");
    browser
        .wait_for("[data-testid=job-state][data-state=cancelled]", WAIT)
        .unwrap();
    assert!(browser.find("[data-testid=job-cancel]").unwrap().is_none());

    // The list shows it, with its backend and what it cost.
    click(&browser, "[data-testid=nav-jobs]");
    let row = format!("[data-testid=job-row][data-job=\"{job_id}\"][data-state=cancelled]");
    browser.wait_for(&row, WAIT).expect("the job is listed");
    let text = text_content(&browser, &row);
    assert!(
        text.contains("local") && text.contains("cpu") && text.contains('¥'),
        "{text}"
    );
    // Only one job was made: the refused submissions left nothing behind, and the double click
    // made one.
    assert_eq!(
        browser
            .execute(
                "return document.querySelectorAll('[data-testid=job-row]').length;",
                json!([])
            )
            .unwrap(),
        json!(1)
    );
    click(&browser, &format!("{row} a"));
    browser
        .wait_for(
            &format!("[data-testid=page-job][data-id=\"{job_id}\"]"),
            WAIT,
        )
        .expect("the list links to the job");
}
