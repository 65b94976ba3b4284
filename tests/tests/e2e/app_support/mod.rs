//! Helpers shared by the app's end-to-end tests (`app_*.rs`): start the stack and a browser,
//! set form fields the way a user's edit would (value, then the `input` and `change` events),
//! and read an element's exact text.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.
#![allow(dead_code)]

use onramp_tests::stack::{Stack, StackOptions};
use onramp_tests::webdriver::Browser;
use serde_json::json;
use std::time::Duration;

pub const WAIT: Duration = Duration::from_secs(30);

/// A stack without the runner (the app's pages do not need it) and a fresh browser.
pub fn start(name: &str, lang: Option<&str>) -> (Stack, Browser) {
    let stack = Stack::start(StackOptions {
        with_runner: false,
        ..StackOptions::for_test(name)
    })
    .expect("stack starts");
    let browser = Browser::start(lang).expect("chromium starts");
    (stack, browser)
}

/// Sets a field's value and fires `input` and `change`, as typing and leaving the field does.
pub fn set_value(browser: &Browser, css: &str, value: &str) {
    browser.wait_for(css, WAIT).expect("field is on the page");
    let ok = browser
        .execute(
            "const el = document.querySelector(arguments[0]);
             el.value = arguments[1];
             el.dispatchEvent(new Event('input', { bubbles: true }));
             el.dispatchEvent(new Event('change', { bubbles: true }));
             return true;",
            json!([css, value]),
        )
        .expect("script runs");
    assert_eq!(ok, json!(true));
}

/// The exact `textContent` of the first element matching `css` (WebDriver's text is normalised).
pub fn text_content(browser: &Browser, css: &str) -> String {
    browser
        .execute(
            "const el = document.querySelector(arguments[0]); return el ? el.textContent : null;",
            json!([css]),
        )
        .expect("script runs")
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The spec editor's text on the Plan page (empty while the editor is not on the page).
pub fn spec_text(browser: &Browser) -> String {
    browser
        .execute(
            "return document.querySelector('[data-testid=plan-toml]').value;",
            json!([]),
        )
        .unwrap_or_default()
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Opens the newest verification link mailed to `email` as its owner would on another device
/// (the link is read from the stack's outbox): the account gets its trial credit.
pub fn verify_elsewhere(stack: &Stack, email: &str) {
    let token = onramp_tests::api::verification_token(stack, email);
    let v = onramp_tests::api::Client::new(&stack.url).verify_email(&token);
    assert_eq!(v.status, 200, "verify {email}: {:?}", v.json);
}

/// Fills the sign-in/sign-up form with `email` and `password` and submits it.
pub fn submit_auth(browser: &Browser, email: &str, password: &str) {
    set_value(browser, "[data-testid=auth-email]", email);
    set_value(browser, "[data-testid=auth-password]", password);
    click(browser, "[data-testid=auth-submit]");
}

/// Clicks the first element matching `css`, waiting for it to exist.
pub fn click(browser: &Browser, css: &str) {
    let el = browser.wait_for(css, WAIT).expect("element is on the page");
    browser.click(&el).expect("click");
}
