//! `cargo xtask bench edge`: the edge's money routes under load against `wrangler dev` (the
//! built worker, real local D1 and Durable Objects), next to the trivial route measured in the
//! same run. For 8, 32 and 128 concurrent clients (one account each) it sends a fixed number of
//! requests to each route and prints requests per second and the p50/p99 latency, then the ratio
//! of each to `/api/health` (no storage) at the same concurrency, since absolute figures depend
//! on the machine and the ratios say what the storage behind a route costs.
//!
//! - sign-in: `POST /api/auth/login` (PBKDF2, a session row, two rate-limit objects and the
//!   login key's backoff object);
//! - balance: `GET /api/me` (the session, then the account's object);
//! - redeem: `POST /api/credits/redeem` of a code that every client redeems at the same time
//!   (the code's object, then each account's);
//! - submit: `POST /api/jobs` of the 7B LoRA starter spec to a fake backend on the runner's
//!   contract (validation, D1, the account's hold, the backend call).

use onramp_tests::api::{Answer, Client};
use onramp_tests::fake_backend::start_fake;
use onramp_tests::stack::{Stack, StackExtras, StackOptions, random_hex};
use serde_json::json;
use std::time::{Duration, Instant};

const CONCURRENCY: [usize; 3] = [8, 32, 128];
/// Requests per route and concurrency (each client sends its share, at least two).
const REQUESTS: usize = 256;
const PASSWORD: &str = "bench horse battery staple";
const LORA: &str = include_str!("../../jobspec/specs/7b-lora-4090.toml");

/// Runs the benchmark against the built worker and returns the lines to print.
/// The edge under `wrangler dev` with every limit out of the way and a fake backend that takes
/// any number of RTX 4090 jobs.
fn start_stack(fake_url: &str, secret: &str) -> Result<Stack, String> {
    let big = "1000000000".to_string();
    Stack::start_with(
        StackOptions {
            with_runner: false,
            ..StackOptions::for_test("bench-edge")
        },
        StackExtras {
            vars: vec![
                ("SIGNUP_LIMIT_PER_HOUR".into(), big.clone()),
                ("LOGIN_LIMIT_PER_15_MIN".into(), big.clone()),
                ("REDEEM_LIMIT_PER_MIN".into(), big.clone()),
                ("TRIAL_GRANTS_PER_HOUR".into(), big.clone()),
                ("SIGNUP_GRANT_FEN".into(), big),
            ],
            extra_backends: vec![json!({
                "name": "fake", "kind": "runner", "url": fake_url, "secret": secret,
                "cards": {"rtx-4090": 1_000_000}
            })],
        },
    )
    .map_err(|e| e.to_string())
}

pub fn run() -> Result<Vec<String>, String> {
    let secret = random_hex(16);
    let (fake_url, _fake) = start_fake(secret.clone());
    let stack = start_stack(&fake_url, &secret)?;
    let max = CONCURRENCY.iter().copied().max().unwrap_or(1);
    eprintln!("bench edge: {max} accounts…");
    let users = accounts(&stack, max)?;
    let admin = Client::with_bearer(&stack.url, &stack.admin_token);
    let mut lines = vec![format!(
        "{:<8} {:>4} {:>9} {:>9} {:>9}   {:>9} {:>9} {:>9}   {:>6}",
        "route", "conc", "req/s", "p50 ms", "p99 ms", "÷health", "p50 ×", "p99 ×", "failed"
    )];
    let mut failures = Vec::new();
    for conc in CONCURRENCY {
        let clients = &users[..conc];
        let per_client = (REQUESTS / conc).max(2);
        let health = measure("health", clients, per_client, |c, _, _| {
            c.get("/api/health")
        })?;
        let codes = promo_codes(&admin, per_client, conc)?;
        let routes: Vec<(&str, Measured)> = vec![
            ("health", health.clone()),
            (
                "balance",
                measure("balance", clients, per_client, |c, _, _| c.get("/api/me"))?,
            ),
            (
                "redeem",
                measure("redeem", clients, per_client, |c, _, k| {
                    c.post("/api/credits/redeem", &json!({"code": codes[k]}))
                })?,
            ),
            (
                "submit",
                measure("submit", clients, per_client, |c, _, _| {
                    c.submit_spec(LORA, &random_hex(16))
                })?,
            ),
            (
                "sign-in",
                measure("sign-in", clients, per_client, |c, i, _| {
                    Client::new(&c.base).post(
                        "/api/auth/login",
                        &json!({"email": email(i), "password": PASSWORD}),
                    )
                })?,
            ),
        ];
        for (route, m) in routes {
            lines.push(format!(
                "{route:<8} {conc:>4} {:>9.1} {:>9.1} {:>9.1}   {:>9.2} {:>9.2} {:>9.2}   {:>6}",
                m.rps,
                m.p50_ms,
                m.p99_ms,
                m.rps / health.rps,
                m.p50_ms / health.p50_ms,
                m.p99_ms / health.p99_ms,
                m.failed,
            ));
            if let Some(f) = m.first_failure {
                failures.push(format!("{route} × {conc}: {} failed, first: {f}", m.failed));
            }
        }
    }
    lines.push(format!(
        "({REQUESTS} requests per route and concurrency, each client its own account; ÷health: \
         successful requests/s as a fraction of /api/health's, × its latency as a multiple)"
    ));
    lines.extend(failures);
    Ok(lines)
}

