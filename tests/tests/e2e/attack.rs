//! An outsider's attack on the running stack (`wrangler dev` with a fake backend that follows the
//! runner's contract), as SECURITY.md's threat model says it must hold:
//!
//! - other users' jobs, logs, metrics, checkpoints, experiments and ledgers;
//! - a job's token used on other jobs, and as a user's or the operator's token;
//! - money fields slipped into reports, sign-ups, redemptions and submissions;
//! - hostile strings (control characters, huge, unicode, script tags, SQL) in every field that is
//!   stored or rendered, checked in the API's answers and in the page headless Chromium renders;
//! - malformed and oversized bodies on every route that takes one;
//! - a squatter's sign-up with a victim's email, and password guesses through the password change;
//! - concurrent redemptions, submissions with one key, and cancel/report/reconcile on one job.
//!
//! Every answer is counted and checked against the edge's own `/api/openapi.json` (the schema of
//! that route and status, or the error shape). The suite fails on any 5xx, on any answer off
//! that contract, and on any broken money invariant (a
//! balance that is not its ledger's sum or is negative, a job whose ledger entries do not add up
//! to its hold while it lives or to its charge once it ended), and prints the figures:
//! `attack: N probes, M answers 5xx, C answers off the documented contract, K money invariants
//! broken`.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

mod accounts;
mod artifacts;
mod attack_support;
mod inputs;
mod job_writes;
use attack_support::{in_the_browser, races};
use inputs::{dataset_escapes, hostile_strings, malformed_bodies};

use onramp_tests::api::{Answer, Client, unique_email};
use onramp_tests::fake_backend::{Fake, start_fake};
use onramp_tests::stack::{Stack, StackExtras, StackOptions, random_hex};
use onramp_tests::webdriver::Browser;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const PASSWORD: &str = "correct horse battery";
const LORA: &str = include_str!("../../../jobspec/specs/7b-lora-4090.toml");
const WAIT: Duration = Duration::from_secs(30);

/// Strings an attacker tries in every text field.
fn hostile() -> Vec<String> {
    vec![
        "\u{0}".into(),
        "bell\u{7}".into(),
        "line\nbreak".into(),
        "carriage\rreturn".into(),
        "rtl\u{202e}gpj.exe".into(),
        "zero\u{200b}width".into(),
        "<script>window.__pwned=1</script>".into(),
        "\"><img src=x onerror=\"window.__pwned=1\">".into(),
        "'; DROP TABLE jobs; --".into(),
        "Robert'); DELETE FROM ledger; --".into(),
        "😀".repeat(300),
        "\u{ffff}\u{fffe}".into(),
        "x".repeat(70_000),
        "%00%0a$(id)`id`".into(),
        "{{7*7}}${7*7}".into(),
        "../../../../etc/passwd".into(),
    ]
}

/// Counts every answer, and keeps every 5xx and every broken invariant to report.
struct World {
    stack: Stack,
    fake: Arc<Mutex<Fake>>,
    probes: AtomicUsize,
    server_errors: Mutex<Vec<String>>,
    off_contract: Mutex<Vec<String>>,
    broken: Mutex<Vec<String>>,
    /// The edge's own `/api/openapi.json`, which every answer is checked against.
    doc: Value,
    users: Mutex<Vec<Client>>,
}

impl World {
    /// Counts an answer; `what` starts with the request's method and path.
    fn see(&self, what: &str, a: Answer) -> Answer {
        self.probes.fetch_add(1, Ordering::Relaxed);
        self.conform(what, &a);
        if a.status >= 500 {
            let body: String = String::from_utf8_lossy(&a.bytes)
                .chars()
                .take(300)
                .collect();
            self.server_errors
                .lock()
                .unwrap()
                .push(format!("{what}: {} {body}", a.status));
        }
        a
    }

    /// Checks a JSON answer against what the live `/api/openapi.json` says the route answers
    /// with that status (or its error shape), and keeps any that does not match.
    fn conform(&self, what: &str, a: &Answer) {
        let mut words = what.split_whitespace();
        let (Some(method), Some(path)) = (words.next(), words.next()) else {
            return;
        };
        if a.json.is_null() {
            return; // not JSON: a checkpoint's bytes, or an empty answer
        }
        let path = path.split('?').next().unwrap_or(path);
        let op = &self.doc["paths"][route_template(path)][method.to_ascii_lowercase()];
        let responses = &op["responses"];
        let documented = responses
            .get(a.status.to_string())
            .unwrap_or(&responses["default"]);
        let schema = &documented["content"]["application/json"]["schema"];
        let schema = if schema.is_null() {
            // Not a route (or a method it does not take): the one error shape.
            &self.doc["components"]["schemas"]["ErrorEnvelope"]
        } else {
            schema
        };
        if let Err(e) = api::schema::check(&self.doc, schema, &a.json) {
            self.off_contract.lock().unwrap().push(format!(
                "{what}: {} {}: {e}",
                a.status,
                short(&a.json.to_string())
            ));
        }
    }

