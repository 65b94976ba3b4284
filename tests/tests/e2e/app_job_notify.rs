//! "Notify me when this job ends" on the job page: while the browser blocks notifications the box
//! is disabled and the page says so; ticking it (permission granted, as the browser's prompt
//! would) makes the end of the watched job — here cancelled from another device — show a system
//! notification with the job's name and how it ended.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use crate::app_support::{WAIT, click, submit_auth, text_content};
use onramp_tests::api::unique_email;
use onramp_tests::stack::{Stack, StackOptions};
use onramp_tests::webdriver::Browser;
use serde_json::json;

/// Records every notification the page shows (`window.notes`: title and body) while still
/// showing it through the browser's own `Notification`.
const SPY: &str = "
  window.notes = [];
  const Real = window.Notification;
  window.Notification = class extends Real {
    constructor(title, options) { super(title, options); window.notes.push([title, options.body]); }
  };
  return true;
";

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn the_end_of_a_watched_job_is_notified() {
    let stack = Stack::start(StackOptions::for_test("app-job-notify")).expect("stack starts");
    let email = unique_email("app-notify");
    let password = "correct horse battery";
    let elsewhere = stack.signup(&email, password);
    let a = elsewhere.submit_spec(&onramp_tests::specs::tiny_train(5000), "notify-1");
    assert_eq!(a.status, 201, "{:?}", a.json);
    let id = a.json["id"].as_str().expect("id").to_string();
    let name = a.json["name"].as_str().expect("name").to_string();

    let browser = Browser::start(Some("en")).expect("chromium starts");
    browser.goto(&format!("{}/account", stack.url)).unwrap();
    browser
        .wait_for("[data-testid=auth-form][data-mode=login]", WAIT)
        .unwrap();
    submit_auth(&browser, &email, password);
    browser
        .wait_for("[data-testid=balance]", WAIT)
        .expect("signed in");
    // Notifications blocked in the browser: the box cannot be ticked, and the page says why.
    browser.set_permission("notifications", "denied").unwrap();
    browser.goto(&format!("{}/jobs/{id}", stack.url)).unwrap();
    browser
        .wait_for("[data-testid=job-notify][disabled]", WAIT)
        .expect("no box to tick while notifications are blocked");
    let status = text_content(&browser, "[data-testid=job-notify-status]");
    assert!(status.contains("blocked"), "{status}");

    browser.set_permission("notifications", "granted").unwrap();
    browser.goto(&format!("{}/jobs/{id}", stack.url)).unwrap();
    browser
        .wait_for("[data-testid=page-job][data-state=running]", WAIT)
        .expect("the job runs");
    assert_eq!(browser.execute(SPY, json!([])).unwrap(), json!(true));
    click(&browser, "[data-testid=job-notify]:not([disabled])");
    browser
        .wait_for("[data-testid=job-notify]:checked", WAIT)
        .expect("the box is ticked");
    assert_eq!(
        browser
            .execute("return window.notes.length;", json!([]))
            .unwrap(),
        json!(0),
        "nothing is notified before the job ends"
    );

    let c = elsewhere.post(&format!("/api/jobs/{id}/cancel"), &json!({}));
    assert_eq!(c.status, 200, "{:?}", c.json);
    browser
        .wait_for("[data-testid=page-job][data-state=cancelled]", WAIT)
        .expect("the page sees the end");
    browser
        .wait_for("[data-testid=job-notify-status][data-sent=true]", WAIT)
        .expect("the notification is shown");
    assert_eq!(
        browser.execute("return window.notes;", json!([])).unwrap(),
        json!([[format!("Job {name} has ended"), "cancelled"]])
    );
    assert!(
        browser.find("[data-testid=job-notify]").unwrap().is_none(),
        "no box once the job has ended"
    );
}
