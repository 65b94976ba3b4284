//! An email belongs to the account that verifies it first: sign-up answers the same whether or
//! not the email has accounts, the owner of a mailbox signs up beside a squatter and verifies
//! first, the squatter's link then fails and its resend mails a note instead of a link; the
//! password picks the account at sign-in. And the signed-in account's password change and
//! "sign out everywhere".

use super::*;
use onramp_tests::api::{Answer, awaited_links, outbox};

const OWNER_PASSWORD: &str = "the owner's own horse battery";

fn signup_answer(stack: &Stack, email: &str, password: &str) -> (Answer, Client) {
    let body = json!({"email": email, "password": password});
    Client::fresh_post(&stack.url, "/api/auth/signup", &body)
}

fn login(stack: &Stack, email: &str, password: &str) -> (Answer, Client) {
    let body = json!({"email": email, "password": password});
    Client::fresh_post(&stack.url, "/api/auth/login", &body)
}

fn token_names(c: &Client) -> Vec<String> {
    let a = c.get("/api/tokens");
    assert_eq!(a.status, 200, "{}", a.shown());
    a.json["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Sign-up with an email that has an account answers exactly as with one that has none.
pub(crate) fn signup_reveals_nothing(stack: &Stack) {
    let (taken, fresh) = (unique_email("has-one"), unique_email("has-none"));
    let first = Client::signup(&stack.url, &taken, PASSWORD);
    first.post("/api/tokens", &json!({"name": "first's"}));
    let (a, again) = signup_answer(stack, &taken, OWNER_PASSWORD);
    let (b, _) = signup_answer(stack, &fresh, OWNER_PASSWORD);
    assert_eq!(
        (a.status, b.status),
        (201, 201),
        "{} / {}",
        a.shown(),
        b.shown()
    );
    let shape = |mut v: serde_json::Value| {
        v["email"] = json!("x");
        v
    };
    assert_eq!(
        shape(a.json.clone()),
        shape(b.json.clone()),
        "the same answer"
    );
    assert!(again.cookie.is_some(), "signed in: {:?}", a.set_cookie);
    assert!(
        token_names(&again).is_empty(),
        "a new account, not the first one"
    );
    assert_eq!(
        first.get("/api/me").status,
        200,
        "the first account is untouched"
    );
    // The first account's own password at sign-up signs into it (a second click).
    let (c, same) = signup_answer(stack, &taken, PASSWORD);
    assert_eq!(c.status, 201, "{}", c.shown());
    assert_eq!(token_names(&same), vec!["first's".to_string()]);
}

/// A squatter signs up with someone's email; its owner signs up too and verifies first.
pub(crate) fn the_first_to_verify_holds_the_email(stack: &Stack) {
    let email = unique_email("claimed");
    let squatter = Client::signup(&stack.url, &email, PASSWORD);
    let squatters_link = verification_token(stack, &email);
    let (a, owner) = signup_answer(stack, &email, OWNER_PASSWORD);
    assert_eq!(a.status, 201, "{}", a.shown());
    let v = owner.verify_email(&verification_token(stack, &email));
    assert_eq!(
        (v.status, v.json["granted_fen"].as_i64()),
        (200, Some(GRANT)),
        "{}",
        v.shown()
    );
    let late = squatter.verify_email(&squatters_link);
    assert_eq!(
        (late.status, late.code()),
        (409, "email_taken"),
        "{}",
        late.shown()
    );
    assert_eq!(
        late.json["error"]["details"]["field"],
        "token",
        "{}",
        late.shown()
    );
    assert_eq!(squatter.get("/api/me").json["email_verified"], false);
    // The squatter's resend answers as ever but mails the mailbox a note, not a link.
    let links = verification_links(stack, &email).len();
    let mails = outbox(stack, &email).len();
    let r = squatter.post("/api/auth/verify/resend", &json!({}));
    assert_eq!(r.status, 200, "{}", r.shown());
    assert_eq!(outbox(stack, &email).len(), mails + 1);
    assert_eq!(
        verification_links(stack, &email).len(),
        links,
        "no new link"
    );
    // A later sign-up gets the note too, and no link.
    let (late_signup, _) = signup_answer(stack, &email, "a third horse battery");
    assert_eq!(late_signup.status, 201, "{}", late_signup.shown());
    assert_eq!(
        verification_links(stack, &email).len(),
        links,
        "no new link"
    );
    // Each password opens its own account.
    let (o, _) = login(stack, &email, OWNER_PASSWORD);
    assert_eq!(
        (o.status, &o.json["email_verified"], &o.json["balance_fen"]),
        (200, &json!(true), &json!(GRANT)),
        "{}",
        o.shown()
    );
    let (s, _) = login(stack, &email, PASSWORD);
    assert_eq!((s.status, &s.json["email_verified"]), (200, &json!(false)));
    // A reset link is for the account that holds the email.
    let ask = Client::new(&stack.url).post("/api/auth/reset/request", &json!({ "email": email }));
    assert_eq!(ask.status, 202, "{}", ask.shown());
    let link = awaited_links(stack, &email, "/reset?token=");
    let token = link[0].split_once("token=").unwrap().1;
    let body = json!({"token": token, "password": "the owner's newest battery"});
    let (done, c) = Client::fresh_post(&stack.url, "/api/auth/reset", &body);
    assert_eq!(done.status, 200, "{}", done.shown());
    assert_eq!(c.balance(), GRANT, "the owner's account");
    assert_eq!(
        squatter.get("/api/me").status,
        200,
        "the squatter is not reset"
    );
}

/// Two sign-ups' verifications race: one account holds the email.
pub(crate) fn racing_verifications_verify_one(stack: &Stack) {
    let email = unique_email("race");
    let tokens: Vec<String> = (0..3)
        .map(|k| {
            Client::signup(&stack.url, &email, &format!("racer number {k} battery"));
            verification_token(stack, &email)
        })
        .collect();
    let answers: Vec<u16> = std::thread::scope(|s| {
        let hs: Vec<_> = tokens
            .iter()
            .map(|t| s.spawn(|| Client::new(&stack.url).verify_email(t).status))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        answers.iter().filter(|&&s| s == 200).count(),
        1,
        "{answers:?}"
    );
    assert_eq!(
        answers.iter().filter(|&&s| s == 409).count(),
        2,
        "{answers:?}"
    );
}

/// Changing the password needs the current one and signs out every other session.
pub(crate) fn password_change(stack: &Stack) {
    let email = unique_email("change");
    let here = Client::signup(&stack.url, &email, PASSWORD);
    let (_, elsewhere) = login(stack, &email, PASSWORD);
    let token = here.post("/api/tokens", &json!({"name": "ci"})).json["token"]
        .as_str()
        .unwrap()
        .to_string();
    let change = |current: &str, new: &str| {
        here.post(
            "/api/auth/password",
            &json!({"current_password": current, "new_password": new}),
        )
    };
    let wrong = change("not the password at all", OWNER_PASSWORD);
    assert_eq!(
        (wrong.status, wrong.code()),
        (403, "wrong_password"),
        "{}",
        wrong.shown()
    );
    assert_eq!(wrong.json["error"]["details"]["field"], "current_password");
    let weak = change(PASSWORD, "short");
    assert_eq!(
        (weak.status, weak.code()),
        (400, "weak_password"),
        "{}",
        weak.shown()
    );
    assert_eq!(
        elsewhere.get("/api/me").status,
        200,
        "refusals sign out nobody"
    );
    let done = change(PASSWORD, OWNER_PASSWORD);
    assert_eq!(done.status, 200, "{}", done.shown());
    assert_eq!(done.json["signed_out_sessions"], 1, "{}", done.shown());
    assert_eq!(here.get("/api/me").status, 200, "this session stays");
    assert_eq!(
        elsewhere.get("/api/me").status,
        401,
        "the other is signed out"
    );
    let api = Client::with_bearer(&stack.url, &token);
    assert_eq!(api.get("/api/me").status, 200, "API tokens stay");
    assert_eq!(login(stack, &email, PASSWORD).0.code(), "bad_credentials");
    assert_eq!(login(stack, &email, OWNER_PASSWORD).0.status, 200);
    // Without a session or token, nothing.
    let anon = Client::new(&stack.url).post(
        "/api/auth/password",
        &json!({"current_password": OWNER_PASSWORD, "new_password": PASSWORD}),
    );
    assert_eq!(anon.status, 401, "{}", anon.shown());
}

/// Sign out everywhere ends every session, and on request every API token.
pub(crate) fn sign_out_everywhere(stack: &Stack) {
    let email = unique_email("everywhere");
    let here = Client::signup(&stack.url, &email, PASSWORD);
    let (_, elsewhere) = login(stack, &email, PASSWORD);
    let token = here.post("/api/tokens", &json!({"name": "ci"})).json["token"]
        .as_str()
        .unwrap()
        .to_string();
    let api = Client::with_bearer(&stack.url, &token);
    let out = here.request("POST", "/api/auth/logout/everywhere", None, &[]);
    assert_eq!(out.status, 200, "{}", out.shown());
    assert_eq!(
        (
            &out.json["signed_out_sessions"],
            &out.json["revoked_tokens"]
        ),
        (&json!(2), &json!(0))
    );
    assert!(
        out.set_cookie
            .iter()
            .any(|c| c.starts_with("onramp_session=;")),
        "the cookie is cleared: {:?}",
        out.set_cookie
    );
    assert_eq!(here.get("/api/me").status, 401);
    assert_eq!(elsewhere.get("/api/me").status, 401);
    assert_eq!(api.get("/api/me").status, 200, "tokens stay unless asked");
    let (_, again) = login(stack, &email, PASSWORD);
    let out = api.post(
        "/api/auth/logout/everywhere",
        &json!({"revoke_tokens": true}),
    );
    assert_eq!(out.status, 200, "{}", out.shown());
    assert_eq!(
        (
            &out.json["signed_out_sessions"],
            &out.json["revoked_tokens"]
        ),
        (&json!(1), &json!(1))
    );
    assert_eq!(api.get("/api/me").status, 401);
    assert_eq!(again.get("/api/me").status, 401);
    let bad = login(stack, &email, PASSWORD).1.post(
        "/api/auth/logout/everywhere",
        &json!({"revoke_tokens": "yes"}),
    );
    assert_eq!(bad.status, 400, "{}", bad.shown());
}
