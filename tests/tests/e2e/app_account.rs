//! The account pages end to end in headless Chromium: sign-up refusals are shown in the user's
//! words (a bad email, a weak password), sign-up then shows who is signed in and that the trial
//! waits for the email; the mailed link (sent again on request) verifies it and adds the trial
//! grant; redeeming an unknown code is refused with its own message, a real code adds to the
//! balance and the ledger; a code redeemed twice, an expired one, a used-up one and too many
//! attempts are each refused in their own words with no money moved; sign-out and a wrong
//! password on sign-in; the password changed on the page and "sign out everywhere".
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use crate::app_support::{WAIT, click, set_value, start, submit_auth, text_content};
use onramp_tests::api::{Client, unique_email, verification_links};
use onramp_tests::webdriver::Browser;
use serde_json::json;

/// Fills the sign-in/up form and submits it.
/// Waits for the refusal with `code` in the element `testid` and returns its text.
fn refusal(browser: &Browser, testid: &str, code: &str) -> String {
    let sel = format!("[data-testid={testid}][data-code={code}]");
    browser.wait_for(&sel, WAIT).unwrap_or_else(|e| {
        panic!(
            "{e}; the page shows: {}",
            text_content(browser, "[data-testid=page-account]")
        )
    });
    text_content(browser, &sel)
}

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn sign_up_redeem_refused_then_redeemed_and_sign_out() {
    let (stack, browser) = start("app-account", Some("en"));
    browser.goto(&format!("{}/account", stack.url)).unwrap();
    browser
        .wait_for("[data-testid=auth-form][data-mode=login]", WAIT)
        .unwrap();
    click(&browser, "[data-testid=auth-switch]");
    browser
        .wait_for("[data-testid=auth-form][data-mode=signup]", WAIT)
        .unwrap();

    // The edge's refusals, each in its own words.
    submit_auth(&browser, "not-an-email", "long enough password");
    assert!(refusal(&browser, "auth-error", "invalid_email").contains("not an email address"));
    let email = unique_email("app-account");
    submit_auth(&browser, &email, "short");
    assert!(refusal(&browser, "auth-error", "weak_password").contains("at least 8 characters"));

    submit_auth(&browser, &email, "correct horse battery");
    browser
        .wait_for_text("[data-testid=session-email]", WAIT, |t| t.contains(&email))
        .expect("the header shows who is signed in");
    // No credit yet: the page says the trial waits for the email, and can send the link again.
    browser
        .wait_for("[data-testid=balance][data-fen=\"0\"]", WAIT)
        .unwrap();
    let note = text_content(&browser, "[data-testid=verify-note]");
    assert!(
        note.contains("Verify your email to get your trial credit") && note.contains(&email),
        "{note}"
    );
    click(&browser, "[data-testid=verify-resend]");
    let sent = browser
        .wait_for("[data-testid=verify-sent]", WAIT)
        .map(|_| text_content(&browser, "[data-testid=verify-sent]"))
        .unwrap();
    assert!(sent.contains(&email), "{sent}");
    let links = verification_links(&stack, &email);
    assert_eq!(links.len(), 2, "the sign-up mail and the one sent again");
    // The mailed link lands on /verify, which says what it gave.
    browser.goto(&links[0]).unwrap();
    let verified = browser
        .wait_for("[data-testid=verified][data-granted=\"1000\"]", WAIT)
        .map(|_| text_content(&browser, "[data-testid=verified]"))
        .unwrap();
    assert!(
        verified.contains("Trial credit added: ¥10.00"),
        "{verified}"
    );
    click(&browser, "[data-testid=verify-to-account]");
    let balance = browser
        .wait_for("[data-testid=balance][data-fen=\"1000\"]", WAIT)
        .unwrap();
    assert!(
        browser.find("[data-testid=verify-note]").unwrap().is_none(),
        "no note once verified"
    );
    assert_eq!(browser.text(&balance).unwrap(), "¥10.00");
    browser
        .wait_for(
            "[data-testid=ledger] tr[data-kind=grant][data-fen=\"1000\"]",
            WAIT,
        )
        .expect("the trial grant is in the ledger");

    // An unknown code is refused with its own message; nothing changes.
    set_value(&browser, "[data-testid=redeem-code]", "NO-SUCH-CODE");
    click(&browser, "[data-testid=redeem-submit]");
    assert!(refusal(&browser, "redeem-error", "code_unknown").contains("no such promotion code"));

    // A real code adds to the balance and to the ledger.
    let code = format!("WELCOME-{}", onramp_tests::stack::random_hex(3)).to_uppercase();
    let admin = Client::with_bearer(&stack.url, &stack.admin_token);
    let made = admin.post(
        "/api/admin/promo-codes",
        &json!({"code": code, "amount_fen": 2500, "max_redemptions": 5}),
    );
    assert_eq!(made.status, 201, "{:?}", made.json);
    set_value(&browser, "[data-testid=redeem-code]", &code.to_lowercase());
    click(&browser, "[data-testid=redeem-submit]");
    browser
        .wait_for("[data-testid=redeem-ok][data-fen=\"2500\"]", WAIT)
        .unwrap();
    browser
        .wait_for("[data-testid=balance][data-fen=\"3500\"]", WAIT)
        .expect("the balance updates after redeeming");
    assert_eq!(text_content(&browser, "[data-testid=balance]"), "¥35.00");
    browser
        .wait_for(
            "[data-testid=ledger] tr[data-kind=redeem][data-fen=\"2500\"]",
            WAIT,
        )
        .expect("the redemption is in the ledger");

    // The same code twice: refused as already redeemed by this account.
    set_value(&browser, "[data-testid=redeem-code]", &code);
    click(&browser, "[data-testid=redeem-submit]");
    assert!(
        refusal(&browser, "redeem-error", "code_already_redeemed").contains("already redeemed")
    );

    // An expired code and a used-up one are refused, each in its own words.
    let promo = |prefix: &str, max: i64, expires_at: Option<&str>| {
        let code = format!("{prefix}-{}", onramp_tests::stack::random_hex(3)).to_uppercase();
        let made = admin.post(
            "/api/admin/promo-codes",
            &json!({"code": code, "amount_fen": 100, "max_redemptions": max, "expires_at": expires_at}),
        );
        assert_eq!(made.status, 201, "{:?}", made.json);
        code
    };
    let expired = promo("OLD", 10, Some("2020-01-01T00:00:00Z"));
    set_value(&browser, "[data-testid=redeem-code]", &expired);
    click(&browser, "[data-testid=redeem-submit]");
    assert!(refusal(&browser, "redeem-error", "code_expired").contains("has expired"));
    let single = promo("ONE", 1, None);
    let other = Client::signup(&stack.url, &unique_email("other"), "correct horse battery");
    assert_eq!(
        other
            .post("/api/credits/redeem", &json!({"code": single}))
            .status,
        200
    );
    set_value(&browser, "[data-testid=redeem-code]", &single);
    click(&browser, "[data-testid=redeem-submit]");
    assert!(refusal(&browser, "redeem-error", "code_exhausted").contains("used up"));

    // Too many attempts in a minute: the limit counts this account's attempts from anywhere, so
    // the rest of them are made through the API in a second session of the same account.
    let mut api = Client::new(&stack.url);
    let login = api.post(
        "/api/auth/login",
        &json!({"email": email, "password": "correct horse battery"}),
    );
    assert_eq!(login.status, 200, "{:?}", login.json);
    api.take_cookie(&login);
    let limited = (0..40)
        .map(|_| api.post("/api/credits/redeem", &json!({"code": "NO-SUCH-CODE"})))
        .find(|a| a.status == 429);
    assert!(limited.is_some(), "the redeem limit never answered 429");
    set_value(&browser, "[data-testid=redeem-code]", &code);
    click(&browser, "[data-testid=redeem-submit]");
    let limited = refusal(&browser, "redeem-error", "rate_limited");
    assert!(
        limited.contains("Too many attempts. Try again in ") && !limited.contains("moment"),
        "the browser's own attempt is refused too, with the real wait: {limited}"
    );
    // None of the refusals moved money.
    assert_eq!(api.balance(), 3500);

    tokens_are_listed_and_revoked_on_the_page(&stack, &browser, &api);

    sign_out_then_in_again(&browser, &email);
    password_changed_then_signed_out_everywhere(&browser, &email, &api);
}

