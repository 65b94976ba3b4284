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
