//! Email verification and the limits that hold without a trusted client address, against
//! `wrangler dev`: sign-up gives no credit and mails a signed link (read from the local outbox);
//! the link gives the trial once, however often or concurrently it is opened, and once per
//! mailbox (`+tags` share one); forged links are refused; a class of 40 signs up from one
//! address; failed logins from one client never lock the owner out of another; the hourly cap
//! bounds the trials many mailboxes can collect; and with `MAIL_SENDER=http` the mail leaves as
//! JSON to a mail service (a fake one on a thread).
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use onramp_tests::api::{
    Client, run_scenarios, unique_email, verification_links, verification_token,
};
use onramp_tests::stack::{Stack, StackExtras, StackOptions};
use serde_json::json;

mod claims;
mod reset;

const PASSWORD: &str = "correct horse battery";
const GRANT: i64 = 1000;

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn edge_verify() {
    // The limits are the defaults of wrangler.toml: what a deployment gets.
    let stack = Stack::start_with(
        StackOptions {
            with_runner: false,
            ..StackOptions::for_test("edge-verify")
        },
        StackExtras::default(),
    )
    .expect("stack starts");
    run_scenarios(
        &stack,
        &[
            (
                "sign-up gives nothing; the mailed link gives the trial once",
                trial_on_verification,
            ),
            (
                "a link opened many times at once grants once",
                concurrent_verification,
            ),
            ("forged and altered links are refused", forged_links),
            (
                "+tags of one mailbox share one trial",
                one_trial_per_mailbox,
            ),
            ("a new link on request, a few per hour", resend),
            (
                "a forgotten password: a link that works once",
                reset::password_reset,
            ),
            (
                "the owner of a mailbox takes back an account signed up with it",
                reset::the_owner_of_the_mailbox_takes_it_back,
            ),
            (
                "sign-up answers the same whether or not the email has an account",
                claims::signup_reveals_nothing,
            ),
            (
                "the first account to verify an email holds it",
                claims::the_first_to_verify_holds_the_email,
            ),
            (
                "racing verifications of one email verify one account",
                claims::racing_verifications_verify_one,
            ),
            (
                "a password change signs out every other session",
                claims::password_change,
            ),
            ("sign out everywhere", claims::sign_out_everywhere),
            (
                "reset mails are limited per email",
                reset::reset_mails_are_limited,
            ),
            (
                "a class of 40 signs up from one address",
                class_behind_one_address,
            ),
            (
                "failures from another client do not lock the owner out",
                login_backoff_per_client,
            ),
        ],
    );
}