/// The password changes on the page (a wrong current one refused in its own words), the other
/// session is signed out, and "sign out everywhere" ends this one too.
fn password_changed_then_signed_out_everywhere(browser: &Browser, email: &str, other: &Client) {
    const NEW: &str = "a newer horse battery";
    browser
        .wait_for("[data-testid=password-form]", WAIT)
        .unwrap();
    set_value(browser, "[data-testid=current-password]", "not my password");
    set_value(browser, "[data-testid=new-password]", NEW);
    click(browser, "[data-testid=password-submit]");
    assert!(
        refusal(browser, "password-error", "wrong_password")
            .contains("The current password is not right")
    );
    assert_eq!(
        other.get("/api/me").status,
        200,
        "a refusal signs out nobody"
    );
    set_value(
        browser,
        "[data-testid=current-password]",
        "correct horse battery",
    );
    set_value(browser, "[data-testid=new-password]", NEW);
    click(browser, "[data-testid=password-submit]");
    let done = browser
        .wait_for("[data-testid=password-changed]", WAIT)
        .map(|_| text_content(browser, "[data-testid=password-changed]"))
        .unwrap();
    assert!(done.contains("The password is changed"), "{done}");
    assert_eq!(
        other.get("/api/me").status,
        401,
        "the other session is signed out"
    );
    click(browser, "[data-testid=sign-out-everywhere]");
    browser
        .wait_for("[data-testid=auth-form][data-mode=login]", WAIT)
        .expect("signed out here too");
    browser.wait_for("[data-testid=nav-sign-in]", WAIT).unwrap();
    submit_auth(browser, email, NEW);
    browser
        .wait_for("[data-testid=balance][data-fen=\"3500\"]", WAIT)
        .expect("the new password signs in");
}

