//! The edge's API surface against `wrangler dev`: the OpenAPI document matches the routes, the
//! one error shape, body limits, accounts (sign-up, login, logout, `me`, API tokens), the CSRF
//! origin check, and rate limits with Retry-After.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use onramp_tests::api::{Client, run_scenarios, unique_email, verification_token};
use onramp_tests::raw_http;
use onramp_tests::stack::{Stack, StackExtras, StackOptions};
use serde_json::json;

mod devices;

const PASSWORD: &str = "correct horse battery";

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn edge_api() {
    let stack = Stack::start_with(
        StackOptions {
            with_runner: false,
            ..StackOptions::for_test("edge-api")
        },
        StackExtras {
            vars: vec![
                ("SIGNUP_LIMIT_PER_HOUR".into(), "1000".into()),
                ("LOGIN_LIMIT_PER_15_MIN".into(), "5".into()),
                ("SIGNUP_GRANT_FEN".into(), "1234".into()),
            ],
            extra_backends: vec![],
        },
    )
    .expect("stack starts");
    run_scenarios(
        &stack,
        &[
            (
                "openapi lists every route and each one is served",
                openapi_matches_the_routes,
            ),
            (
                "errors have one shape, bodies have limits",
                errors_and_limits,
            ),
            ("a GET or HEAD with a body, and HEAD", reads_with_bodies),
            ("sign-up, me, logout, login", signup_login_logout),
            ("sign-up refuses bad input and duplicates", signup_refusals),
            (
                "cookie writes need this origin; API tokens do not",
                csrf_and_tokens,
            ),
            ("login is rate limited with Retry-After", login_rate_limit),
            (
                "a browser that signed in before is never locked out",
                devices::a_known_browser_is_never_locked_out,
            ),
            (
                "oversized bodies, chunked or not, leave every next request answered",
                oversized_bodies_never_hang_the_next_request,
            ),
            (
                "an oversized upload that stalls gets its 413, one abandoned is forgotten",
                stalled_and_abandoned_uploads,
            ),
        ],
    );
}

/// A GET or HEAD with a body (which means nothing to them) is answered as without one, not as a
/// request the runtime cannot rebuild (a 500); HEAD is answered wherever GET is, without a body.
fn reads_with_bodies(stack: &Stack) {
    let addr = stack.url.trim_start_matches("http://").to_string();
    for (method, body) in [("GET", &b"{}"[..]), ("HEAD", b"{}"), ("HEAD", b"")] {
        let (status, text) =
            raw_http::request(&addr, method, "/api/openapi.json", body, false).unwrap();
        assert_eq!(status, 200, "{method} with {body:?}: {text}");
        assert_eq!(text.is_empty(), method == "HEAD", "{method}: {text}");
    }
}

fn openapi_matches_the_routes(stack: &Stack) {
    let c = Client::new(&stack.url);
    let doc = c.get("/api/openapi.json");
    assert_eq!(doc.status, 200);
    assert_eq!(doc.json["openapi"], "3.1.0");
    let paths = doc.json["paths"].as_object().expect("paths");
    let mut count = 0;
    for (path, ops) in paths {
        for method in ops.as_object().expect("operations").keys() {
            count += 1;
            let concrete = path.replace("{id}", "0123abcd");
            let a = c.request(&method.to_ascii_uppercase(), &concrete, None, &[]);
            // Every documented route is served: whatever it answers, it is not "no route".
            let msg = a.json["error"]["message"].as_str().unwrap_or("");
            assert!(
                !msg.starts_with("no route for"),
                "{method} {path} is documented but not routed: {msg}"
            );
            assert_ne!(a.status, 405, "{method} {path}");
        }
    }
    assert!(count >= 20, "only {count} operations documented");
    eprintln!("openapi: {count} operations, each routed");
}