fn email(i: usize) -> String {
    format!("bench-{i}@example.cn")
}

/// `n` verified accounts, signed up a few at a time.
fn accounts(stack: &Stack, n: usize) -> Result<Vec<Client>, String> {
    let mut users = Vec::with_capacity(n);
    for chunk in (0..n).collect::<Vec<_>>().chunks(16) {
        let made: Vec<Client> = std::thread::scope(|s| {
            let hs: Vec<_> = chunk
                .iter()
                .map(|&i| s.spawn(move || stack.signup(&email(i), PASSWORD)))
                .collect();
            hs.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        if made.len() != chunk.len() {
            return Err("bench edge: a sign-up failed".into());
        }
        users.extend(made);
    }
    Ok(users)
}

/// One fresh code per round of redemptions, each redeemable by every client once.
fn promo_codes(admin: &Client, rounds: usize, clients: usize) -> Result<Vec<String>, String> {
    (0..rounds)
        .map(|_| {
            let code = format!("BENCH-{}", random_hex(8)).to_uppercase();
            let a = admin.post(
                "/api/admin/promo-codes",
                &json!({"code": code, "amount_fen": 1, "max_redemptions": clients}),
            );
            if a.status == 201 {
                Ok(code)
            } else {
                Err(format!("bench edge: creating a code: {:?}", a.json))
            }
        })
        .collect()
}

#[derive(Debug, Clone)]
struct Measured {
    /// Successful answers per second of wall time.
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
    /// Answers that were not the route's success, and the first of them.
    failed: usize,
    first_failure: Option<String>,
}

/// Each client (in its own thread) sends `per_client` requests one after another; the call gets
/// the client, its index and the request's round. Latencies are of successful answers; the
/// others are counted and the first is kept, to be printed.
fn measure(
    route: &str,
    clients: &[Client],
    per_client: usize,
    call: impl Fn(&Client, usize, usize) -> Answer + Sync,
) -> Result<Measured, String> {
    eprintln!("bench edge: {route} with {} clients…", clients.len());
    let started = Instant::now();
    type Outcome = (Vec<Duration>, Vec<String>);
    let results: Vec<Outcome> = std::thread::scope(|s| {
        let call = &call;
        let hs: Vec<_> = clients
            .iter()
            .enumerate()
            .map(|(i, c)| {
                s.spawn(move || {
                    let (mut took, mut failed) = (Vec::with_capacity(per_client), Vec::new());
                    for k in 0..per_client {
                        let t = Instant::now();
                        // The test client panics when the connection itself fails: count it.
                        let a = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            call(c, i, k)
                        }));
                        match a {
                            Ok(a) if (200..300).contains(&a.status) => took.push(t.elapsed()),
                            Ok(a) => failed.push(format!(
                                "{} {}",
                                a.status,
                                String::from_utf8_lossy(&a.bytes)
                            )),
                            Err(_) => failed.push("the connection failed".into()),
                        }
                    }
                    (took, failed)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| (Vec::new(), vec!["a client panicked".into()]))
            })
            .collect()
    });
    let wall = started.elapsed().as_secs_f64();
    let (mut all, mut failures) = (Vec::new(), Vec::new());
    for (took, failed) in results {
        all.extend(took);
        failures.extend(failed);
    }
    if all.is_empty() {
        return Err(format!(
            "bench edge: {route}: no request succeeded: {:?}",
            failures.first()
        ));
    }
    all.sort();
    let at = |q: usize| {
        let i = (all.len() * q / 100).min(all.len().saturating_sub(1));
        all.get(i).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    Ok(Measured {
        rps: all.len() as f64 / wall,
        p50_ms: at(50),
        p99_ms: at(99),
        failed: failures.len(),
        first_failure: failures.into_iter().next(),
    })
}
