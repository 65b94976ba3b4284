//! A forgotten password in headless Chromium: the sign-in form asks for a reset link, the link
//! from the mail opens `/reset`, a weak password is refused in words, and a good one signs the
//! browser in on the account page, where the old password no longer works.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use crate::app_support::{WAIT, click, set_value, start};
use onramp_tests::api::{Client, awaited_links, unique_email};
use serde_json::json;

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn a_forgotten_password_is_reset_from_the_mailed_link() {
    let (stack, browser) = start("app-reset", Some("en"));
    let email = unique_email("forgot");
    stack.signup(&email, "correct horse battery");
    browser.goto(&format!("{}/account", stack.url)).unwrap();
    browser
        .wait_for("[data-testid=auth-form][data-mode=login]", WAIT)
        .unwrap();
    set_value(&browser, "[data-testid=auth-email]", &email);
    click(&browser, "[data-testid=forgot-toggle] summary");
    click(&browser, "[data-testid=forgot-send]:not([disabled])");
    let sent = browser.wait_for("[data-testid=forgot-sent]", WAIT).unwrap();
    assert!(browser.text(&sent).unwrap().contains(&email));

    let links = awaited_links(&stack, &email, "/reset?token=");
    let link = links.first().expect("the reset mail is in the outbox");
    browser.goto(link).unwrap();
    set_value(&browser, "[data-testid=reset-password]", "short");
    click(&browser, "[data-testid=reset-submit]:not([disabled])");
    let refused = browser
        .wait_for("[data-testid=reset-error][data-code=weak_password]", WAIT)
        .expect("a weak password is refused");
    assert!(browser.text(&refused).unwrap().contains("password"));
    set_value(
        &browser,
        "[data-testid=reset-password]",
        "a brand new horse battery",
    );
    click(&browser, "[data-testid=reset-submit]:not([disabled])");
    browser
        .wait_for("[data-testid=reset-done]", WAIT)
        .expect("the password is set");
    click(&browser, "[data-testid=reset-to-account]");
    browser
        .wait_for("[data-testid=balance]", WAIT)
        .expect("signed in on the account page");
    browser
        .wait_for("[data-testid=sign-out]", WAIT)
        .expect("signed in: the page offers to sign out");
    assert!(browser.find("[data-testid=auth-form]").unwrap().is_none());
    let old = Client::new(&stack.url).post(
        "/api/auth/login",
        &json!({"email": email, "password": "correct horse battery"}),
    );
    assert_eq!(old.code(), "bad_credentials");
}
