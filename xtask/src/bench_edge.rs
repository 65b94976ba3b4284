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
pub fn run() -> Result<Vec<String>, String> {
    let secret = random_hex(16);
    let (fake_url, _fake) = start_fake(secret.clone());
    let big = "1000000000".to_string();
    let stack = Stack::start_with(
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
    )?;
    let max = CONCURRENCY.iter().copied().max().unwrap_or(1);
    eprintln!("bench edge: {max} accounts…");
    let users = accounts(&stack, max)?;
    let admin = Client::with_bearer(&stack.url, &stack.admin_token);
    let mut lines = vec![format!(
        "{:<8} {:>4} {:>9} {:>9} {:>9}   {:>9} {:>9} {:>9}",
        "route", "conc", "req/s", "p50 ms", "p99 ms", "÷health", "p50 ×", "p99 ×"
    )];
    for conc in CONCURRENCY {
        let clients = &users[..conc];
        let per_client = (REQUESTS / conc).max(2);
        let health = measure(clients, per_client, |c, _, _| c.get("/api/health"))?;
        let codes = promo_codes(&admin, per_client, conc)?;
        let routes: Vec<(&str, Measured)> = vec![
            ("health", health.clone()),
            (
                "sign-in",
                measure(clients, per_client, |c, i, _| {
                    Client::new(&c.base).post(
                        "/api/auth/login",
                        &json!({"email": email(i), "password": PASSWORD}),
                    )
                })?,
            ),
            (
                "balance",
                measure(clients, per_client, |c, _, _| c.get("/api/me"))?,
            ),
            (
                "redeem",
                measure(clients, per_client, |c, _, k| {
                    c.post("/api/credits/redeem", &json!({"code": codes[k]}))
                })?,
            ),
            (
                "submit",
                measure(clients, per_client, |c, _, _| {
                    c.submit_spec(LORA, &random_hex(16))
                })?,
            ),
        ];
        for (route, m) in routes {
            lines.push(format!(
                "{route:<8} {conc:>4} {:>9.1} {:>9.1} {:>9.1}   {:>9.2} {:>9.2} {:>9.2}",
                m.rps,
                m.p50_ms,
                m.p99_ms,
                m.rps / health.rps,
                m.p50_ms / health.p50_ms,
                m.p99_ms / health.p99_ms,
            ));
        }
    }
    lines.push(format!(
        "({REQUESTS} requests per route and concurrency, each client its own account; ÷health: \
         requests/s as a fraction of /api/health's, × its latency as a multiple; every answer was \
         the route's success)"
    ));
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
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
}

/// Each client (in its own thread) sends `per_client` requests one after another; the call gets
/// the client, its index and the request's round. Every answer must be a success.
fn measure(
    clients: &[Client],
    per_client: usize,
    call: impl Fn(&Client, usize, usize) -> Answer + Sync,
) -> Result<Measured, String> {
    let started = Instant::now();
    let results: Vec<Result<Vec<Duration>, String>> = std::thread::scope(|s| {
        let call = &call;
        let hs: Vec<_> = clients
            .iter()
            .enumerate()
            .map(|(i, c)| {
                s.spawn(move || {
                    let mut took = Vec::with_capacity(per_client);
                    for k in 0..per_client {
                        let t = Instant::now();
                        let a = call(c, i, k);
                        took.push(t.elapsed());
                        if !(200..300).contains(&a.status) {
                            return Err(format!("answer {}: {:?}", a.status, a.json));
                        }
                    }
                    Ok(took)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a client panicked".into())))
            .collect()
    });
    let wall = started.elapsed().as_secs_f64();
    let mut all = Vec::new();
    for r in results {
        all.extend(r?);
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
    })
}
