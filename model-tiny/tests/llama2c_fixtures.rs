//! The reference outputs of llama2.c's run.c, reproduced exactly by the fast inference path.
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