    fn get(&self, c: &Client, path: &str) -> Answer {
        self.see(&format!("GET {path}"), c.get(path))
    }

    fn post(&self, c: &Client, path: &str, body: &Value) -> Answer {
        let what = format!("POST {path} {}", short(&body.to_string()));
        self.see(&what, c.post(path, body))
    }

    fn raw(&self, c: &Client, method: &str, path: &str, body: Vec<u8>, ctype: &str) -> Answer {
        let what = format!("{method} {path} ({} raw bytes, {ctype})", body.len());
        self.see(
            &what,
            c.request(method, path, Some(body), &[("content-type", ctype)]),
        )
    }

    /// A signed-up user with its trial credit, remembered for the invariant check.
    fn user(&self, tag: &str) -> Client {
        let u = self.stack.signup(&unique_email(tag), PASSWORD);
        self.users.lock().unwrap().push(u.clone());
        u
    }

    fn admin(&self) -> Client {
        Client::with_bearer(&self.stack.url, &self.stack.admin_token)
    }

    /// Submits the LoRA template (optionally renamed) and returns the job and its report token.
    fn job(&self, u: &Client, name: Option<&str>) -> (String, String) {
        let spec = match name {
            Some(n) => LORA.replace(
                "name = \"qwen2.5-7b-lora-4090\"",
                &format!("name = {}", toml_string(n)),
            ),
            None => LORA.to_string(),
        };
        let a = self.see("POST /api/jobs", u.submit_spec(&spec, &random_hex(8)));
        assert_eq!(a.status, 201, "{:?}", a.json);
        let id = a.json["id"].as_str().unwrap().to_string();
        let token = self.fake.lock().unwrap().job(&id).unwrap().1.report_token;
        (id, token)
    }

    fn broke(&self, what: String) {
        self.broken.lock().unwrap().push(what);
    }

    /// Balance = ledger sum ≥ 0 for every user; each job's entries add up to minus its hold while
    /// it lives and minus its charge once it ended.
    fn check_money(&self) {
        let users = self.users.lock().unwrap().clone();
        for u in &users {
            let me = self.get(u, "/api/me").json;
            let ledger = self.get(u, "/api/ledger").json;
            let entries = ledger["entries"].as_array().cloned().unwrap_or_default();
            let sum: i64 = entries
                .iter()
                .filter_map(|e| e["amount_fen"].as_i64())
                .sum();
            let balance = me["balance_fen"].as_i64().unwrap_or(i64::MIN);
            if balance != sum || balance < 0 || ledger["balance_fen"].as_i64() != Some(balance) {
                self.broke(format!(
                    "{}: balance {balance}, ledger sum {sum}",
                    me["email"]
                ));
            }
            for job in self.get(u, "/api/jobs").json["jobs"]
                .as_array()
                .cloned()
                .unwrap_or_default()
            {
                let id = job["id"].as_str().unwrap_or("");
                let reference = format!("job:{id}");
                let mine: Vec<&Value> = entries
                    .iter()
                    .filter(|e| e["reference"] == reference)
                    .collect();
                let total: i64 = mine.iter().filter_map(|e| e["amount_fen"].as_i64()).sum();
                let count = |k: &str| mine.iter().filter(|e| e["kind"] == k).count();
                let hold = job["hold_fen"].as_i64().unwrap_or(0);
                let live = matches!(
                    job["state"].as_str(),
                    Some("dispatching" | "queued" | "running")
                );
                let want = if live {
                    -hold
                } else {
                    -job["charged_fen"].as_i64().unwrap_or(i64::MIN)
                };
                let refunds: i64 = mine
                    .iter()
                    .filter(|e| e["kind"] == "refund")
                    .filter_map(|e| e["amount_fen"].as_i64())
                    .sum();
                if total - refunds != want
                    || count("hold") != 1
                    || count("capture") > 1
                    || count("release") > 1
                {
                    self.broke(format!(
                        "job {id} ({}): entries {mine:?}, expected {want}",
                        job["state"]
                    ));
                }
                if let Some(c) = job["charged_fen"].as_i64()
                    && !(0..=hold).contains(&c)
                {
                    self.broke(format!("job {id}: charged {c} outside 0..={hold}"));
                }
            }
        }
    }
}

/// The document's path for a request path: the id segment of a job or an experiment is `{id}`,
/// an artifact's name `{name}`.
fn route_template(path: &str) -> String {
    let mut segs: Vec<&str> = path.split('/').collect();
    if segs.len() > 3 && matches!(segs[2], "jobs" | "experiments") {
        segs[3] = "{id}";
    }
    if segs.len() == 6 && segs[4] == "artifacts" {
        segs[5] = "{name}";
    }
    segs.join("/")
}

