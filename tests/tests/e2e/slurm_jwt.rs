//! The edge holds a real Slurm's auth/jwt key instead of a token: `BACKENDS` names the cluster
//! with `jwt_key` (the test Slurm's own `jwt.key`, base64) and no data parser, so the edge learns
//! the data parser from slurmrestd's `/openapi/v3` and mints a short-lived token for every call.
//! A tiny-train job is submitted, polled and settles through `wrangler dev` with no pasted token
//! anywhere, and a job sent to a backend that holds the wrong key is refused with nothing held
//! (so Slurm really checks the minted tokens; its ping answers without checking them).
//!
//! Needs root, the Slurm chroot (`cargo xtask setup`), the built stack and `../shared`: ignored
//! in a plain `cargo test`, run by `cargo xtask test`.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use onramp_tests::api::unique_email;
use onramp_tests::slurm::Slurm;
use onramp_tests::stack::{Stack, StackExtras, StackOptions, random_hex};
use onramp_tests::wait;
use serde_json::json;
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
    // The same cluster with another key: it alone offers a GPU, so a GPU job goes there.
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

    // Signed with the wrong key: Slurm refuses the call, the edge holds nothing.
    let gpu = "name = \"wrong-key\"\ntask = \"lora\"\nmodel = \"qwen2.5-7b\"\nbackend = \"slurm\"\n\
         [data]\ndataset = \"alpaca-zh\"\ntokens = 100000\nseq_len = 512\n\
         [train]\nsteps = 10\nmicro_batch = 1\nlr = 2e-4\nlora_rank = 8\n\
         [resources]\ncard = \"rtx-4090\"\ncards_per_node = 1\nnodes = 1\ntime_limit = \"1h\"\n";
    let refused = u.submit_spec(gpu, &random_hex(8));
    assert!(
        refused.status >= 400,
        "{} {}\n{}",
        refused.status,
        refused.json,
        logs()
    );
    eprintln!("with the wrong key: {} {}", refused.status, refused.json);
    let jobs = u.get("/api/jobs").json;
    let held: Vec<_> = jobs["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j["backend"] == "wrong-key" && j["state"] != "failed")
        .collect();
    assert!(held.is_empty(), "{jobs}");
    assert_eq!(u.balance(), GRANT - charged);
}
