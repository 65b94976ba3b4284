//! Jobs and experiments against `wrangler dev`, with a fake backend served by this test (a tiny
//! HTTP server on a thread that follows the runner's contract): submission with idempotency,
//! holds and settlement, reports with the job's token, logs, metrics, cancel, checkpoint, the
//! reconcile sweep, a backend that is down (503, nothing charged), authorization between users,
//! and saved experiments.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use onramp_tests::api::{Answer, Client, run_scenarios, unique_email};
use onramp_tests::fake_backend::{Fake, FakeJob, LOG, LOST_NAME, SLOW_NAME, start_fake};
use onramp_tests::stack::{Stack, StackExtras, StackOptions, random_hex};
use serde_json::{Value, json};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

mod access;
mod dispatch;
mod ending;
mod owners;
use access::{authorization, report_url_is_configured};
use dispatch::submissions;
use ending::{cancel_against_the_sweep, resume_from};
use owners::{EXPERIMENT_BYTES, experiments};

/// How long the edge waits for a backend here (`BACKEND_TIMEOUT_S`): less than the fake stalls.
const EDGE_WAIT_S: f64 = 1.5;

const PASSWORD: &str = "correct horse battery";
const GRANT: i64 = 10_000;
const LORA: &str = include_str!("../../../jobspec/specs/7b-lora-4090.toml");
struct World {
    stack: Stack,
    fake: Arc<Mutex<Fake>>,
}

impl World {
    fn user(&self, tag: &str) -> Client {
        self.stack.signup(&unique_email(tag), PASSWORD)
    }

    /// The fake's record of an edge job.
    fn remote(&self, edge_id: &str) -> (String, FakeJob) {
        let f = self.fake.lock().expect("fake");
        let (id, job) = f
            .jobs
            .iter()
            .find(|(_, j)| j.edge_id == edge_id)
            .expect("job reached the fake backend");
        (id.clone(), job.clone())
    }

    fn report(&self, edge_id: &str, token: &str, body: Value) -> Answer {
        Client::with_bearer(&self.stack.url, token)
            .post(&format!("/api/jobs/{edge_id}/report"), &body)
    }
}

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn edge_jobs() {
    let secret = random_hex(16);
    let (fake_url, fake) = start_fake(secret.clone());
    // A port nothing listens on: the "down" backend.
    let down_port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let stack = Stack::start_with(
        StackOptions { with_runner: false, ..StackOptions::for_test("edge-jobs") },
        StackExtras {
            vars: vec![
                ("SIGNUP_LIMIT_PER_HOUR".into(), "1000".into()),
                ("SIGNUP_GRANT_FEN".into(), GRANT.to_string()),
                ("BACKEND_TIMEOUT_S".into(), EDGE_WAIT_S.to_string()),
                ("DISPATCH_GRACE_S".into(), "3".into()),
                ("TOKENS_PER_USER".into(), "3".into()),
                ("EXPERIMENTS_PER_USER".into(), "10".into()),
                ("EXPERIMENT_BYTES_PER_USER".into(), EXPERIMENT_BYTES.to_string()),
                ("METRICS_PER_JOB".into(), "5".into()),
            ],
            extra_backends: vec![
                json!({"name": "fake", "kind": "runner", "url": fake_url, "secret": secret, "cards": {"rtx-4090": 8, "cpu": 1}}),
                json!({"name": "down", "kind": "runner", "url": format!("http://127.0.0.1:{down_port}"), "secret": "x", "cards": {"rtx-3090": 8}}),
            ],
        },
    )
    .expect("stack starts");
    let world = World { stack, fake };
    run_scenarios(
        &world,
        &[
            (
                "submit, idempotency, reports, settle, logs, checkpoint",
                lifecycle,
            ),
            ("bad submissions are refused and hold nothing", refusals),
            (
                "a backend that is down: 503 and nothing charged",
                backend_down,
            ),
            ("cancel settles; a second cancel is refused", cancel),
            ("reconcile finishes silent jobs", reconcile),
            (
                "resume_from: only your own job that has ended, on its backend",
                resume_from,
            ),
            ("users cannot see or touch each other's jobs", authorization),
            (
                "a job's own word does not end its billing; an ended job's token writes nothing",
                claimed_end,
            ),
            (
                "a submission without an answer, or under a used key: never twice",
                submissions,
            ),
            (
                "per-account and per-job limits; labels that cannot be shown are refused",
                limits,
            ),
            (
                "report URLs come from PUBLIC_URL, never the request's Host",
                report_url_is_configured,
            ),
            (
                "experiments: immutable, unguessable, private, their owner's",
                experiments,
            ),
        ],
    );
    // Its sweeps finish every ended job of the stack: alone, so that it finishes no other
    // scenario's job under it.
    run_scenarios(
        &world,
        &[(
            "a cancel raced by the sweep ends with the user's words, settled once",
            cancel_against_the_sweep,
        )],
    );
}