fn short(s: &str) -> String {
    s.chars().take(60).collect()
}

/// A TOML basic string holding `s` exactly.
fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

#[test]
#[ignore = "needs the built stack and Chromium: run through `cargo xtask test`"]
fn an_outsider_attacks_the_running_stack() {
    let secret = random_hex(16);
    let (fake_url, fake) = start_fake(secret.clone());
    let stack = Stack::start_with(
        StackOptions {
            with_runner: false,
            ..StackOptions::for_test("attack")
        },
        StackExtras {
            vars: vec![
                ("SIGNUP_GRANT_FEN".into(), "10000000".into()),
                ("REDEEM_LIMIT_PER_MIN".into(), "1000".into()),
            ],
            extra_backends: vec![json!({
                "name": "fake", "kind": "runner", "url": fake_url, "secret": secret,
                "cards": {"rtx-4090": 64}
            })],
        },
    )
    .expect("stack starts");
    let doc = Client::new(&stack.url).get("/api/openapi.json").json;
    assert!(doc["paths"].is_object(), "{doc}");
    let w = World {
        stack,
        fake,
        probes: AtomicUsize::new(0),
        server_errors: Mutex::new(Vec::new()),
        off_contract: Mutex::new(Vec::new()),
        broken: Mutex::new(Vec::new()),
        doc,
        users: Mutex::new(Vec::new()),
    };
    the_contract_check_catches_what_is_off_it(&w);

    accounts::other_users(&w);
    stolen_tokens(&w);
    job_writes::job_writes(&w);
    artifacts::artifacts(&w);
    accounts::accounts(&w);
    money_fields(&w);
    let rendered = hostile_strings(&w);
    malformed_bodies(&w);
    dataset_escapes(&w);
    races(&w);
    w.check_money();
    in_the_browser(&w, &rendered);
    w.check_money();

    let probes = w.probes.load(Ordering::Relaxed);
    let errors = w.server_errors.lock().unwrap().clone();
    let off = w.off_contract.lock().unwrap().clone();
    let broken = w.broken.lock().unwrap().clone();
    println!(
        "attack: {probes} probes, {} answers 5xx, {} answers off the documented contract, {} money invariants broken",
        errors.len(),
        off.len(),
        broken.len()
    );
    assert!(errors.is_empty(), "5xx answers: {errors:#?}");
    assert!(
        off.is_empty(),
        "answers that are not what /api/openapi.json says: {off:#?}"
    );
    assert!(broken.is_empty(), "money invariants broken: {broken:#?}");
}

/// The contract check itself catches an answer that is not what the document says.
fn the_contract_check_catches_what_is_off_it(w: &World) {
    let wrong = Answer {
        status: 200,
        json: json!({"email": 7}),
        bytes: Vec::new(),
        set_cookie: Vec::new(),
        retry_after: None,
        content_type: None,
        headers: Vec::new(),
    };
    w.conform("GET /api/me", &wrong);
    w.conform(&format!("GET /api/jobs/{}", "a".repeat(32)), &wrong);
    assert_eq!(
        w.off_contract.lock().unwrap().len(),
        2,
        "the check caught both"
    );
    w.off_contract.lock().unwrap().clear();
}

/// A job's token is good for reporting on that one job, and nothing else.
fn stolen_tokens(w: &World) {
    let a = w.user("tokens-a");
    let b = w.user("tokens-b");
    let (job_a, token_a) = w.job(&a, None);
    let (job_b, _) = w.job(&b, None);
    let (job_a2, _) = w.job(&a, None);
    let thief = Client::with_bearer(&w.stack.url, &token_a);
    for other in [&job_b, &job_a2] {
        let r = w.post(
            &thief,
            &format!("/api/jobs/{other}/report"),
            &json!({"state": "failed"}),
        );
        assert_eq!(r.status, 403, "{:?}", r.json);
        let r = w.raw(
            &thief,
            "POST",
            &format!("/api/jobs/{other}/log?offset=0"),
            b"x\n".to_vec(),
            "application/octet-stream",
        );
        assert_eq!(r.status, 403, "{:?}", r.json);
    }
    for path in [
        "/api/me",
        "/api/jobs",
        "/api/ledger",
        "/api/checkpoints",
        &format!("/api/jobs/{job_a}"),
    ] {
        assert_eq!(
            w.get(&thief, path).status,
            401,
            "a job token as a user token: {path}"
        );
    }
    assert_eq!(w.post(&thief, "/api/tokens", &json!({})).status, 401);
    assert_eq!(
        w.post(&thief, "/api/credits/redeem", &json!({"code": "X"}))
            .status,
        401
    );
    let api_token = w.post(&a, "/api/tokens", &json!({"name": "ci"})).json["token"]
        .as_str()
        .unwrap()
        .to_string();
    let user_token = Client::with_bearer(&w.stack.url, &api_token);
    for c in [&thief, &user_token, &a] {
        for path in [
            "/api/admin/health",
            "/api/admin/backends",
            "/api/admin/outbox?to=x@example.com",
        ] {
            let s = w.get(c, path).status;
            assert!(s == 401 || s == 403, "{path}: {s}");
        }
        for path in [
            "/api/admin/promo-codes",
            "/api/admin/reconcile",
            "/api/admin/refunds",
        ] {
            let s = w
                .post(
                    c,
                    path,
                    &json!({"code": "FREE", "amount_fen": 1_000_000, "max_redemptions": 9}),
                )
                .status;
            assert!(s == 401 || s == 403, "{path}: {s}");
        }
    }
    let admin_as_user = w.admin();
    assert_eq!(
        w.get(&admin_as_user, "/api/me").status,
        401,
        "the admin token is no user"
    );
    for bad in [
        "",
        "Bearer",
        &format!("bearer  {token_a}x"),
        &token_a.to_uppercase(),
    ] {
        let c = Client::with_bearer(&w.stack.url, bad);
        let s = w
            .post(&c, &format!("/api/jobs/{job_a}/report"), &json!({}))
            .status;
        assert!(s == 401 || s == 403, "{bad:?}: {s}");
    }
}