fn errors_and_limits(stack: &Stack) {
    let c = Client::new(&stack.url);
    let a = c.get("/api/nope");
    assert_eq!((a.status, a.code()), (404, "not_found"));
    assert!(a.json["error"]["details"].is_object(), "{:?}", a.json);
    let a = c.request("DELETE", "/api/me", None, &[]);
    assert_eq!((a.status, a.code()), (405, "method_not_allowed"));
    // A method the runtime's own types do not know (QUERY, a draft standard) is not read as GET.
    let addr = stack.url.trim_start_matches("http://").to_string();
    for path in ["/api/me", "/api/jobs", "/api/ledger"] {
        let (status, text) = raw_http::request(&addr, "QUERY", path, &[], false).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(
            (status, &json["error"]["code"]),
            (405, &json!("method_not_allowed")),
            "QUERY {path}: {text}"
        );
        let allowed = json["error"]["details"]["allowed"].as_array().cloned();
        assert!(
            allowed.is_some_and(|a| a.contains(&json!("GET"))),
            "QUERY {path}: {text}"
        );
    }
    // With a body too, on routes that take one: a 405, not a request the runtime cannot rebuild.
    for path in [
        "/api/auth/login",
        "/api/admin/promo-codes",
        "/api/admin/refunds",
    ] {
        let body = br#"{"email": "0@0.com", "password": "x"}"#;
        let (status, text) = raw_http::request(&addr, "QUERY", path, body, false).unwrap();
        assert!(
            status == 405 && text.contains("method_not_allowed"),
            "QUERY {path}: {status} {text}"
        );
    }
    let a = c.request(
        "POST",
        "/api/auth/signup",
        Some(b"{not json".to_vec()),
        &[("content-type", "application/json")],
    );
    assert_eq!((a.status, a.code()), (400, "invalid_json"));
    let big = format!(
        "{{\"email\":\"{}\",\"password\":\"x\"}}",
        "a".repeat(70 * 1024)
    );
    let a = c.request(
        "POST",
        "/api/auth/signup",
        Some(big.into_bytes()),
        &[("content-type", "application/json")],
    );
    assert_eq!(
        (a.status, a.code()),
        (413, "body_too_large"),
        "{:?}",
        a.json
    );
    let a = c.post(
        "/api/auth/signup",
        &json!({"email": "a@b.cn", "password": "12345678", "admin": true}),
    );
    assert_eq!(
        (a.status, a.code()),
        (400, "invalid_json"),
        "unknown fields are refused"
    );
    for path in ["/api/me", "/api/ledger", "/api/jobs", "/api/checkpoints"] {
        let a = c.get(path);
        assert_eq!((a.status, a.code()), (401, "unauthenticated"), "{path}");
    }
    chunked_body_is_cut_at_the_limit(stack);
}

/// A chunked body declares no length: the edge must refuse it once it passes the limit, not
/// wait for (and hold) the whole of it. The body here never ends, so only an edge that counts
/// while it reads can answer at all.
fn chunked_body_is_cut_at_the_limit(stack: &Stack) {
    use std::io::{Read, Write};
    let addr = stack.url.trim_start_matches("http://");
    let mut tcp = std::net::TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    let head = format!(
        "POST /api/auth/signup HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    tcp.write_all(head.as_bytes()).unwrap();
    let chunk = format!("400\r\n{}\r\n", "a".repeat(0x400));
    for _ in 0..80 {
        // 80 KiB, over the 64 KiB limit, and no closing chunk.
        if tcp.write_all(chunk.as_bytes()).is_err() {
            break; // The edge already answered and closed.
        }
    }
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
        match tcp.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) => panic!("no answer to an endless chunked body: {e}"),
        }
    }
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
}

