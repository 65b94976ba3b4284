//! `onramp plan` end to end: the real binary on the spec corpus.

// Test helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used)]

use std::process::Command;

fn onramp(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_onramp"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../jobspec/specs"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
    )
}

#[test]
fn json_has_the_promised_shape() {
    let (code, out) = onramp(&["plan", "deepseek-7b-128k-mxc500.toml", "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for key in [
        "diagnostics",
        "parameters",
        "memory",
        "time",
        "cost",
        "cards",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    for key in ["total", "trainable", "largest_layer"] {
        assert!(v["parameters"][key].is_u64(), "parameters.{key}");
    }
    for key in [
        "params_bytes",
        "grads_bytes",
        "optimizer_bytes",
        "activations_bytes",
        "buffers_bytes",
        "model_states_bytes",
        "total_bytes",
    ] {
        assert!(v["memory"]["per_gpu"][key].is_u64(), "memory.per_gpu.{key}");
    }
    assert!(v["memory"]["card_bytes"].is_u64());
    assert!(v["memory"]["fits"].is_boolean());
    for key in ["flops", "seconds", "mfu"] {
        assert!(v["time"][key].is_number(), "time.{key}");
    }
    assert!(v["cost"]["card_hours"].is_number());
    assert!(v["cost"]["fen"].is_u64());
    assert_eq!(v["cards"].as_array().unwrap().len(), 9);
    let d = &v["diagnostics"][0];
    for key in ["severity", "code", "message", "line", "column"] {
        assert!(d.get(key).is_some(), "diagnostics[0].{key}");
    }
}

#[test]
fn errors_exit_non_zero() {
    let (code, out) = onramp(&["plan", "errors-typos.toml"]);
    assert_eq!(code, 1);
    assert!(
        out.starts_with("errors-typos.toml:3:8: error[bad-value]"),
        "{out}"
    );
    let (code, _) = onramp(&["plan", "7b-full-4090.toml", "--json"]);
    assert_eq!(code, 1, "does not fit is an error");
    let (code, _) = onramp(&["plan", "seed-claim-1.2t-30h.toml"]);
    assert_eq!(code, 1, "physically impossible is an error");
    let (code, _) = onramp(&["plan", "no-such-file.toml"]);
    assert_eq!(code, 2);
    let (code, _) = onramp(&[]);
    assert_eq!(code, 2);
}

#[test]
fn text_report_in_chinese() {
    let (code, out) = onramp(&[
        "plan",
        "7b-lora-4090.toml",
        "--lang",
        "zh",
        "--no-artifacts",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("每卡显存"), "{out}");
    assert!(out.contains("放得下"), "{out}");
    assert!(!out.contains("#SBATCH"));
}

#[test]
fn full_report_has_artifacts() {
    let (code, out) = onramp(&["plan", "7b-sft-zero3-8xa100.toml"]);
    assert_eq!(code, 0);
    for needle in [
        "ds_config.json:",
        "deepspeed --num_gpus 8",
        "torchrun",
        "#SBATCH --gres=gpu:8",
        "srun torchrun",
    ] {
        assert!(out.contains(needle), "missing {needle}");
    }
}

#[test]
fn templates_and_schema() {
    let (code, out) = onramp(&["templates"]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 4);
    let (code, out) = onramp(&["schema"]);
    assert_eq!(code, 0);
    let schema: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(schema["properties"]["train"].is_object());
}
