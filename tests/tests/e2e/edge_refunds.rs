//! The scheduled reconcile and refunds against `wrangler dev`: the cron trigger (fired through
//! wrangler's `--test-scheduled`) really runs the sweep, which settles a job whose backend says it
//! ended without the job telling the edge; then an operator refunds part of what that job was
//! charged (`POST /api/admin/refunds`): bounded by the capture, idempotent per key, a `refund`
//! ledger row with the job as reference, and every refusal moves no money.
//!
//! The backend is a fake served by this test that follows the runner's contract and says what the
//! test tells it. Needs the built stack: ignored in a plain `cargo test`, run by `cargo xtask test`.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use onramp_tests::api::{Answer, Client, unique_email};
use onramp_tests::stack::{Stack, StackExtras, StackOptions, random_hex};
use onramp_tests::wait;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const GRANT: i64 = 10_000;
const LORA: &str = include_str!("../../../jobspec/specs/7b-lora-4090.toml");
/// An RTX 4090 costs 200 fen an hour; the fake says the job ran exactly one hour.
const CHARGED: i64 = 200;

/// Remote job id → the state the fake reports for it.
type States = Arc<Mutex<HashMap<String, String>>>;

/// A backend on the runner's contract: submissions start `running`; status reports whatever the
/// test set, with one hour between start and end.
fn start_fake(secret: String) -> (String, States) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let states: States = Arc::default();
    let shared = states.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let (mut len, mut authorized) = (0usize, false);
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
                    break;
                }
                let (k, v) = h.split_once(':').unwrap_or(("", ""));
                match k.trim().to_ascii_lowercase().as_str() {
                    "content-length" => len = v.trim().parse().unwrap_or(0),
                    "authorization" => authorized = v.trim() == format!("Bearer {secret}"),
                    _ => {}
                }
            }
            let _ = reader.read_exact(&mut vec![0; len]);
            let mut parts = line.split_whitespace();
            let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            let mut states = shared.lock().unwrap();
            let (status, body) = match (authorized, method, path.strip_prefix("/jobs")) {
                (false, ..) => (401, json!({})),
                (true, "POST", Some("")) => {
                    let id = format!("f{}", states.len() + 1);
                    states.insert(id.clone(), "running".into());
                    (201, json!({"id": id, "state": "running"}))
                }
                (true, "GET", Some(id)) => match states.get(id.trim_start_matches('/')) {
                    Some(state) => {
                        let ended = state != "running";
                        (
                            200,
                            json!({
                                "state": state, "exit_code": ended.then_some(0),
                                "started_at": "2030-01-01T00:00:00Z",
                                "ended_at": ended.then_some("2030-01-01T01:00:00Z"),
                            }),
                        )
                    }
                    None => (404, json!({})),
                },
                _ => (404, json!({})),
            };
            drop(states);
            let body = body.to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, states)
}

fn submit(c: &Client) -> String {
    let a = c.submit_spec(LORA, &random_hex(8));
    assert_eq!(a.status, 201, "{:?}", a.json);
    a.json["id"].as_str().unwrap().to_string()
}

fn refund(c: &Client, key: Option<&str>, job: &str, amount: i64) -> Answer {
    let body = json!({"job_id": job, "amount_fen": amount, "reason": "the node failed"});
    let mut headers = vec![("content-type", "application/json")];
    if let Some(k) = key {
        headers.push(("idempotency-key", k));
    }
    c.request(
        "POST",
        "/api/admin/refunds",
        Some(body.to_string().into_bytes()),
        &headers,
    )
}

