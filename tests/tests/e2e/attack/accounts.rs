//! Accounts, attacked: a squatter signs up with a victim's email before the victim does, learns
//! nothing from sign-up, cannot verify it once the victim has, never opens the victim's account
//! with its own password, and cannot try passwords through the password change without limit.

use super::*;
use onramp_tests::api::verification_token;

pub(crate) fn accounts(w: &World) {
    let email = unique_email("squatted-victim");
    let mut squatter = Client::new(&w.stack.url);
    let first = w.post(
        &squatter,
        "/api/auth/signup",
        &json!({"email": email, "password": "the squatter's battery"}),
    );
    assert_eq!(first.status, 201, "{}", first.shown());
    squatter.take_cookie(&first);
    let squatters_link = verification_token(&w.stack, &email);
    // The victim's sign-up is not refused, and answers as a new email's would.
    let mut victim = Client::new(&w.stack.url);
    let theirs = w.post(
        &victim,
        "/api/auth/signup",
        &json!({"email": email, "password": PASSWORD}),
    );
    let elsewhere = w.post(
        &Client::new(&w.stack.url),
        "/api/auth/signup",
        &json!({"email": unique_email("nobody-had-it"), "password": PASSWORD}),
    );
    assert_eq!(
        (theirs.status, elsewhere.status),
        (201, 201),
        "{}",
        theirs.shown()
    );
    assert_eq!(
        theirs.json["email_verified"],
        elsewhere.json["email_verified"]
    );
    assert_eq!(theirs.json["balance_fen"], elsewhere.json["balance_fen"]);
    victim.take_cookie(&theirs);
    let v = w.post(
        &victim,
        "/api/auth/verify",
        &json!({"token": verification_token(&w.stack, &email)}),
    );
    assert_eq!(v.status, 200, "{}", v.shown());
    let late = w.post(
        &squatter,
        "/api/auth/verify",
        &json!({"token": squatters_link}),
    );
    assert_eq!(
        (late.status, late.code()),
        (409, "email_taken"),
        "{}",
        late.shown()
    );
    let me = w.get(&squatter, "/api/me");
    assert_eq!(
        (&me.json["email_verified"], &me.json["balance_fen"]),
        (&json!(false), &json!(0))
    );
    let opened = w.post(
        &Client::new(&w.stack.url),
        "/api/auth/login",
        &json!({"email": email, "password": "the squatter's battery"}),
    );
    assert_eq!(opened.json["email_verified"], false, "{}", opened.shown());
    assert_eq!(w.get(&victim, "/api/me").json["email_verified"], true);

    // Guessing the current password through the password change runs into a limit.
    let statuses: Vec<u16> = (0..12)
        .map(|k| {
            w.post(
                &squatter,
                "/api/auth/password",
                &json!({"current_password": format!("guess number {k}"), "new_password": "whatever battery"}),
            )
            .status
        })
        .collect();
    assert!(statuses[..10].iter().all(|&s| s == 403), "{statuses:?}");
    assert_eq!(statuses[10..], [429, 429], "{statuses:?}");
}