/// Signing out, then a wrong password is refused as such and the right one shows the same balance.
fn sign_out_then_in_again(browser: &Browser, email: &str) {
    click(browser, "[data-testid=sign-out]");
    browser.wait_for("[data-testid=nav-sign-in]", WAIT).unwrap();
    browser
        .wait_for("[data-testid=auth-form][data-mode=login]", WAIT)
        .unwrap();
    submit_auth(browser, email, "wrong horse battery");
    assert!(refusal(browser, "auth-error", "bad_credentials").contains("Wrong email or password"));
    submit_auth(browser, email, "correct horse battery");
    browser
        .wait_for("[data-testid=balance][data-fen=\"3500\"]", WAIT)
        .expect("signing in again shows the same balance");
    // And what the account's artifacts take of its quota (none yet).
    browser
        .wait_for("[data-testid=artifact-usage][data-used=\"0\"]", WAIT)
        .expect("the account page shows the artifact quota");
    let usage = text_content(browser, "[data-testid=artifact-usage]");
    assert!(usage.contains("0 B / 10.0 GiB"), "{usage}");
}

/// An API token made elsewhere (as `onramp login` does) is listed on the account page, by name
/// and id but never itself, and revoked from there: it signs nobody in any more.
fn tokens_are_listed_and_revoked_on_the_page(
    stack: &onramp_tests::stack::Stack,
    browser: &Browser,
    api: &Client,
) {
    browser
        .wait_for("[data-testid=tokens-empty]", WAIT)
        .unwrap();
    let made = api.post("/api/tokens", &json!({"name": "laptop"}));
    assert_eq!(made.status, 201, "{:?}", made.json);
    let token = made.json["token"].as_str().unwrap().to_string();
    let id = made.json["id"].as_str().unwrap().to_string();
    browser.goto(&format!("{}/account", stack.url)).unwrap();
    let row = format!("[data-testid=tokens] tr[data-token=\"{id}\"]");
    browser
        .wait_for(&row, WAIT)
        .expect("the new token is listed");
    let listed = text_content(browser, &row);
    assert!(
        listed.contains("laptop") && !listed.contains(&token),
        "{listed}"
    );
    assert_eq!(
        Client::with_bearer(&stack.url, &token)
            .get("/api/me")
            .status,
        200
    );
    click(browser, &format!("{row} [data-testid=revoke-token]"));
    browser
        .wait_for("[data-testid=tokens-empty]", WAIT)
        .expect("the list is empty once revoked");
    assert_eq!(
        Client::with_bearer(&stack.url, &token)
            .get("/api/me")
            .status,
        401
    );
}

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn refusals_read_in_chinese() {
    let (stack, browser) = start("app-account-zh", Some("zh-CN"));
    browser.goto(&format!("{}/account", stack.url)).unwrap();
    click(&browser, "[data-testid=auth-switch]");
    browser
        .wait_for("[data-testid=auth-form][data-mode=signup]", WAIT)
        .unwrap();
    let email = unique_email("zh");
    submit_auth(&browser, &email, "short");
    assert!(refusal(&browser, "auth-error", "weak_password").contains("密码太弱"));
    submit_auth(&browser, &email, "correct horse battery");
    browser
        .wait_for("[data-testid=verify-note]", WAIT)
        .expect("signed up");
    let note = text_content(&browser, "[data-testid=verify-note]");
    assert!(note.contains("验证邮箱即可领取试用额度"), "{note}");
}
