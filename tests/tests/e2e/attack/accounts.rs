//! Accounts, attacked: a squatter signs up with a victim's email before the victim does, learns
//! nothing from sign-up, cannot verify it once the victim has, never opens the victim's account
//! with its own password, and cannot try passwords through the password change without limit;
//! and another account's jobs, experiments and checkpoints are not found by any route, nor
//! continued by `checkpoint.resume_from`.

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

/// Another user's things are "not found", whatever the route; anonymous callers are 401.
pub(crate) fn other_users(w: &World) {
    let a = w.user("victim");
    let b = w.user("intruder");
    let (job, _) = w.job(&a, None);
    let private = w.post(
        &a,
        "/api/experiments",
        &json!({"spec": LORA, "published": false}),
    );
    assert_eq!(private.status, 201, "{:?}", private.json);
    let exp = private.json["id"].as_str().unwrap().to_string();
    for path in [
        format!("/api/jobs/{job}"),
        format!("/api/jobs/{job}/logs"),
        format!("/api/jobs/{job}/metrics"),
        format!("/api/jobs/{job}/checkpoint"),
        format!("/api/experiments/{exp}"),
    ] {
        assert_eq!(w.get(&b, &path).status, 404, "{path}");
        assert_eq!(
            w.get(&Client::new(&w.stack.url), &path).status,
            if path.contains("/experiments/") {
                404
            } else {
                401
            },
            "{path}"
        );
    }
    assert_eq!(
        w.post(&b, &format!("/api/jobs/{job}/cancel"), &json!({}))
            .status,
        404
    );
    assert_eq!(
        w.post(
            &b,
            "/api/experiments",
            &json!({"spec": LORA, "job_id": job})
        )
        .status,
        404,
        "a snapshot of another user's job"
    );
    continued_by_another(w, &b, &job);
    let ledger = w.get(&b, "/api/ledger").json;
    assert!(
        !ledger.to_string().contains(&job),
        "b's ledger shows nothing of a's job: {ledger}"
    );
    assert!(!w.get(&b, "/api/jobs").json.to_string().contains(&job));
    assert!(
        !w.get(&b, "/api/checkpoints")
            .json
            .to_string()
            .contains(&job)
    );
    // Ids that are not ours, or not ids at all.
    for id in [
        "0",
        &"f".repeat(32),
        &"f".repeat(65),
        "..%2f..%2fetc",
        "%00",
        "jobs",
    ] {
        let r = w.get(&b, &format!("/api/jobs/{id}"));
        assert!((400..500).contains(&r.status), "{id}: {}", r.status);
    }
    assert_eq!(
        w.get(&a, &format!("/api/jobs/{job}")).json["state"],
        "running"
    );
}

/// Continuing another account's job (by its id, or the id in another case): refused as if there
/// were no such job, never "not finished yet", and nothing held.
fn continued_by_another(w: &World, b: &Client, job: &str) {
    let before = b.balance();
    for id in [job.to_string(), job.to_uppercase()] {
        let spec = format!("{LORA}\n[checkpoint]\nresume_from = \"{id}\"\n");
        let r = w.see(
            "POST /api/jobs (another account's resume_from)",
            b.submit_spec(&spec, &random_hex(8)),
        );
        assert!(matches!(r.status, 404 | 422), "{id}: {:?}", r.json);
        assert!(!r.json.to_string().contains("not_finished"), "{:?}", r.json);
    }
    assert_eq!(b.balance(), before);
}
