//! The attack's inputs: every hostile string in every stored text field, and bodies that are not
//! what a route expects.

use super::*;

/// Every stored text field, with every hostile string: refused with a 4xx, or stored and given
/// back as data. Returns what the browser should then show as plain text (job id, experiment id).
pub(crate) fn hostile_strings(w: &World) -> (Client, String, String, String) {
    let u = w.user("hostile");
    let (job, token) = w.job(&u, None);
    let jt = Client::with_bearer(&w.stack.url, &token);
    let anon = Client::new(&w.stack.url);
    for s in hostile() {
        let t = short(&s);
        // Sign-up and login: the email is validated, the password is only hashed.
        let r = w.post(
            &anon,
            "/api/auth/signup",
            &json!({"email": s, "password": PASSWORD}),
        );
        assert!(
            r.status == 400 || r.status == 413,
            "email {t:?}: {:?}",
            r.json
        );
        let r = w.post(
            &anon,
            "/api/auth/login",
            &json!({"email": format!("{s}@example.com"), "password": s}),
        );
        assert!((400..500).contains(&r.status), "login {t:?}: {}", r.status);
        // Labels are refused when they cannot be shown, else kept as they are.
        for (path, body, field) in [
            ("/api/tokens", json!({"name": s}), "name"),
            (
                "/api/experiments",
                json!({"spec": LORA, "title": s}),
                "title",
            ),
        ] {
            let r = w.post(&u, path, &body);
            assert!(
                matches!(r.status, 201 | 400 | 409 | 413),
                "{path} {t:?}: {:?}",
                r.json
            );
            if r.status == 400 {
                assert_eq!(r.json["error"]["details"]["field"], field, "{:?}", r.json);
            }
        }
        // Redemption codes, spec names and datasets, ids in paths, queries, idempotency keys.
        let r = w.post(&u, "/api/credits/redeem", &json!({"code": s}));
        assert!((400..500).contains(&r.status), "redeem {t:?}: {}", r.status);
        let spec = LORA.replace(
            "name = \"qwen2.5-7b-lora-4090\"",
            &format!("name = {}", toml_string(&s)),
        );
        let r = w.see(
            "POST /api/jobs (hostile name)",
            u.submit_spec(&spec, &random_hex(8)),
        );
        assert!(
            r.status == 201 || r.status == 422 || r.status == 413,
            "name {t:?}: {:?}",
            r.json
        );
        if r.status == 201 {
            assert_eq!(r.json["name"].as_str(), Some(s.as_str()), "kept as given");
        }
        let spec = LORA.replace(
            "dataset = \"alpaca-zh\"",
            &format!("dataset = {}", toml_string(&s)),
        );
        let r = w.see(
            "POST /api/jobs (hostile dataset)",
            u.submit_spec(&spec, &random_hex(8)),
        );
        assert!(
            r.status == 422 || r.status == 413 || r.status == 201,
            "dataset {t:?}: {}",
            r.status
        );
        let r = w.see(
            "POST /api/jobs (hostile key)",
            u.request(
                "POST",
                "/api/jobs",
                Some(LORA.as_bytes().to_vec()),
                &[("idempotency-key", &ascii_key(&s))],
            ),
        );
        assert!(
            r.status == 201 || (400..500).contains(&r.status),
            "key {t:?}: {}",
            r.status
        );
        let q = urlencode(&s);
        for path in [
            format!("/api/jobs/{q}"),
            format!("/api/jobs/{job}/logs?offset={q}"),
            format!("/api/jobs/{job}/metrics?since={q}"),
            format!("/api/experiments/{q}"),
        ] {
            let r = w.get(&u, &path);
            assert!(
                (400..500).contains(&r.status),
                "{}: {}",
                short(&path),
                r.status
            );
        }
        // A job's message is cleaned, never refused (but one past the report's 4096-byte limit
        // is refused whole).
        let r = w.post(
            &jt,
            &format!("/api/jobs/{job}/report"),
            &json!({"message": s}),
        );
        let want = if s.len() > 4096 { 400 } else { 200 };
        assert_eq!(r.status, want, "message {t:?}: {:?}", r.json);
        let m = w.get(&u, &format!("/api/jobs/{job}")).json["message"]
            .as_str()
            .unwrap_or("")
            .to_string();
        assert!(
            !m.chars().any(|c| c.is_control() && c != '\n' && c != '\t')
                && !m.contains('\u{202e}')
                && m.chars().count() <= 2000,
            "stored message {:?}",
            short(&m)
        );
    }
    // What the browser must show as text: a job named like markup, reporting markup, and a
    // published experiment titled like markup.
    let name = "<img src=x onerror=\"window.__pwned=1\">";
    let (shown, token) = w.job(&u, Some(name));
    let jt = Client::with_bearer(&w.stack.url, &token);
    let r = w.post(
        &jt,
        &format!("/api/jobs/{shown}/report"),
        &json!({"message": "<script>window.__pwned=2</script><b>bold</b>"}),
    );
    assert_eq!(r.status, 200);
    let e = w.post(
        &u,
        "/api/experiments",
        &json!({"spec": LORA, "title": "<svg onload=\"window.__pwned=3\">", "published": true}),
    );
    assert_eq!(e.status, 201, "{:?}", e.json);
    let exp = e.json["id"].as_str().unwrap().to_string();
    let email = w.get(&u, "/api/me").json["email"]
        .as_str()
        .unwrap()
        .to_string();
    (u, email, shown, exp)
}

