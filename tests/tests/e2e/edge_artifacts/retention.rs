//! The cron sweep under `wrangler dev`, on a stack of its own whose retentions are seconds (the
//! other scenarios' files would go too): a stored artifact and a dataset upload never finished
//! stay while they are younger than the retention and go at the first sweep after it, their
//! bytes given back to the account's quotas; a file stored since stays.

use super::{MIB, World, data, sha256};
use onramp_tests::api::Client;
use onramp_tests::fake_backend::start_fake;
use onramp_tests::stack::{Stack, StackExtras, StackOptions, random_hex};
use serde_json::json;
use std::time::{Duration, Instant};

/// The retention this stack runs with: long enough that a file just stored is younger at the
/// first sweep even on a busy machine, short enough for a test.
const RETENTION_S: u64 = 15;

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn artifacts_and_unfinished_datasets_go_after_their_retention() {
    let secret = random_hex(16);
    let (fake_url, fake) = start_fake(secret.clone());
    let retention = format!("{RETENTION_S}s");
    let stack = Stack::start_with(
        StackOptions {
            with_runner: false,
            ..StackOptions::for_test("artifact-retention")
        },
        StackExtras {
            vars: vec![
                ("SIGNUP_GRANT_FEN".into(), "10000".into()),
                ("ARTIFACT_RETENTION".into(), retention.clone()),
                ("DATASET_UPLOAD_RETENTION".into(), retention),
            ],
            extra_backends: vec![
                json!({"name": "fake", "kind": "runner", "url": fake_url, "secret": secret, "cards": {"rtx-4090": 8}}),
            ],
        },
    )
    .expect("stack starts");
    let w = World { stack, fake };
    let j = w.job("retention");
    let owner = j.owner.clone();
    let log = data(MIB + 7, 3);
    // Before either is stored: how old they are at most.
    let stored = Instant::now();
    assert_eq!(j.start("log.txt", &log, None).status, 200);
    assert_eq!(j.part("log.txt", 1, &log).json["complete"], true);
    let declared = owner.post(
        "/api/datasets",
        &json!({"name": "d.jsonl", "size": 2 * MIB, "sha256": "4".repeat(64),
                "format": "chat", "examples": 10, "tokens": 100}),
    );
    assert_eq!(declared.status, 200, "{}", declared.shown());
    let dataset = format!("/api/datasets/{}", declared.json["id"].as_str().unwrap());

    let me = owner.get("/api/me");
    assert_eq!(me.json["artifacts"]["retention_days"], 1, "{}", me.shown());
    w.stack.run_scheduled("*/5 * * * *").unwrap();
    young(stored, "the first sweep", || {
        assert_eq!(j.download("log.txt", None).status, 200, "kept while young");
        assert_eq!(owner.get(&dataset).status, 200, "kept while young");
    });

    // Both go, each at the first sweep after its own retention.
    let deadline = stored + Duration::from_secs(RETENTION_S + 60);
    while used_bytes(&owner) != Some(0) || owner.get(&dataset).status != 404 {
        assert!(
            Instant::now() < deadline,
            "the sweep never deleted them: {}",
            owner.get("/api/me").shown()
        );
        w.stack.run_scheduled("*/5 * * * *").unwrap();
        std::thread::sleep(Duration::from_millis(500));
    }
    let list = owner.get(&format!("/api/jobs/{}/artifacts", j.id));
    assert_eq!(list.json["artifacts"], json!([]), "{}", list.shown());
    assert_eq!(list.json["used_bytes"], 0);
    assert_eq!(j.download("log.txt", None).status, 404);
    assert_eq!(
        owner.get(&dataset).status,
        404,
        "the unfinished upload went"
    );
    let datasets = owner.get("/api/datasets");
    assert_eq!(datasets.json["used_bytes"], 0, "{}", datasets.shown());

    // A file stored after the sweep is the job's again (its token still writes while it runs).
    let again = data(1000, 4);
    let stored_again = Instant::now();
    assert_eq!(j.start("log.txt", &again, None).status, 200);
    assert_eq!(j.part("log.txt", 1, &again).json["complete"], true);
    w.stack.run_scheduled("*/5 * * * *").unwrap();
    young(stored_again, "a sweep after it was stored again", || {
        let kept = j.download("log.txt", None);
        assert_eq!(sha256(&kept.bytes), sha256(&again), "{}", kept.shown());
    });
}

/// Runs `check` of files stored at `stored` if they are still younger than the retention (with
/// 3 s to spare); a machine so slow that they are not says so instead of failing.
fn young(stored: Instant, when: &str, check: impl FnOnce()) {
    if stored.elapsed() < Duration::from_secs(RETENTION_S - 3) {
        check();
    } else {
        eprintln!("retention: {when} came after the retention; nothing to check while young");
    }
}

/// The bytes the account's artifacts take, as `GET /api/me` shows them.
fn used_bytes(owner: &Client) -> Option<u64> {
    owner.get("/api/me").json["artifacts"]["used_bytes"].as_u64()
}