fn refunds_in_ledger(u: &Client) -> Vec<Value> {
    let ledger = u.get("/api/ledger").json;
    ledger["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "refund")
        .cloned()
        .collect()
}

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn the_cron_trigger_settles_silent_jobs_and_refunds_are_bounded_by_the_capture() {
    let secret = random_hex(16);
    let (fake_url, states) = start_fake(secret.clone());
    let stack = Stack::start_with(
        StackOptions {
            with_runner: false,
            ..StackOptions::for_test("edge-refunds")
        },
        StackExtras {
            vars: vec![
                ("SIGNUP_GRANT_FEN".into(), GRANT.to_string()),
                // Every active job counts as silent, so one sweep asks about all of them.
                ("SILENT_AFTER_S".into(), "0".into()),
            ],
            extra_backends: vec![
                json!({"name": "fake", "kind": "runner", "url": fake_url, "secret": secret, "cards": {"rtx-4090": 8}}),
            ],
        },
    )
    .expect("stack starts");
    let u = stack.signup(&unique_email("refund"), "correct horse battery");
    let id = submit(&u);
    let open_id = submit(&u);
    assert_eq!(u.get(&format!("/api/jobs/{id}")).json["state"], "running");

    // The job ended on the backend but never told the edge: only the sweep can find out.
    states
        .lock()
        .unwrap()
        .insert("f1".into(), "succeeded".into());
    stack.run_scheduled("*/5 * * * *").unwrap();
    let job = wait::until(
        "the sweep to settle the job",
        Duration::from_secs(30),
        || {
            let j = u.get(&format!("/api/jobs/{id}")).json;
            Ok((j["state"] == "succeeded").then_some(j))
        },
    )
    .unwrap();
    assert_eq!(job["charged_fen"], CHARGED, "{job}");
    let hold = job["hold_fen"].as_i64().unwrap();
    let open_hold = u.get(&format!("/api/jobs/{open_id}")).json["hold_fen"]
        .as_i64()
        .unwrap();
    // The other job is still running: the sweep left it (and its hold) alone.
    assert_eq!(
        u.get(&format!("/api/jobs/{open_id}")).json["state"],
        "running"
    );
    let balance = GRANT - CHARGED - open_hold;
    assert_eq!(u.balance(), balance);
    assert!(hold > CHARGED);

    let admin = Client::with_bearer(&stack.url, &stack.admin_token);
    // Who may refund: only the admin token.
    let anonymous = refund(&Client::new(&stack.url), Some("k0"), &id, 1);
    assert_eq!(
        (anonymous.status, anonymous.code()),
        (401, "unauthenticated")
    );
    assert_eq!(refund(&u, Some("k0"), &id, 1).status, 401);
    let wrong = refund(
        &Client::with_bearer(&stack.url, "not-the-admin"),
        Some("k0"),
        &id,
        1,
    );
    assert_eq!((wrong.status, wrong.code()), (403, "forbidden"));
    // Bad requests, each refused by name, with nothing moved.
    assert_eq!(
        refund(&admin, None, &id, 1).code(),
        "missing_idempotency_key"
    );
    let unknown = refund(&admin, Some("k1"), &"ab".repeat(16), 1);
    assert_eq!((unknown.status, unknown.code()), (404, "not_found"));
    let zero = refund(&admin, Some("k1"), &id, 0);
    assert_eq!(
        (zero.status, zero.json["error"]["details"]["field"].as_str()),
        (400, Some("amount_fen"))
    );
    let over = refund(&admin, Some("k1"), &id, CHARGED + 1);
    assert_eq!(
        (over.status, over.code()),
        (409, "refund_exceeds_capture"),
        "{:?}",
        over.json
    );
    assert_eq!(over.json["error"]["details"]["refundable_fen"], CHARGED);
    let open = refund(&admin, Some("k1"), &open_id, 1);
    assert_eq!((open.status, open.code()), (409, "not_settled"));
    assert_eq!(u.balance(), balance);
    assert!(refunds_in_ledger(&u).is_empty());

    // A partial refund: a ledger row of kind refund, referencing the job.
    let first = refund(&admin, Some("k1"), &id, 150);
    assert_eq!(first.status, 201, "{:?}", first.json);
    assert_eq!(
        (
            first.json["refunded_fen"].as_i64(),
            first.json["refundable_fen"].as_i64()
        ),
        (Some(150), Some(CHARGED - 150))
    );
    assert_eq!(u.balance(), balance + 150);
    let rows = refunds_in_ledger(&u);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (
            rows[0]["amount_fen"].as_i64(),
            rows[0]["reference"].as_str()
        ),
        (Some(150), Some(format!("job:{id}").as_str()))
    );

    // The same key again is the same refund, not a second one; reused for another, refused.
    let again = refund(&admin, Some("k1"), &id, 150);
    assert_eq!(
        (again.status, again.json["replayed"].as_bool()),
        (200, Some(true)),
        "{:?}",
        again.json
    );
    assert_eq!(
        refund(&admin, Some("k1"), &id, 10).code(),
        "idempotency_conflict"
    );
    assert_eq!(u.balance(), balance + 150);

    // What is left can be refunded, and not a fen more.
    let over = refund(&admin, Some("k2"), &id, CHARGED - 150 + 1);
    assert_eq!(over.code(), "refund_exceeds_capture");
    assert_eq!(refund(&admin, Some("k2"), &id, CHARGED - 150).status, 201);
    assert_eq!(
        refund(&admin, Some("k3"), &id, 1).code(),
        "refund_exceeds_capture"
    );
    assert_eq!(u.balance(), balance + CHARGED);
    assert_eq!(refunds_in_ledger(&u).len(), 2);
}
