//! `model-tiny`'s subcommands on clap, beside the run.c-compatible form that stays as run.c has it.

// Test helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used)]
#![cfg(not(target_arch = "wasm32"))]

use std::process::Command;

fn model_tiny(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_model-tiny"))
        .args(args)
        .env_remove("LLAMA2C_RUN")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn help_and_version_exit_zero() {
    for args in [
        &["--help"][..],
        &["-h"],
        &["train", "--help"],
        &["train", "-h"],
        &["bench", "--help"],
        &["random", "--help"],
    ] {
        let (code, out, err) = model_tiny(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(out.contains("Usage: model-tiny"), "{args:?}: {out}");
    }
    // The top-level help still shows run.c's form.
    let (_, out, _) = model_tiny(&["--help"]);
    assert!(out.contains("model-tiny <checkpoint> [options]"), "{out}");
    let (_, out, _) = model_tiny(&["train", "--help"]);
    assert!(
        out.contains("--batch-size <N>") && out.contains("[default: 8]"),
        "{out}"
    );
    let (code, out, _) = model_tiny(&["--version"]);
    assert_eq!(code, 0);
    assert_eq!(out, format!("model-tiny {}\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn usage_errors_exit_two_and_unreadable_files_three() {
    let (code, _, err) = model_tiny(&["train", "--data", "x.txt"]);
    assert_eq!(code, 2);
    assert!(err.contains("--tokenizer"), "{err}");
    let (code, _, err) = model_tiny(&["random", "--out", "/tmp/x", "--format", "v9"]);
    assert_eq!(code, 2);
    assert!(err.contains("v9"), "{err}");
    let (code, _, err) = model_tiny(&[
        "train",
        "--data",
        "no-such.txt",
        "--tokenizer",
        "no-such.bin",
    ]);
    assert_eq!(code, 3, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no-such.bin"), "{err}");
}

#[test]
fn run_c_form_is_unchanged() {
    // Like run.c: no arguments print the usage and fail.
    let (code, _, err) = model_tiny(&[]);
    assert_eq!(code, 1);
    assert!(
        err.contains("Usage:   model-tiny <checkpoint> [options]"),
        "{err}"
    );
}
