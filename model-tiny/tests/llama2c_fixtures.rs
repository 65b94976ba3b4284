//! The reference outputs of llama2.c's run.c, reproduced exactly by the fast inference path.
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used)] // Test helpers may panic: a failure is the test failing.

use model_tiny::{SamplerConfig, Tokenizer, Transformer, generate_text, load_weights};
use std::path::PathBuf;

fn shared(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared")
        .join(rel)
}

fn stories260k() -> (Transformer, Tokenizer) {
    let w = load_weights(&std::fs::read(shared("models/stories260K.bin")).unwrap()).unwrap();
    let t = Tokenizer::from_bytes(
        &std::fs::read(shared("models/tok512.bin")).unwrap(),
        w.config.vocab_size,
    )
    .unwrap();
    (Transformer::new(&w), t)
}

#[test]
fn greedy_no_prompt_matches_run_c() {
    let (mut model, tok) = stories260k();
    let greedy = SamplerConfig {
        temperature: 0.0,
        ..SamplerConfig::default()
    };
    let (text, ids) = generate_text(&mut model, &tok, "", 200, greedy).unwrap();
    let want_ids: Vec<u32> = std::fs::read_to_string(shared("fixtures/llama2c/noprompt_n200.ids"))
        .unwrap()
        .split_whitespace()
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(ids, want_ids);
    let mut want_text = std::fs::read(shared("fixtures/llama2c/noprompt_n200.txt")).unwrap();
    assert_eq!(want_text.pop(), Some(b'\n'));
    assert_eq!(
        String::from_utf8_lossy(&text),
        String::from_utf8_lossy(&want_text)
    );
}

#[derive(serde::Deserialize)]
struct Case {
    name: String,
    args: Vec<String>,
}

fn cases() -> Vec<Case> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/run_c");
    serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap()
}

fn fixture(name: &str) -> Vec<u8> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/run_c");
    std::fs::read(dir.join(format!("{name}.txt"))).unwrap()
}

/// Every case was produced by llama2.c's run.c (`run stories260K.bin -z tok512.bin ARGS`); the
/// library, driven with the same settings, prints the same bytes.
#[test]
fn sampling_cases_match_run_c_through_the_library() {
    for case in cases() {
        let (mut model, tok) = stories260k();
        let mut sampler = SamplerConfig::default();
        let (mut steps, mut prompt) = (256usize, String::new());
        for pair in case.args.chunks(2) {
            let v = &pair[1];
            match pair[0].as_str() {
                "-t" => sampler.temperature = v.parse().unwrap(),
                "-p" => sampler.topp = v.parse().unwrap(),
                "-s" => sampler.seed = v.parse::<i64>().unwrap() as u64,
                "-n" => steps = v.parse().unwrap(),
                "-i" => prompt = v.clone(),
                other => panic!("unexpected flag {other}"),
            }
        }
        let (mut text, _) = generate_text(&mut model, &tok, &prompt, steps, sampler).unwrap();
        text.push(b'\n');
        assert_eq!(
            String::from_utf8_lossy(&text),
            String::from_utf8_lossy(&fixture(&case.name)),
            "case {}",
            case.name
        );
    }
}

/// The binary is a drop-in for run.c: same arguments, same stdout.
#[test]
fn cli_matches_run_c() {
    for case in cases() {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_model-tiny"))
            .arg(shared("models/stories260K.bin"))
            .arg("-z")
            .arg(shared("models/tok512.bin"))
            .args(&case.args)
            .output()
            .unwrap();
        assert!(out.status.success(), "case {}: {:?}", case.name, out);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&fixture(&case.name)),
            "case {}",
            case.name
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with("achieved tok/s: "),
            "case {}: {err}",
            case.name
        );
    }
}
