//! The edge holds a real Slurm's auth/jwt key instead of a token: `BACKENDS` names the cluster
//! with `jwt_key` (the test Slurm's own `jwt.key`, base64) and no data parser, so the edge learns
//! the data parser from slurmrestd's `/openapi/v3` and mints a short-lived token for every call.
//! A tiny-train job is submitted, polled and settles through `wrangler dev` with no pasted token
//! anywhere; the admin's deep health check pings Slurm with a minted token, and a backend that
//! holds the wrong key is seen as unreachable (so the tokens really are checked).
//!
//! Needs root, the Slurm chroot (`cargo xtask setup`), the built stack and `../shared`: ignored
//! in a plain `cargo test`, run by `cargo xtask test`.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use onramp_tests::api::{Client, unique_email};
use onramp_tests::slurm::Slurm;
use onramp_tests::stack::{Stack, StackExtras, StackOptions, random_hex};
use onramp_tests::wait;
use serde_json::{Value, json};
use std::time::Duration;

const GRANT: i64 = 100_000;

#[test]
#[ignore = "needs root, the Slurm chroot, the built stack and ../shared: run through `cargo xtask test`"]
fn the_edge_mints_its_own_slurm_tokens() {
    let runner_dir = onramp_tests::paths::runner_bin()
        .parent()
        .unwrap()
        .to_path_buf();
    let slurm = Slurm::start_with_binds(
        0,
        &[
            (runner_dir, "/usr/local/bin".into()),
            (onramp_tests::paths::shared_dir(), "shared".into()),
        ],
    )
    .unwrap();
    let key = std::fs::read(slurm.host_path(&format!("{}/jwt.key", slurm.run_dir()))).unwrap();
    assert_eq!(key.len(), 32);
    let work_dir = slurm.job_dir("jwt").unwrap();
    let keyed = json!({
        "name": "hpc", "kind": "slurm", "url": slurm.url,
        "jwt_key": STANDARD.encode(&key), "user": slurm.user,
        "cards": {"cpu": 1}, "work_dir": work_dir, "cpus_per_task": 1,
        "env": {"ONRAMP_SHARED": format!("{}/shared", slurm.run_dir()), "RAYON_NUM_THREADS": "1"},
    });
    // The same cluster with another key: never picked for a job (it offers no CPU), only probed.
    let wrong = json!({
        "name": "wrong-key", "kind": "slurm", "url": slurm.url, "api_version": "v0.0.40",
        "jwt_key": STANDARD.encode([7u8; 32]), "user": slurm.user, "cards": {"rtx-4090": 1},
    });
    let stack = Stack::start_with(
        StackOptions {
            with_runner: false,
            ..StackOptions::for_test("slurm-jwt")
        },
        StackExtras {
            vars: vec![("SIGNUP_GRANT_FEN".into(), GRANT.to_string())],
            extra_backends: vec![keyed, wrong],
        },
    )
    .expect("stack starts");
    let logs = || {
        let edge = stack
            .edge
            .as_ref()
            .map(|e| e.log_tail(3000))
            .unwrap_or_default();
        format!("--- edge ---\n{edge}\n--- slurm ---\n{}", slurm.log_tail())
    };

    // The deep health check pings each backend with a token minted for the call.
    let health = Client::with_bearer(&stack.url, &stack.admin_token).get("/api/admin/health");
    let backend = |name: &str| {
        health.json["backends"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["name"] == name)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(
        backend("hpc")["reachable"],
        true,
        "{}\n{}",
        health.json,
        logs()
    );
    assert_eq!(backend("wrong-key")["reachable"], false, "{}", health.json);

    // A tiny-train job, start to end, with nothing but the key.
    let u = stack.signup(&unique_email("slurm-jwt"), "correct horse battery");
    let spec =
        onramp_tests::specs::tiny_train(10).replace("backend = \"runner\"", "backend = \"slurm\"");
    let a = u.submit_spec(&spec, &random_hex(8));
    assert_eq!(a.status, 201, "{}\n{}", a.json, logs());
    assert_eq!(a.json["backend"], "hpc", "{}", a.json);
    let id = a.json["id"].as_str().unwrap().to_string();
    let job = wait::until(&format!("job {id}"), Duration::from_secs(180), || {
        let j = u.get(&format!("/api/jobs/{id}")).json;
        if matches!(
            j["state"].as_str(),
            Some("dispatching" | "queued" | "running")
        ) {
            Err(format!("so far: {j}"))
        } else {
            Ok(Some(j))
        }
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", logs()));
    assert_eq!(job["state"], "succeeded", "{job}\n{}", logs());
    let charged = job["charged_fen"].as_i64().unwrap();
    assert!(
        (0..=a.json["hold_fen"].as_i64().unwrap()).contains(&charged),
        "{job}"
    );
    assert_eq!(u.balance(), GRANT - charged);
    let m = u.get(&format!("/api/jobs/{id}/metrics")).json;
    assert_eq!(
        m["metrics"]
            .as_array()
            .and_then(|p| p.last())
            .map(|p| p["step"].clone()),
        Some(json!(10)),
        "{m}"
    );
}