fn trial_on_verification(stack: &Stack) {
    let email = unique_email("trial");
    let c = Client::signup(&stack.url, &email, PASSWORD);
    let me = c.get("/api/me");
    assert_eq!(
        (&me.json["balance_fen"], &me.json["email_verified"]),
        (&json!(0), &json!(false)),
        "{:?}",
        me.json
    );
    let links = verification_links(stack, &email);
    assert_eq!(links.len(), 1, "one mail at sign-up: {links:?}");
    assert!(
        links[0].starts_with(&format!("{}/verify?token=", stack.url)),
        "the link is on PUBLIC_URL: {}",
        links[0]
    );
    // The link works without the session (another browser, a phone).
    let anyone = Client::new(&stack.url);
    let token = verification_token(stack, &email);
    let v = anyone.verify_email(&token);
    assert_eq!(v.status, 200, "{:?}", v.json);
    assert_eq!(
        (&v.json["granted_fen"], &v.json["balance_fen"]),
        (&json!(GRANT), &json!(GRANT))
    );
    let me = c.get("/api/me");
    assert_eq!(me.json["email_verified"], true);
    assert_eq!(me.json["balance_fen"], GRANT);
    // Replaying the link answers the same account with nothing more.
    let again = anyone.verify_email(&token);
    assert_eq!(again.status, 200, "{:?}", again.json);
    assert_eq!(
        (&again.json["granted_fen"], &again.json["balance_fen"]),
        (&json!(0), &json!(GRANT))
    );
    assert_eq!(c.balance(), GRANT);
    let ledger = c.get("/api/ledger").json;
    let trials: Vec<_> = ledger["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["reference"].as_str().unwrap_or("").starts_with("trial:"))
        .collect();
    assert_eq!(trials.len(), 1, "{ledger:?}");
}

fn concurrent_verification(stack: &Stack) {
    let email = unique_email("race-verify");
    let c = Client::signup(&stack.url, &email, PASSWORD);
    let token = verification_token(stack, &email);
    let granted: Vec<i64> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..12)
            .map(|_| {
                let token = token.clone();
                s.spawn(move || {
                    let a = Client::new(&stack.url).verify_email(&token);
                    assert_eq!(a.status, 200, "{:?}", a.json);
                    a.json["granted_fen"].as_i64().unwrap()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(granted.iter().sum::<i64>(), GRANT, "{granted:?}");
    assert_eq!(c.balance(), GRANT);
}

fn forged_links(stack: &Stack) {
    let email = unique_email("forge");
    let c = Client::signup(&stack.url, &email, PASSWORD);
    let token = verification_token(stack, &email);
    let (text, sig) = token.rsplit_once('.').unwrap();
    // Another account's id under this signature; a far expiry; a signature of our own making.
    let mut fields: Vec<String> = text.split('.').map(String::from).collect();
    fields[1] = "0".repeat(fields[1].len());
    let other_user = format!("{}.{sig}", fields.join("."));
    let mut fields: Vec<String> = text.split('.').map(String::from).collect();
    fields[2] = "99999999999".into();
    let later = format!("{}.{sig}", fields.join("."));
    let own_sig = format!("{text}.{}", "ab".repeat(32));
    for forged in [
        other_user,
        later,
        own_sig,
        "not-a-token".to_string(),
        String::new(),
    ] {
        let a = c.verify_email(&forged);
        assert_eq!(
            (a.status, a.code()),
            (400, "invalid_link"),
            "{forged}: {:?}",
            a.json
        );
        let msg = a.json["error"]["message"].as_str().unwrap_or("");
        assert!(msg.contains("not valid"), "{msg}");
    }
    assert_eq!(c.balance(), 0, "no forged link gave credit");
    let a = c.post("/api/auth/verify", &json!({"token": token, "extra": 1}));
    assert_eq!((a.status, a.code()), (400, "invalid_json"));
}

fn one_trial_per_mailbox(stack: &Stack) {
    let base = unique_email("farmer");
    let (local, domain) = base.split_once('@').unwrap();
    let first = stack.signup(&format!("{local}+lab1@{domain}"), PASSWORD);
    assert_eq!(first.balance(), GRANT);
    let email = format!("{local}+lab2@{domain}");
    let second = Client::signup(&stack.url, &email, PASSWORD);
    let v = second.verify_email(&verification_token(stack, &email));
    assert_eq!((v.status, v.code()), (409, "trial_taken"), "{:?}", v.json);
    let me = second.get("/api/me").json;
    assert_eq!(
        (&me["email_verified"], &me["balance_fen"]),
        (&json!(true), &json!(0)),
        "verified, without a second trial"
    );
    assert_eq!(first.balance(), GRANT);
}

fn resend(stack: &Stack) {
    let email = unique_email("resend");
    let c = Client::signup(&stack.url, &email, PASSWORD);
    let a = c.post("/api/auth/verify/resend", &json!({}));
    assert_eq!(a.status, 200, "{:?}", a.json);
    assert_eq!(a.json["to"], email);
    assert_eq!(verification_links(stack, &email).len(), 2);
    // Both links work; the trial is still given once.
    let v = c.verify_email(&verification_token(stack, &email));
    assert_eq!(v.json["granted_fen"], GRANT, "{:?}", v.json);
    let a = c.post("/api/auth/verify/resend", &json!({}));
    assert_eq!((a.status, a.code()), (409, "already_verified"));
    // An unverified account asks a few times an hour (VERIFY_MAILS_PER_HOUR, 5).
    let d = Client::signup(&stack.url, &unique_email("resend-limit"), PASSWORD);
    let answers: Vec<_> = (0..6)
        .map(|_| d.post("/api/auth/verify/resend", &json!({})))
        .collect();
    let statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
    assert_eq!(statuses, [200, 200, 200, 200, 200, 429], "{statuses:?}");
    let limited = &answers[5];
    let retry: u64 = limited.retry_after.as_deref().unwrap().parse().unwrap();
    assert!((3000..=3600).contains(&retry), "{retry}");
    assert_eq!(limited.json["error"]["details"]["retry_after_s"], retry);
    let msg = limited.json["error"]["message"].as_str().unwrap();
    assert!(
        (msg.contains(" min") || msg.contains(" h")) && !msg.contains(&format!("{retry} s")),
        "the wait in words: {msg}"
    );
    // Without a session there is nothing to resend.
    assert_eq!(
        Client::new(&stack.url)
            .post("/api/auth/verify/resend", &json!({}))
            .status,
        401
    );
}

fn class_behind_one_address(stack: &Stack) {
    let campus = "203.0.113.40";
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8)
            .map(|t| {
                s.spawn(move || {
                    (0..5)
                        .map(|i| {
                            let email = unique_email(&format!("class{t}-{i}"));
                            Client::new(&stack.url)
                                .request(
                                    "POST",
                                    "/api/auth/signup",
                                    Some(
                                        json!({"email": email, "password": PASSWORD})
                                            .to_string()
                                            .into_bytes(),
                                    ),
                                    &[
                                        ("content-type", "application/json"),
                                        ("cf-connecting-ip", campus),
                                    ],
                                )
                                .status
                        })
                        .collect::<Vec<u16>>()
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(statuses.len(), 40);
    assert!(statuses.iter().all(|&s| s == 201), "{statuses:?}");
}

fn login_backoff_per_client(stack: &Stack) {
    let email = unique_email("owner");
    stack.signup(&email, PASSWORD);
    let login = |ip: &str, password: &str| {
        Client::new(&stack.url).request(
            "POST",
            "/api/auth/login",
            Some(
                json!({"email": email, "password": password})
                    .to_string()
                    .into_bytes(),
            ),
            &[
                ("content-type", "application/json"),
                ("cf-connecting-ip", ip),
            ],
        )
    };
    let attacker = "198.51.100.66";
    let answers: Vec<_> = (0..20).map(|_| login(attacker, "wrong password")).collect();
    let statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
    eprintln!("20 failed logins from one client: {statuses:?}");
    assert_eq!(&statuses[..5], &[401; 5], "five free failures");
    assert!(
        statuses[5..].iter().all(|&s| s == 429),
        "then backoff: {statuses:?}"
    );
    let limited = &answers[5];
    let retry: u64 = limited.retry_after.as_deref().unwrap().parse().unwrap();
    assert!((1..=30).contains(&retry), "{retry}");
    // The backoff holds for that client even with the right password…
    assert_eq!(login(attacker, PASSWORD).status, 429);
    // …and the owner, elsewhere, signs in at once.
    let owner = login("203.0.113.10", PASSWORD);
    assert_eq!(owner.status, 200, "{:?}", owner.json);
    assert_eq!(owner.json["balance_fen"], GRANT);
    // A success clears the owner's own failures: four typos, a success, four more typos and
    // the right password still get in.
    for _ in 0..2 {
        for _ in 0..4 {
            assert_eq!(login("203.0.113.11", "typo typo").status, 401);
        }
        assert_eq!(login("203.0.113.11", PASSWORD).status, 200);
    }
}

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn the_trial_cap_bounds_farming_with_many_mailboxes() {
    const CAP: usize = 2;
    let stack = Stack::start_with(
        StackOptions {
            with_runner: false,
            ..StackOptions::for_test("edge-verify-cap")
        },
        StackExtras {
            vars: vec![("TRIAL_GRANTS_PER_HOUR".into(), CAP.to_string())],
            extra_backends: vec![],
        },
    )
    .expect("stack starts");
    // Six mailboxes, each from its own address, verifying at once.
    let accounts: Vec<(Client, String)> = (0..6)
        .map(|i| {
            let email = unique_email(&format!("farm{i}"));
            let c = Client::signup(&stack.url, &email, PASSWORD);
            let token = verification_token(&stack, &email);
            (c, token)
        })
        .collect();
    let answers: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = accounts
            .iter()
            .enumerate()
            .map(|(i, (_, token))| {
                let url = stack.url.clone();
                s.spawn(move || {
                    Client::new(&url).request(
                        "POST",
                        "/api/auth/verify",
                        Some(json!({ "token": token }).to_string().into_bytes()),
                        &[
                            ("content-type", "application/json"),
                            ("cf-connecting-ip", &format!("192.0.2.{}", i + 1)),
                        ],
                    )
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let granted = answers
        .iter()
        .filter(|a| a.status == 200 && a.json["granted_fen"] == GRANT)
        .count();
    assert_eq!(granted, CAP, "{answers:?}");
    for a in answers.iter().filter(|a| a.status != 200) {
        assert_eq!((a.status, a.code()), (429, "rate_limited"), "{:?}", a.json);
        let retry: u64 = a.retry_after.as_deref().unwrap().parse().unwrap();
        assert!((3000..=3600).contains(&retry), "{retry}");
        let msg = a.json["error"]["message"].as_str().unwrap();
        assert!(msg.contains("your email is verified"), "{msg}");
    }
    // Those refused are verified all the same, and have nothing.
    let balances: Vec<(bool, i64)> = accounts
        .iter()
        .map(|(c, _)| {
            let me = c.get("/api/me").json;
            (
                me["email_verified"].as_bool().unwrap(),
                me["balance_fen"].as_i64().unwrap(),
            )
        })
        .collect();
    assert!(balances.iter().all(|(v, _)| *v), "{balances:?}");
    assert_eq!(
        balances.iter().map(|(_, b)| b).sum::<i64>(),
        GRANT * CAP as i64,
        "{balances:?}"
    );
}

/// What the fake mail service received: the `Authorization` header and the JSON body.
type Received = std::sync::Arc<std::sync::Mutex<Vec<(String, serde_json::Value)>>>;

/// A mail service on a free port: records every request, answers 202, or 500 for addresses
/// that contain "bounce".
fn start_mail_service() -> (String, Received) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/send", listener.local_addr().unwrap());
    let received: Received = Default::default();
    let log = received.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut line, mut auth, mut len) = (String::new(), String::new(), 0usize);
            let _ = reader.read_line(&mut line);
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = h.split_once(':') {
                    match k.trim().to_ascii_lowercase().as_str() {
                        "authorization" => auth = v.trim().to_string(),
                        "content-length" => len = v.trim().parse().unwrap_or(0),
                        _ => {}
                    }
                }
            }
            let mut body = vec![0; len];
            let _ = reader.read_exact(&mut body);
            let body: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let bounce = body["to"].as_str().unwrap_or("").contains("bounce");
            log.lock().unwrap().push((auth, body));
            let status = if bounce { "500 Down" } else { "202 Accepted" };
            let mut stream = stream;
            let _ = stream.write_all(
                format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .as_bytes(),
            );
        }
    });
    (url, received)
}

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn mail_leaves_through_the_http_sender() {
    let (url, received) = start_mail_service();
    let stack = Stack::start_with(
        StackOptions {
            with_runner: false,
            ..StackOptions::for_test("edge-verify-mail")
        },
        StackExtras {
            vars: vec![
                ("MAIL_SENDER".into(), "http".into()),
                ("MAIL_HTTP_URL".into(), url),
                ("MAIL_HTTP_TOKEN".into(), "mail-s3cret".into()),
            ],
            extra_backends: vec![],
        },
    )
    .expect("stack starts");
    let email = unique_email("http-mail");
    let c = Client::signup(&stack.url, &email, PASSWORD);
    let mails = received.lock().unwrap().clone();
    assert_eq!(mails.len(), 1, "{mails:?}");
    let (auth, mail) = &mails[0];
    assert_eq!(auth, "Bearer mail-s3cret");
    assert_eq!(mail["to"], email);
    assert!(mail["subject"].as_str().unwrap().contains("Verify"));
    let text = mail["text"].as_str().unwrap();
    let link = text
        .split_whitespace()
        .find(|w| w.starts_with(&format!("{}/verify?token=", stack.url)))
        .unwrap_or_else(|| panic!("no link in {text}"));
    assert!(
        verification_links(&stack, &email).is_empty(),
        "nothing goes to the outbox"
    );
    let token = link.split_once("token=").unwrap().1;
    let v = c.verify_email(token);
    assert_eq!(v.json["granted_fen"], GRANT, "{:?}", v.json);
    // A mail service that fails: the account exists all the same; asking again shows the
    // failure as the edge's own, with a request id and not the cause.
    let bounced = Client::signup(&stack.url, &unique_email("bounce"), PASSWORD);
    assert_eq!(bounced.balance(), 0);
    let again = bounced.post("/api/auth/verify/resend", &json!({}));
    assert_eq!(
        (again.status, again.code()),
        (500, "internal"),
        "{:?}",
        again.json
    );
    assert!(again.json["error"]["details"]["request_id"].is_string());
    assert_eq!(received.lock().unwrap().len(), 3);
}