fn lifecycle(w: &World) {
    let u = w.user("life");
    let key = random_hex(8);
    let a = u.submit_spec(LORA, &key);
    assert_eq!(a.status, 201, "{:?}", a.json);
    let id = a.json["id"].as_str().expect("id").to_string();
    assert_eq!(id.len(), 32);
    assert_eq!(a.json["state"], "running");
    assert_eq!(a.json["backend"], "fake");
    let hold = a.json["hold_fen"].as_i64().expect("hold");
    assert_eq!(hold, 200 * 24, "24 h × 1 RTX 4090 × 200 fen/h");
    assert_eq!(u.balance(), GRANT - hold);
    // The same key again is the same job, never a second one.
    let again = u.submit_spec(LORA, &key);
    assert_eq!(
        (again.status, again.json["id"].as_str()),
        (200, Some(id.as_str()))
    );
    assert_eq!(
        u.get("/api/jobs").json["jobs"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(u.balance(), GRANT - hold, "no second hold");

    let (_, remote) = w.remote(&id);
    assert_eq!(w.report(&id, "wrong-token", json!({})).status, 403);
    let r = w.report(
        &id,
        &remote.report_token,
        json!({"state": "running", "metrics": [
            {"step": 1, "loss": 2.5, "elapsed_s": 1.0, "tokens_per_s": 100.0},
            {"step": 2, "loss": 2.25, "val_loss": 2.4, "lr": 0.0002, "elapsed_s": 2.0}
        ]}),
    );
    assert_eq!(r.status, 200, "{:?}", r.json);
    assert_eq!(
        w.report(
            &id,
            &remote.report_token,
            json!({"metrics": [{"step": 3, "loss": "NaN", "elapsed_s": 1}]})
        )
        .status,
        400
    );
    let m = u.get(&format!("/api/jobs/{id}/metrics"));
    assert_eq!(
        m.json["metrics"].as_array().map(Vec::len),
        Some(2),
        "{:?}",
        m.json
    );
    assert_eq!(m.json["metrics"][1]["val_loss"], 2.4);
    let m = u.get(&format!("/api/jobs/{id}/metrics?since=2"));
    assert_eq!(m.json["metrics"].as_array().map(Vec::len), Some(1));
    assert_eq!(m.json["next_since"], 3);
    assert_eq!(
        u.get(&format!("/api/jobs/{id}/metrics?since=-1")).code(),
        "invalid_query"
    );

    let logs = u.get(&format!("/api/jobs/{id}/logs?offset=0"));
    assert_eq!(logs.status, 200, "{:?}", logs.json);
    assert_eq!(logs.json["text"], LOG);
    let logs = u.get(&format!("/api/jobs/{id}/logs?offset=17"));
    assert_eq!(logs.json["text"], "step 2 loss 2.25\n");

    {
        let mut f = w.fake.lock().expect("fake");
        let job = f.jobs.values_mut().find(|j| j.edge_id == id).expect("job");
        job.state = "succeeded".into();
        job.ended = true;
        job.checkpoint = true;
    }
    let r = w.report(
        &id,
        &remote.report_token,
        json!({"state": "succeeded", "message": "done"}),
    );
    assert_eq!(r.json["state"], "succeeded", "{:?}", r.json);
    let job = u.get(&format!("/api/jobs/{id}")).json;
    // The backend says it ran 36 s: 36 s × 200 fen/h = 2 fen.
    assert_eq!(job["charged_fen"], 2, "{job}");
    assert_eq!(job["state"], "succeeded");
    assert_eq!(u.balance(), GRANT - 2);
    let ledger = u.get("/api/ledger").json;
    let kinds: Vec<&str> = ledger["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["kind"].as_str().expect("kind"))
        .collect();
    assert_eq!(kinds, ["capture", "release", "hold", "grant"], "{ledger}");
    // A late or repeated terminal report changes nothing.
    w.report(&id, &remote.report_token, json!({"state": "failed"}));
    assert_eq!(u.get(&format!("/api/jobs/{id}")).json["state"], "succeeded");
    assert_eq!(u.balance(), GRANT - 2);

    let ck = u.get(&format!("/api/jobs/{id}/checkpoint"));
    assert_eq!(ck.status, 200);
    assert_eq!(ck.bytes, b"CHECKPOINT-BYTES");
    assert_eq!(ck.content_type.as_deref(), Some("application/octet-stream"));
    let list = u.get("/api/checkpoints").json;
    assert_eq!(list["checkpoints"][0]["job_id"], id.as_str(), "{list}");
}

fn refusals(w: &World) {
    let u = w.user("refuse");
    let a = u.request("POST", "/api/jobs", Some(LORA.as_bytes().to_vec()), &[]);
    assert_eq!((a.status, a.code()), (400, "missing_idempotency_key"));
    let a = u.submit_spec("name = \"x\"\ntask = \"lora\"\nmodle = 1\n", "k1");
    assert_eq!((a.status, a.code()), (422, "invalid_spec"));
    assert!(
        !a.json["error"]["details"]["diagnostics"]
            .as_array()
            .expect("diagnostics")
            .is_empty()
    );
    let a = u.submit_spec(
        &LORA.replace("time_limit = \"24h\"", "time_limit = \"72h\""),
        "k2",
    );
    assert_eq!(
        (a.status, a.code()),
        (402, "insufficient_credit"),
        "{:?}",
        a.json
    );
    let a = u.submit_spec(&LORA.replace("rtx-4090", "h100-80g"), "k3");
    assert_eq!((a.status, a.code()), (409, "no_backend"), "{:?}", a.json);
    let json_spec = u.request(
        "POST",
        "/api/jobs",
        Some(json!({"spec": LORA}).to_string().into_bytes()),
        &[
            ("content-type", "application/json"),
            ("idempotency-key", "k4"),
        ],
    );
    assert_eq!(
        json_spec.status, 201,
        "a JSON body carrying TOML: {:?}",
        json_spec.json
    );
    let big = format!("{LORA}\n#{}", "x".repeat(300 * 1024));
    assert_eq!(u.submit_spec(&big, "k5").status, 413);
    assert_eq!(
        u.get("/api/jobs").json["jobs"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(
        u.balance(),
        GRANT - 4800,
        "only the accepted job holds credit"
    );
}

fn backend_down(w: &World) {
    let u = w.user("down");
    let spec = LORA.replace("rtx-4090", "rtx-3090");
    let a = u.submit_spec(&spec, "down-1");
    assert_eq!(
        (a.status, a.code()),
        (503, "backend_unavailable"),
        "{:?}",
        a.json
    );
    assert_eq!(u.balance(), GRANT, "nothing charged");
    assert_eq!(
        u.get("/api/jobs").json["jobs"],
        json!([]),
        "no job left behind"
    );
    let ledger = u.get("/api/ledger").json;
    let sum: i64 = ledger["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["amount_fen"].as_i64().expect("n"))
        .sum();
    assert_eq!(sum, GRANT, "hold and release cancel out: {ledger}");
    // A retry with the same key tries again rather than returning a phantom job.
    assert_eq!(u.submit_spec(&spec, "down-1").status, 503);
}

fn cancel(w: &World) {
    let u = w.user("cancel");
    let a = u.submit_spec(LORA, "c1");
    let id = a.json["id"].as_str().expect("id").to_string();
    let c = u.post(&format!("/api/jobs/{id}/cancel"), &json!({}));
    assert_eq!(c.status, 200, "{:?}", c.json);
    assert_eq!(c.json["state"], "cancelled");
    let charged = c.json["charged_fen"].as_i64().expect("settled");
    assert_eq!(charged, 2, "36 s on the backend's clock: {:?}", c.json);
    assert_eq!(u.balance(), GRANT - charged);
    assert_eq!(w.remote(&id).1.state, "cancelled", "the backend was told");
    let again = u.post(&format!("/api/jobs/{id}/cancel"), &json!({}));
    assert_eq!((again.status, again.code()), (409, "already_finished"));
}

fn reconcile(w: &World) {
    let u = w.user("recon");
    let id = u.submit_spec(LORA, "r1").json["id"]
        .as_str()
        .expect("id")
        .to_string();
    {
        let mut f = w.fake.lock().expect("fake");
        let job = f.jobs.values_mut().find(|j| j.edge_id == id).expect("job");
        job.state = "failed".into();
        job.ended = true;
    }
    let user_try = u.post("/api/admin/reconcile", &json!({}));
    assert_eq!(user_try.status, 401);
    let admin = Client::with_bearer(&w.stack.url, &w.stack.admin_token);
    let r = admin.request("POST", "/api/admin/reconcile?silent_after_s=0", None, &[]);
    assert_eq!(r.status, 200, "{:?}", r.json);
    assert!(
        r.json["finished"].as_i64().expect("finished") >= 1,
        "{:?}",
        r.json
    );
    let job = u.get(&format!("/api/jobs/{id}")).json;
    assert_eq!(job["state"], "failed", "{job}");
    assert_eq!(job["charged_fen"], 2);
    assert_eq!(u.balance(), GRANT - 2);
}

/// Polls the job until `done` holds for it (the edge asks the backend while a page looks).
fn wait_job(u: &Client, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let job = u.get(&format!("/api/jobs/{id}")).json;
        if done(&job) {
            return job;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "job {id} never got there: {job}"
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

fn claimed_end(w: &World) {
    let u = w.user("claim");
    let a = u.submit_spec(LORA, "claim-1");
    let id = a.json["id"].as_str().expect("id").to_string();
    let hold = a.json["hold_fen"].as_i64().expect("hold");
    let (_, remote) = w.remote(&id);
    // The fake still says "running": the claim is kept, nothing settles, the hold stays.
    let r = w.report(&id, &remote.report_token, json!({"state": "succeeded"}));
    assert_eq!(
        (r.status, &r.json["state"]),
        (200, &json!("running")),
        "{:?}",
        r.json
    );
    let job = u.get(&format!("/api/jobs/{id}")).json;
    assert_eq!(job["state"], "running", "{job}");
    assert_eq!(job["charged_fen"], Value::Null);
    assert_eq!(
        u.balance(),
        GRANT - hold,
        "the hold stays while the job runs"
    );
    no_attempt_by_its_word(w, &u, &id, &remote.report_token);
    // The user can still stop it; then its token can write nothing more.
    let c = u.post(&format!("/api/jobs/{id}/cancel"), &json!({}));
    assert_eq!(
        (c.status, &c.json["state"]),
        (200, &json!("cancelled")),
        "{:?}",
        c.json
    );
    let token = Client::with_bearer(&w.stack.url, &remote.report_token);
    for body in [
        json!({"state": "succeeded"}),
        json!({"message": "still here"}),
        json!({"metrics": [{"step": 9, "loss": 1.0, "elapsed_s": 1.0}]}),
    ] {
        let r = token.post(&format!("/api/jobs/{id}/report"), &body);
        assert_eq!((r.status, r.code()), (409, "already_finished"), "{body}");
    }
    let log = token.request(
        "POST",
        &format!("/api/jobs/{id}/log?offset=0"),
        Some(b"late line\n".to_vec()),
        &[("content-type", "application/octet-stream")],
    );
    assert_eq!((log.status, log.code()), (409, "already_finished"));
    let job = u.get(&format!("/api/jobs/{id}")).json;
    assert_eq!(job["message"], "cancelled by the user", "{job}");

    // A claim the backend confirms a moment later settles by the backend's times.
    let id = u.submit_spec(LORA, "claim-2").json["id"]
        .as_str()
        .expect("id")
        .to_string();
    let (_, remote) = w.remote(&id);
    let r = w.report(
        &id,
        &remote.report_token,
        json!({"state": "failed", "message": "CUDA out of memory at step 3"}),
    );
    assert_eq!(r.json["state"], "running", "{:?}", r.json);
    {
        let mut f = w.fake.lock().expect("fake");
        let job = f.jobs.values_mut().find(|j| j.edge_id == id).expect("job");
        job.state = "failed".into();
        job.ended = true;
    }
    let job = wait_job(&u, &id, |j| j["state"] != "running");
    assert_eq!(job["state"], "failed", "{job}");
    assert_eq!(job["charged_fen"], 2, "36 s on the backend's clock: {job}");
    assert_eq!(
        job["message"], "CUDA out of memory at step 3",
        "the job's own words stay"
    );
}

/// A running job's word does not start another attempt (each has the whole time limit, and its
/// token counts from the newest one's start): the fake names none, so the first one still runs.
fn no_attempt_by_its_word(w: &World, u: &Client, id: &str, token: &str) {
    let r = w.report(id, token, json!({"state": "running", "attempt": 7}));
    assert_eq!(r.status, 200, "{:?}", r.json);
    let job = u.get(&format!("/api/jobs/{id}")).json;
    assert_eq!(
        (
            &job["state"],
            job["attempts"].as_array().map_or(0, Vec::len)
        ),
        (&json!("running"), 0),
        "{job}"
    );
}

fn limits(w: &World) {
    let u = w.user("limits");
    for n in 0..3 {
        let t = u.post(
            "/api/tokens",
            &json!({"name": format!("laptop {n} 笔记本")}),
        );
        assert_eq!(t.status, 201, "{:?}", t.json);
    }
    let t = u.post("/api/tokens", &json!({"name": "one more"}));
    assert_eq!((t.status, t.code()), (409, "limit_reached"), "{:?}", t.json);
    assert!(
        t.json["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains('3')
    );
    for (field, path, body) in [
        (
            "name",
            "/api/tokens",
            json!({"name": "evil\u{202e}gpj.exe"}),
        ),
        (
            "title",
            "/api/experiments",
            json!({"spec": LORA, "title": "a\nb"}),
        ),
    ] {
        let r = u.post(path, &body);
        assert_eq!(
            (r.status, r.code()),
            (400, "invalid_field"),
            "{path}: {:?}",
            r.json
        );
        assert_eq!(r.json["error"]["details"]["field"], field);
    }
    for n in 0..10 {
        let e = u.post(
            "/api/experiments",
            &json!({"spec": LORA, "title": format!("run {n}")}),
        );
        assert_eq!(e.status, 201, "{:?}", e.json);
    }
    let e = u.post("/api/experiments", &json!({"spec": LORA}));
    assert_eq!((e.status, e.code()), (409, "limit_reached"), "{:?}", e.json);

    // A job's token cannot fill the database with metric points.
    let id = u.submit_spec(LORA, "limits-1").json["id"]
        .as_str()
        .expect("id")
        .to_string();
    let (_, remote) = w.remote(&id);
    let points = |from: u64, n: u64| -> Value {
        (from..from + n)
            .map(|s| json!({"step": s, "loss": 1.0, "elapsed_s": 1.0}))
            .collect()
    };
    let r = w.report(&id, &remote.report_token, json!({"metrics": points(1, 5)}));
    assert_eq!(r.status, 200, "{:?}", r.json);
    let r = w.report(&id, &remote.report_token, json!({"metrics": points(6, 1)}));
    assert_eq!((r.status, r.code()), (409, "limit_reached"), "{:?}", r.json);
    let m = u.get(&format!("/api/jobs/{id}/metrics"));
    assert_eq!(m.json["metrics"].as_array().map(Vec::len), Some(5));
}