/// The reproduction of a hang: a body past its route's limit (80 KiB chunked to the login,
/// 320 KiB chunked to a redemption, a 300 KiB spec with its length to the jobs), each followed
/// by ordinary requests, from four clients at once. Every one of the 400 requests gets its
/// answer, with a body in the one error shape (or the health answer): none hangs, none is a
/// bare 503 or 500 from the local runtime. (Before the edge read every body whole, 63 of the
/// 400 hung past 30 s and 68 were wrangler's own 500 "Cannot reconstruct a Request with a used
/// body" or 503 "Your worker restarted mid-request".)
fn oversized_bodies_never_hang_the_next_request(stack: &Stack) {
    let addr = stack.url.trim_start_matches("http://").to_string();
    let kinds: [(&str, &str, usize, bool); 3] = [
        ("POST", "/api/auth/login", 80 * 1024, true),
        ("POST", "/api/credits/redeem", 320 * 1024, true),
        ("POST", "/api/jobs", 300 * 1024, false),
    ];
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|client| {
                let addr = addr.clone();
                scope.spawn(move || {
                    let mut failures = Vec::new();
                    for round in 0..50 {
                        let (method, path, size, chunked) = kinds[(client + round) % kinds.len()];
                        let body = format!("{{\"pad\":\"{}\"}}", "a".repeat(size));
                        let wanted = [
                            (method, path, body.into_bytes(), chunked, 413),
                            ("GET", "/api/health", Vec::new(), false, 200),
                        ];
                        for (method, path, body, chunked, status) in wanted {
                            match raw_http::request(&addr, method, path, &body, chunked) {
                                Ok((s, text)) => {
                                    let json: serde_json::Value =
                                        serde_json::from_str(&text).unwrap_or_default();
                                    let shaped = if status == 200 {
                                        json["ok"] == true
                                    } else {
                                        json["error"]["code"] == "body_too_large"
                                    };
                                    if s != status || !shaped {
                                        failures.push(format!(
                                            "client {client} round {round}: {method} {path}: {s} {text:.200}"
                                        ));
                                    }
                                }
                                Err(e) => failures.push(format!(
                                    "client {client} round {round}: {method} {path}: {e}"
                                )),
                            }
                        }
                    }
                    failures
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("client"))
            .collect()
    });
    // The first few, short: a CI log keeps only the end of a long panic message.
    assert!(
        failures.is_empty(),
        "{} of 400 requests failed, the first: {:.1200}",
        failures.len(),
        failures.join(" | ")
    );
}

/// A body past its route's limit whose sender stops halfway (it neither ends the body nor goes)
/// is refused with 413 once the edge has waited `DRAIN_STALL` for more; one whose sender closes
/// the connection halfway gets no answer, since nobody is there for it. Neither leaves the
/// local proxy stuck: the next request, on another connection, is answered.
fn stalled_and_abandoned_uploads(stack: &Stack) {
    use std::io::Write;
    let addr = stack.url.trim_start_matches("http://").to_string();
    let open = |path: &str| {
        let mut tcp = std::net::TcpStream::connect(&addr).expect("connect");
        tcp.set_read_timeout(Some(std::time::Duration::from_secs(60)))
            .unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Transfer-Encoding: chunked\r\n\r\n"
        );
        tcp.write_all(head.as_bytes()).unwrap();
        // 96 KiB of a body whose end never comes: past the 64 KiB limit of the route.
        for _ in 0..6 {
            let part = "a".repeat(16 * 1024);
            let _ = tcp.write_all(format!("{:x}\r\n{part}\r\n", part.len()).as_bytes());
        }
        tcp
    };
    let health = || {
        let (status, text) = raw_http::request(&addr, "GET", "/api/health", &[], false)
            .unwrap_or_else(|e| panic!("health after a broken upload: {e}"));
        assert_eq!(status, 200, "health after a broken upload: {text}");
    };
    let abandoned = open("/api/auth/logout");
    drop(abandoned);
    health();
    let mut stalled = open("/api/auth/login");
    let (status, text) = raw_http::read_answer(&mut stalled).expect("a stalled upload is answered");
    assert_eq!(status, 413, "{text}");
    let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    assert_eq!(json["error"]["code"], "body_too_large", "{text}");
    health();
    drop(stalled);
    health();
}

