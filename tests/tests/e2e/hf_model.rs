//! model-tiny reads Hugging Face Llama folders exactly as Transformers runs them: folders that
//! `save_pretrained` wrote (f32, bf16 and f16; tied and untied; another RMSNorm epsilon and RoPE
//! base; a Qwen2, a Llama with query, key and value biases, as onramp-train builds for
//! `qkv_bias = true`) with the SentencePiece-style `tokenizer.json` that onramp-train's models carry. The
//! tokenizer's ids of every text, and the greedy tokens after every prompt, equal the `tokenizers`
//! library's and Transformers' `generate` (`tests/scripts/hf_reference.py`).
//!
//! Needs the trainer's environment (`ONRAMP_PYTHON`, which `cargo xtask test` sets) and
//! `../shared`: ignored in a plain `cargo test`.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use model_tiny::{Generator, SamplerConfig, Tokenizer, Transformer};
use onramp_tests::paths::{repo_root, shared_dir};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

/// Loads one folder as the playground does: its config, weights and tokenizer.
pub fn load(folder: &Path) -> (Transformer, Tokenizer) {
    let read = |name: &str| std::fs::read(folder.join(name)).unwrap();
    let (weights, model) = model_tiny::hf::load(&read("config.json"), &read("model.safetensors"))
        .unwrap_or_else(|e| panic!("{}: {e}", folder.display()));
    let tokenizer = Tokenizer::from_hf_json(
        &read("tokenizer.json"),
        weights.config.vocab_size,
        &model.eos,
    )
    .unwrap();
    (Transformer::new(&weights), tokenizer)
}

/// The greedy tokens after `prompt`, at most `n`.
fn greedy(model: &mut Transformer, tokenizer: &Tokenizer, prompt: &str, n: usize) -> Vec<u32> {
    let greedy = SamplerConfig {
        temperature: 0.0,
        topp: 0.9,
        seed: 1,
    };
    Generator::new(model, tokenizer, prompt, 0, greedy)
        .map(|t| t.unwrap())
        .filter(|t| !t.from_prompt)
        .map(|t| t.id)
        .take(n)
        .collect()
}

#[test]
#[ignore = "needs the trainer's environment and ../shared: run through `cargo xtask test`"]
fn hugging_face_folders_generate_as_transformers_does() {
    let python = std::env::var("ONRAMP_PYTHON").expect("ONRAMP_PYTHON (cargo xtask test sets it)");
    let out = onramp_tests::stack::unique_temp_dir("hf-model");
    std::fs::create_dir_all(&out).unwrap();
    let status = Command::new(python)
        .arg(repo_root().join("tests/scripts/hf_reference.py"))
        .arg(&out)
        .arg(shared_dir())
        .env("PYTHONPATH", repo_root().join("trainer/src"))
        .status()
        .unwrap();
    assert!(status.success(), "hf_reference.py: {status}");
    let expected: Value =
        serde_json::from_slice(&std::fs::read(out.join("expected.json")).unwrap()).unwrap();
    let models = expected["models"].as_object().unwrap();
    assert_eq!(models.len(), 4);
    for (name, cases) in models {
        let (mut model, tokenizer) = load(&out.join(name));
        for (text, want) in expected["texts"].as_object().unwrap() {
            assert_eq!(
                tokenizer.encode(text, true, false),
                ids(want),
                "{name}: {text:?}"
            );
        }
        for case in cases.as_array().unwrap() {
            let prompt = case["prompt"].as_str().unwrap();
            let mut want = ids(&case["generated"]);
            // Transformers keeps the end-of-sequence token it stopped at; the generator stops.
            if want.last() == Some(&2) {
                want.pop();
            }
            let got = greedy(&mut model, &tokenizer, prompt, want.len().max(24));
            assert_eq!(got, want, "{name}: after {prompt:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}
