//! `onramp-runner`'s command line: clap's conventions for help, version and usage errors.

// Test helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used)]

use std::process::Command;

fn runner(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_onramp-runner"))
        .args(args)
        .env_remove("ONRAMP_RUNNER_SECRET")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn help_and_version_exit_zero_on_every_command() {
    for args in [
        &["--help"][..],
        &["-h"],
        &["tiny-train", "--help"],
        &["tiny-train", "-h"],
        &["help", "tiny-train"],
    ] {
        let (code, out, err) = runner(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(out.contains("Usage: onramp-runner"), "{args:?}: {out}");
    }
    let (code, out, _) = runner(&["--version"]);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        format!("onramp-runner {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn usage_errors_exit_two_and_name_the_mistake() {
    let (code, _, err) = runner(&["--frob"]);
    assert_eq!(code, 2);
    assert!(err.contains("--frob"), "{err}");
    let (code, _, err) = runner(&["tiny-train", "--model", "m"]);
    assert_eq!(code, 2);
    assert!(err.contains("--dataset"), "{err}");
    // Serving without the secret is refused before anything starts.
    let (code, _, err) = runner(&["--addr", "127.0.0.1:0"]);
    assert_eq!(code, 2);
    assert!(err.contains("ONRAMP_RUNNER_SECRET"), "{err}");
}

/// A tiny-train process runs with the allocator and thread-pool settings of
/// `tiny_train::TUNING` (it starts itself again with them, under the same pid), and a value the
/// caller set wins.
#[test]
fn tiny_train_runs_with_its_tuned_environment() {
    let dir = std::env::temp_dir().join(format!("onramp-runner-tuning-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let corpus = dir.join("corpus.txt");
    std::fs::write(
        &corpus,
        "Once upon a time there was a little cat. ".repeat(400),
    )
    .unwrap();
    let shared = std::env::var("ONRAMP_SHARED")
        .unwrap_or_else(|_| format!("{}/../../shared", env!("CARGO_MANIFEST_DIR")));
    let mut child = Command::new(env!("CARGO_BIN_EXE_onramp-runner"))
        .args(["tiny-train", "--model", "stories260K", "--dataset"])
        .arg(&corpus)
        .args(["--steps", "200", "--micro-batch", "2", "--seq-len", "32"])
        .args([
            "--lr", "1e-3", "--warmup", "1", "--assets", &shared, "--out",
        ])
        .arg(dir.join("out"))
        .env_remove("MIMALLOC_PURGE_DELAY")
        .env("CANDLE_BARRIER_POOL_SPIN_LIMIT", "7")
        .env_remove("ONRAMP_REPORT_URL")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let environ = format!("/proc/{}/environ", child.id());
    let wanted = [
        "MIMALLOC_PURGE_DELAY=-1",
        "CANDLE_BARRIER_POOL_SPIN_LIMIT=7",
    ];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let seen = loop {
        let vars: Vec<String> = std::fs::read(&environ)
            .unwrap_or_default()
            .split(|b| *b == 0)
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .collect();
        if wanted.iter().all(|w| vars.iter().any(|v| v == w)) {
            break true;
        }
        if child.try_wait().unwrap().is_some() || std::time::Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        seen,
        "tiny-train never ran with {wanted:?}; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