fn signup_login_logout(stack: &Stack) {
    let email = unique_email("flow");
    let mut c = Client::new(&stack.url);
    let a = c.post(
        "/api/auth/signup",
        &json!({"email": email.to_uppercase(), "password": PASSWORD}),
    );
    assert_eq!(a.status, 201, "{:?}", a.json);
    assert_eq!(a.json["email"], email, "emails are stored lower-case");
    assert_eq!(
        (&a.json["balance_fen"], &a.json["email_verified"]),
        (&json!(0), &json!(false)),
        "no credit before the email is verified"
    );
    let cookie = a
        .set_cookie
        .iter()
        .find(|c| c.starts_with("onramp_session="))
        .expect("session cookie");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    assert!(
        !cookie.contains("Secure"),
        "no Secure on plain-http localhost: {cookie}"
    );
    let token = cookie
        .split(';')
        .next()
        .expect("present")
        .trim_start_matches("onramp_session=");
    assert_eq!(token.len(), 64, "256-bit token");
    c.take_cookie(&a);
    let v = c.verify_email(&verification_token(stack, &email));
    assert_eq!(v.status, 200, "{:?}", v.json);
    assert_eq!(v.json["granted_fen"], 1234, "SIGNUP_GRANT_FEN");
    let me = c.get("/api/me");
    assert_eq!(me.status, 200);
    assert_eq!(me.json["email"], email);
    assert_eq!(me.json["balance_fen"], 1234);
    assert_eq!(me.json["email_verified"], true);

    let out = c.post("/api/auth/logout", &json!({}));
    assert_eq!(out.status, 200, "{:?}", out.json);
    assert!(out.set_cookie.iter().any(|c| c.contains("Max-Age=0")));
    // The old cookie is dead on the server too, not just forgotten by the browser.
    assert_eq!(c.get("/api/me").status, 401);

    let mut fresh = Client::new(&stack.url);
    let bad = fresh.post(
        "/api/auth/login",
        &json!({"email": email, "password": "wrong password"}),
    );
    assert_eq!((bad.status, bad.code()), (401, "bad_credentials"));
    let unknown = fresh.post(
        "/api/auth/login",
        &json!({"email": unique_email("nobody"), "password": PASSWORD}),
    );
    assert_eq!(
        (unknown.status, unknown.code()),
        (401, "bad_credentials"),
        "unknown emails look the same"
    );
    let ok = fresh.post(
        "/api/auth/login",
        &json!({"email": email, "password": PASSWORD}),
    );
    assert_eq!(ok.status, 200, "{:?}", ok.json);
    assert_eq!(ok.json["balance_fen"], 1234);
    assert_eq!(ok.json["email_verified"], true);
    fresh.take_cookie(&ok);
    assert_eq!(fresh.get("/api/me").json["email"], email);
}

fn signup_refusals(stack: &Stack) {
    let c = Client::new(&stack.url);
    let a = c.post(
        "/api/auth/signup",
        &json!({"email": "not-an-email", "password": PASSWORD}),
    );
    assert_eq!((a.status, a.code()), (400, "invalid_email"));
    let a = c.post(
        "/api/auth/signup",
        &json!({"email": unique_email("weak"), "password": "short"}),
    );
    assert_eq!((a.status, a.code()), (400, "weak_password"));
    // An email with an account is not refused: the answer must not say it has one (the first
    // account to verify it holds it, edge_verify/claims.rs).
    let email = unique_email("dup");
    Client::signup(&stack.url, &email, "another horse battery");
    let a = c.post(
        "/api/auth/signup",
        &json!({"email": email, "password": PASSWORD}),
    );
    assert_eq!(a.status, 201, "{}", a.shown());
    let evil = Client {
        origin: Some("http://evil.example".into()),
        ..Client::new(&stack.url)
    };
    let a = evil.post(
        "/api/auth/signup",
        &json!({"email": unique_email("evil"), "password": PASSWORD}),
    );
    assert_eq!((a.status, a.code()), (403, "bad_origin"));
}

fn csrf_and_tokens(stack: &Stack) {
    let c = Client::signup(&stack.url, &unique_email("csrf"), PASSWORD);
    // A cookie-authenticated write from another origin, or with none, is refused.
    let foreign = Client {
        origin: Some("http://evil.example".into()),
        ..c.clone()
    };
    assert_eq!(foreign.post("/api/tokens", &json!({})).code(), "bad_origin");
    let none = Client {
        origin: None,
        ..c.clone()
    };
    assert_eq!(
        none.post("/api/credits/redeem", &json!({"code": "ANY-CODE"}))
            .code(),
        "bad_origin"
    );
    // Reads with the cookie need no origin.
    assert_eq!(none.get("/api/me").status, 200);

    let t = c.post("/api/tokens", &json!({"name": "laptop"}));
    assert_eq!(t.status, 201, "{:?}", t.json);
    let token = t.json["token"].as_str().expect("token").to_string();
    assert!(token.starts_with("onr_"));
    let cli = Client::with_bearer(&stack.url, &token);
    assert_eq!(
        cli.get("/api/me").json["email"],
        c.get("/api/me").json["email"]
    );
    // A bearer token is not ambient, so writes with it need no Origin.
    assert_eq!(
        cli.post("/api/credits/redeem", &json!({"code": "NO-SUCH-CODE"}))
            .code(),
        "code_unknown"
    );
    let bogus = Client::with_bearer(&stack.url, "onr_0000");
    assert_eq!(bogus.get("/api/me").status, 401);
    list_and_revoke_tokens(stack, &c, &t.json);
    // Logging out with a token revokes it.
    assert_eq!(cli.post("/api/auth/logout", &json!({})).status, 200);
    assert_eq!(cli.get("/api/me").status, 401);
}

