//! The walking skeleton through every layer: `wrangler dev` (workerd with real local D1, KV and
//! Durable Objects) answers the operator's `/api/admin/health` with its bindings and the runner's
//! reachability, the public `/api/health` says only that it lives (and writes nothing), and the
//! Leptos app, loaded in headless Chromium, renders that without anything internal.
//!
//! These tests need the built stack (app, worker, runner) and installed tools, so they are
//! ignored in a plain `cargo test`; `cargo xtask test` builds everything and runs them.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use onramp_tests::stack::{Stack, StackOptions};
use onramp_tests::webdriver::Browser;
use serde_json::Value;
use std::time::Duration;

fn get_json(url: &str) -> (u16, Value) {
    let resp = onramp_tests::http().get(url).call().expect("request");
    let status = resp.status().as_u16();
    let body: Value = resp.into_body().read_json().expect("JSON body");
    (status, body)
}

/// The deep health check, with the admin token.
fn deep_health(stack: &Stack) -> (u16, Value) {
    let resp = onramp_tests::http()
        .get(&format!("{}/api/admin/health", stack.url))
        .header("authorization", &format!("Bearer {}", stack.admin_token))
        .call()
        .expect("request");
    let status = resp.status().as_u16();
    let body: Value = resp.into_body().read_json().expect("JSON body");
    (status, body)
}

/// How many migrations edge/migrations holds: all of them are applied on a fresh stack.
fn migrations() -> usize {
    let dir = onramp_tests::paths::repo_root().join("edge/migrations");
    std::fs::read_dir(dir)
        .expect("edge/migrations")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "sql"))
        })
        .count()
}

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn health_reports_bindings_and_the_runner() {
    let stack = Stack::start(StackOptions::for_test("health")).expect("stack starts");
    // The public check: alive, its version, and nothing about bindings or backends.
    let (status, live) = get_json(&format!("{}/api/health", stack.url));
    assert_eq!(status, 200, "{live}");
    assert_eq!(
        live,
        serde_json::json!({"ok": true, "service": "onramp-edge", "version": env!("CARGO_PKG_VERSION")})
    );
    // The deep check is the operator's.
    let (status, anon) = get_json(&format!("{}/api/admin/health", stack.url));
    assert_eq!(
        (status, &anon["error"]["code"]),
        (401, &serde_json::json!("unauthenticated")),
        "{anon}"
    );
    let (status, h) = deep_health(&stack);
    assert_eq!(status, 200, "{h}");
    assert_eq!(h["ok"], true, "{h}");
    assert_eq!(h["service"], "onramp-edge");
    assert_eq!(h["version"], env!("CARGO_PKG_VERSION"));
    for binding in ["d1", "kv", "durable_object"] {
        assert_eq!(h["bindings"][binding]["ok"], true, "{binding}: {h}");
    }
    assert!(
        h["bindings"]["d1"]["detail"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{} migrations applied", migrations())),
        "{h}"
    );
    let backends = h["backends"].as_array().expect("backends list");
    assert_eq!(backends.len(), 1, "{h}");
    assert_eq!(backends[0]["name"], "local");
    assert_eq!(backends[0]["reachable"], true, "{h}");
    assert!(
        backends[0]["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("onramp-runner") && d.contains("sandbox")),
        "{h}"
    );
    // The runner secret never leaks into the answer.
    assert!(!h.to_string().contains(&stack.runner_secret));

    // The Durable Object really stores: its probe counter grows with each deep check, and
    // public checks, which anyone can repeat, write nothing.
    let count = |h: &Value| -> u64 {
        let d = h["bindings"]["durable_object"]["detail"].as_str().unwrap();
        d.rsplit(' ').next().unwrap().parse().unwrap()
    };
    for _ in 0..3 {
        assert_eq!(get_json(&format!("{}/api/health", stack.url)).0, 200);
    }
    let (_, h2) = deep_health(&stack);
    assert_eq!(count(&h2), count(&h) + 1, "{h} then {h2}");
}

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn unknown_api_routes_get_the_json_error_shape() {
    let stack = Stack::start(StackOptions {
        with_runner: false,
        ..StackOptions::for_test("routes")
    })
    .expect("stack starts");
    let (status, body) = get_json(&format!("{}/api/no-such-thing", stack.url));
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "not_found");
    assert_eq!(
        body["error"]["message"],
        "no route for GET /api/no-such-thing"
    );
    // Without a runner configured there are no backends to report.
    let (status, h) = deep_health(&stack);
    assert_eq!(status, 200);
    assert_eq!(h["backends"], serde_json::json!([]));
}

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn a_runner_that_is_down_is_reported_unreachable() {
    let mut stack = Stack::start(StackOptions::for_test("down")).expect("stack starts");
    stack.runner.take(); // stops the runner's process group
    let (status, h) = deep_health(&stack);
    assert_eq!(status, 200, "the edge itself is still healthy: {h}");
    assert_eq!(h["backends"][0]["reachable"], false, "{h}");
    assert!(
        h["backends"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("unreachable"),
        "{h}"
    );
}

#[test]
#[ignore = "needs the built stack and Chromium: run through `cargo xtask test`"]
fn the_page_renders_the_health_of_the_stack() {
    let stack = Stack::start(StackOptions::for_test("page")).expect("stack starts");
    let browser = Browser::start(None).expect("chromium starts");
    browser.goto(&format!("{}/", stack.url)).unwrap();
    let text = browser
        .wait_for_text(
            "[data-testid=health-result]",
            Duration::from_secs(30),
            |t| !t.is_empty(),
        )
        .unwrap();
    assert_eq!(
        text,
        format!("Onramp {}: online", env!("CARGO_PKG_VERSION"))
    );
    let el = browser
        .find("[data-testid=health-result]")
        .unwrap()
        .unwrap();
    assert_eq!(
        browser.attribute(&el, "data-state").unwrap().as_deref(),
        Some("ok")
    );
    // Nothing internal reaches any visitor's page.
    let footer = browser.find("footer").unwrap().unwrap();
    let footer = browser.text(&footer).unwrap();
    for internal in [
        "D1",
        "KV",
        "Durable",
        "migrations",
        "probe",
        "backend",
        "runner",
    ] {
        assert!(
            !footer.contains(internal),
            "{internal:?} in the footer: {footer}"
        );
    }
}

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn the_spec_schema_is_served_at_a_stable_url() {
    let stack = Stack::start(StackOptions {
        with_runner: false,
        ..StackOptions::for_test("schema")
    })
    .expect("stack starts");
    let (status, schema) = get_json(&format!("{}/schema/jobspec.schema.json", stack.url));
    assert_eq!(status, 200);
    assert_eq!(schema, jobspec::schema::json_schema());
}