/// No amount a client or a job sends is ever used.
fn money_fields(w: &World) {
    let u = w.user("money");
    let before = w.get(&u, "/api/me").json["balance_fen"].as_i64().unwrap();
    let (job, token) = w.job(&u, None);
    let hold = before - w.get(&u, "/api/me").json["balance_fen"].as_i64().unwrap();
    let jt = Client::with_bearer(&w.stack.url, &token);
    let r = w.post(
        &jt,
        &format!("/api/jobs/{job}/report"),
        &json!({"state": "running", "charged_fen": -1_000_000, "hold_fen": 0, "amount_fen": 1_000_000,
                "balance_fen": 1e12, "capture_fen": 0, "price_fen_per_hour": 0, "user_id": "x"}),
    );
    assert!(r.status == 200 || r.status == 400, "{:?}", r.json);
    let j = w.get(&u, &format!("/api/jobs/{job}")).json;
    assert_eq!(
        (j["hold_fen"].as_i64(), j["charged_fen"].clone()),
        (Some(hold), Value::Null),
        "{j}"
    );
    // A sign-up that names its own balance gets nothing for it.
    let email = unique_email("rich");
    let s = w.post(
        &Client::new(&w.stack.url),
        "/api/auth/signup",
        &json!({"email": email, "password": PASSWORD, "balance_fen": 1_000_000_000, "email_verified": true}),
    );
    assert!(s.status == 201 || s.status == 400, "{:?}", s.json);
    if s.status == 201 {
        assert_eq!(s.json["balance_fen"], 0, "{:?}", s.json);
    }
    // A redemption that names an amount redeems what the code is worth, or nothing.
    let code = format!("ATK-{}", random_hex(4)).to_uppercase();
    let c = w.post(
        &w.admin(),
        "/api/admin/promo-codes",
        &json!({"code": code, "amount_fen": 5, "max_redemptions": 1}),
    );
    assert_eq!(c.status, 201, "{:?}", c.json);
    let mid = w.get(&u, "/api/me").json["balance_fen"].as_i64().unwrap();
    let r = w.post(
        &u,
        "/api/credits/redeem",
        &json!({"code": code, "amount_fen": 1_000_000}),
    );
    assert!(r.status == 200 || r.status == 400, "{:?}", r.json);
    let after = w.get(&u, "/api/me").json["balance_fen"].as_i64().unwrap();
    assert!(after == mid + 5 || after == mid, "{mid} → {after}");
    // A submission whose body names a hold holds what the spec costs.
    let a = w.see(
        "POST /api/jobs (a hold in the body)",
        u.request(
            "POST",
            "/api/jobs",
            Some(
                json!({"spec": LORA, "hold_fen": 0, "max_cost_fen": 1})
                    .to_string()
                    .into_bytes(),
            ),
            &[
                ("content-type", "application/json"),
                ("idempotency-key", &random_hex(8)),
            ],
        ),
    );
    assert_eq!(a.status, 201, "{:?}", a.json);
    assert_eq!(a.json["hold_fen"].as_i64(), Some(hold));
    // Refunds are the operator's.
    let r = w.post(
        &u,
        "/api/admin/refunds",
        &json!({"job_id": job, "amount_fen": 1_000_000, "reason": "x"}),
    );
    assert!(r.status == 401 || r.status == 403, "{:?}", r.json);
}
