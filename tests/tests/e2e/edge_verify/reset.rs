//! A forgotten password: the reset link is mailed only to an email that has an account, while
//! the answer is the same for any email; it works once, is not a verification link, and the new
//! password signs out every other session and API token, so the owner of a mailbox takes back
//! an account someone else signed up with their email.

use super::*;
use onramp_tests::api::{awaited_links, mailed_links};

const NEW_PASSWORD: &str = "a brand new horse battery";

fn reset_token(stack: &Stack, email: &str) -> String {
    let links = awaited_links(stack, email, "/reset?token=");
    let newest = links
        .first()
        .unwrap_or_else(|| panic!("no reset mail to {email}"));
    assert!(
        newest.starts_with(&format!("{}/reset?token=", stack.url)),
        "{newest}"
    );
    newest.split_once("token=").unwrap().1.to_string()
}

fn ask(stack: &Stack, email: &str) -> onramp_tests::api::Answer {
    Client::new(&stack.url).post("/api/auth/reset/request", &json!({ "email": email }))
}

fn set_password(stack: &Stack, token: &str, password: &str) -> (onramp_tests::api::Answer, Client) {
    let body = json!({"token": token, "password": password});
    Client::fresh_post(&stack.url, "/api/auth/reset", &body)
}

pub(crate) fn password_reset(stack: &Stack) {
    let email = unique_email("reset");
    let owner = stack.signup(&email, PASSWORD);
    let token = owner.post("/api/tokens", &json!({"name": "laptop"})).json["token"]
        .as_str()
        .unwrap()
        .to_string();
    let api = Client::with_bearer(&stack.url, &token);
    assert_eq!(api.get("/api/me").status, 200);

    // The same answer for an email with an account and one without; a mail only for the first.
    let nobody = unique_email("nobody");
    let (known, unknown) = (ask(stack, &email), ask(stack, &nobody));
    assert_eq!(known.status, 202, "{}", known.shown());
    assert_eq!(
        (unknown.status, &unknown.json["expires_in_s"]),
        (202, &known.json["expires_in_s"])
    );
    assert_eq!(unknown.json["to"], nobody);
    // The mail leaves after the answer; nobody's would have left beside it.
    let link = reset_token(stack, &email);
    assert!(mailed_links(stack, &nobody, "/reset?token=").is_empty());

    // A verification link is not a reset link; a weak password is refused and spends nothing.
    let verify = verification_token(stack, &email);
    assert_eq!(
        set_password(stack, &verify, NEW_PASSWORD).0.code(),
        "invalid_link"
    );
    let (weak, _) = set_password(stack, &link, "short");
    assert_eq!(weak.status, 400, "{}", weak.shown());

    let (done, fresh) = set_password(stack, &link, NEW_PASSWORD);
    assert_eq!(
        (done.status, &done.json["email"]),
        (200, &json!(email)),
        "{}",
        done.shown()
    );
    assert_eq!(
        fresh.get("/api/me").status,
        200,
        "the new password signs in"
    );
    assert_eq!(
        owner.get("/api/me").status,
        401,
        "every other session is signed out"
    );
    assert_eq!(api.get("/api/me").status, 401, "and every API token");
    let login = |password: &str| {
        Client::new(&stack.url).post(
            "/api/auth/login",
            &json!({"email": email, "password": password}),
        )
    };
    assert_eq!(login(PASSWORD).code(), "bad_credentials");
    assert_eq!(login(NEW_PASSWORD).status, 200);
    // Once only.
    let again = set_password(stack, &link, "yet another horse battery").0;
    assert_eq!(
        (again.status, again.code()),
        (400, "invalid_link"),
        "{}",
        again.shown()
    );
    assert_eq!(
        login(NEW_PASSWORD).status,
        200,
        "the used link changed nothing"
    );
}

/// Someone signs up with another person's email: the owner of the mailbox, rather than sign up
/// beside it (`claims.rs`), resets the password, the squatter is signed out, and the owner
/// verifies the email and gets the trial.
pub(crate) fn the_owner_of_the_mailbox_takes_it_back(stack: &Stack) {
    let email = unique_email("squatted");
    let squatter = Client::signup(&stack.url, &email, PASSWORD);
    assert_eq!(ask(stack, &email).status, 202);
    let (done, owner) = set_password(stack, &reset_token(stack, &email), NEW_PASSWORD);
    assert_eq!(done.status, 200, "{}", done.shown());
    assert_eq!(squatter.get("/api/me").status, 401);
    assert_eq!(
        owner.post("/api/auth/verify/resend", &json!({})).status,
        200
    );
    let v = owner.verify_email(&verification_token(stack, &email));
    assert_eq!(
        (v.status, v.json["granted_fen"].as_i64()),
        (200, Some(GRANT)),
        "{}",
        v.shown()
    );
}

/// Reset mails are limited per email, whether or not it has an account, so the limit tells
/// nothing either.
pub(crate) fn reset_mails_are_limited(stack: &Stack) {
    for (email, has_account) in [
        (unique_email("reset-limit"), true),
        (unique_email("reset-none"), false),
    ] {
        if has_account {
            stack.signup(&email, PASSWORD);
        }
        let answers: Vec<u16> = (0..4).map(|_| ask(stack, &email).status).collect();
        assert_eq!(answers, vec![202, 202, 202, 429], "{email}");
    }
}