/// What of `s` a header can carry (visible ASCII), or the whole of it when that is nothing.
fn ascii_key(s: &str) -> String {
    let k: String = s.chars().filter(char::is_ascii_graphic).take(300).collect();
    if k.is_empty() { "?".repeat(200) } else { k }
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .take(3000)
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Bodies that are not what a route expects: a 4xx on every route that takes one.
/// Bodies no route takes: not JSON, the wrong JSON, too deep, too big, TOML cut short.
fn malformed() -> Vec<(Vec<u8>, &'static str)> {
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    vec![
        (b"{".to_vec(), "application/json"),
        (b"[]".to_vec(), "application/json"),
        (b"null".to_vec(), "application/json"),
        (b"\"text\"".to_vec(), "application/json"),
        (
            b"{\"email\": 1, \"password\": [], \"spec\": {}, \"code\": null, \"metrics\": 7}"
                .to_vec(),
            "application/json",
        ),
        (vec![0xff, 0xfe, 0x00, 0xc3, 0x28], "application/json"),
        (deep.into_bytes(), "application/json"),
        (vec![b'a'; 3 << 20], "application/json"),
        (b"name = ".to_vec(), "application/toml"),
    ]
}

pub(crate) fn malformed_bodies(w: &World) {
    let u = w.user("bodies");
    let (job, token) = w.job(&u, None);
    let jt = Client::with_bearer(&w.stack.url, &token);
    let admin = w.admin();
    let bodies = malformed();
    let routes: Vec<(&Client, String)> = vec![
        (&u, "/api/auth/signup".into()),
        (&u, "/api/auth/login".into()),
        (&u, "/api/tokens".into()),
        (&u, "/api/credits/redeem".into()),
        (&u, "/api/experiments".into()),
        (&u, "/api/jobs".into()),
        (&jt, format!("/api/jobs/{job}/report")),
        (&admin, "/api/admin/promo-codes".into()),
        (&admin, "/api/admin/refunds".into()),
        (&u, "/api/auth/verify".into()),
        (&u, "/api/auth/password".into()),
        (&u, "/api/auth/logout/everywhere".into()),
    ];
    for (c, path) in &routes {
        for (body, ctype) in &bodies {
            let r = w.see(
                &format!("POST {path} malformed"),
                c.request(
                    "POST",
                    path,
                    Some(body.clone()),
                    &[("content-type", ctype), ("idempotency-key", &random_hex(8))],
                ),
            );
            // A token may be made with no name at all: an object with other keys is one.
            let nameless_token = path == "/api/tokens" && body.starts_with(b"{\"email\"");
            assert!(
                (400..500).contains(&r.status) || (nameless_token && r.status == 201),
                "{path} with {} bytes: {} {:?}",
                body.len(),
                r.status,
                r.json
            );
        }
    }
    // A log chunk past the limit, and a huge offset.
    let r = w.raw(
        &jt,
        "POST",
        &format!("/api/jobs/{job}/log?offset=0"),
        vec![b'x'; 3 << 20],
        "application/octet-stream",
    );
    assert!((400..500).contains(&r.status), "{}", r.status);
    let r = w.raw(
        &jt,
        "POST",
        &format!("/api/jobs/{job}/log?offset=18446744073709551615"),
        b"x".to_vec(),
        "application/octet-stream",
    );
    assert!((400..500).contains(&r.status), "{}", r.status);
    // Methods and routes that do not exist.
    for (m, p) in [
        ("DELETE", "/api/me"),
        ("PUT", "/api/jobs"),
        ("PATCH", "/api/ledger"),
        ("POST", "/api/health"),
    ] {
        let r = w.see(&format!("{m} {p}"), u.request(m, p, None, &[]));
        assert!((400..500).contains(&r.status), "{m} {p}: {}", r.status);
    }
}

/// Datasets named by paths that would leave the datasets root or the job's own folder (a system
/// file, `..`, a home folder, another job's folder by its absolute path or from beside it): each
/// refused with 422 at `data.dataset`, saying to upload the file instead, and no money moves.
pub(crate) fn dataset_escapes(w: &World) {
    let u = w.user("escapes");
    let (other_job, _) = w.job(&w.user("escapes-other"), None);
    let before = u.balance();
    let escapes = [
        "/etc/passwd".to_string(),
        "../x".into(),
        "../../../../etc/passwd".into(),
        "data/../../x".into(),
        "~/x.jsonl".into(),
        "\\\\server\\share\\x".into(),
        format!("/var/lib/onramp/jobs/{other_job}/out/final/adapter_model.safetensors"),
        format!("../onramp-{other_job}/spec.toml"),
    ];
    for bad in escapes {
        let spec = LORA.replace(
            "dataset = \"alpaca-zh\"",
            &format!("dataset = {}", toml_string(&bad)),
        );
        let r = w.see(
            "POST /api/jobs (dataset escape)",
            u.submit_spec(&spec, &random_hex(8)),
        );
        assert_eq!(r.status, 422, "{bad:?}: {:?}", r.json);
        let diags = r.json["error"]["details"]["diagnostics"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            diags.iter().any(|d| d["path"] == "data.dataset"
                && d["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("upload the file"))),
            "{bad:?}: {:?}",
            r.json
        );
    }
    assert_eq!(u.balance(), before, "no money moved");
}