/// The account's tokens are listed by id and name (never the tokens), and one revoked by id stops
/// signing anyone in at once; another account cannot revoke it, nor can an id that names none.
fn list_and_revoke_tokens(stack: &Stack, c: &Client, laptop: &serde_json::Value) {
    let ci = c.post("/api/tokens", &json!({"name": "ci"}));
    assert_eq!(ci.status, 201, "{:?}", ci.json);
    let ci_token = ci.json["token"].as_str().unwrap().to_string();
    let ci_id = ci.json["id"].as_str().unwrap().to_string();
    let list = c.get("/api/tokens");
    assert_eq!(list.status, 200, "{:?}", list.json);
    assert!(
        !list.json.to_string().contains("onr_"),
        "no token in a list: {}",
        list.json
    );
    let mut names: Vec<(String, String)> = list.json["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["id"].as_str().unwrap().into(),
                k["name"].as_str().unwrap().into(),
            )
        })
        .collect();
    names.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        names,
        vec![
            (ci_id.clone(), "ci".to_string()),
            (
                laptop["id"].as_str().unwrap().to_string(),
                "laptop".to_string()
            )
        ]
    );
    let other = Client::signup(&stack.url, &unique_email("other"), PASSWORD);
    let path = format!("/api/tokens/{ci_id}");
    let a = other.request("DELETE", &path, None, &[]);
    assert_eq!((a.status, a.code()), (404, "not_found"), "{:?}", a.json);
    let a = c.request("DELETE", "/api/tokens/not-an-id", None, &[]);
    assert_eq!((a.status, a.code()), (404, "not_found"), "{:?}", a.json);
    let ci_client = Client::with_bearer(&stack.url, &ci_token);
    assert_eq!(ci_client.get("/api/me").status, 200);
    let a = c.request("DELETE", &path, None, &[]);
    assert_eq!(
        (a.status, &a.json["revoked"]),
        (200, &json!(true)),
        "{:?}",
        a.json
    );
    assert_eq!(
        ci_client.get("/api/me").status,
        401,
        "a revoked token signs nobody in"
    );
    let a = c.request("DELETE", &path, None, &[]);
    assert_eq!(a.status, 404, "revoked once: {:?}", a.json);
    assert_eq!(
        c.get("/api/tokens").json["tokens"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

fn login_rate_limit(stack: &Stack) {
    let email = unique_email("limit");
    Client::signup(&stack.url, &email, PASSWORD);
    let c = Client::new(&stack.url);
    let mut statuses = Vec::new();
    for _ in 0..7 {
        statuses.push(c.post(
            "/api/auth/login",
            &json!({"email": email, "password": "wrong password"}),
        ));
    }
    let codes: Vec<u16> = statuses.iter().map(|a| a.status).collect();
    eprintln!("login attempts (limit 5 per 15 min): {codes:?}");
    assert_eq!(&codes[..5], &[401; 5]);
    let limited = &statuses[5];
    assert_eq!((limited.status, limited.code()), (429, "rate_limited"));
    let retry: u64 = limited
        .retry_after
        .as_deref()
        .and_then(|r| r.parse().ok())
        .expect("Retry-After");
    assert!((1..=900).contains(&retry), "{retry}");
    // Even the right password waits out the window.
    assert_eq!(
        c.post(
            "/api/auth/login",
            &json!({"email": email, "password": PASSWORD})
        )
        .status,
        429
    );
}
