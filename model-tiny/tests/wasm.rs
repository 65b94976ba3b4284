//! In the browser (headless Chromium via wasm-bindgen-test-runner): stories260K reproduces
//! run.c's tokens, a model-tiny safetensors checkpoint and a Hugging Face folder load and
//! generate, and the generation
//! speed is printed as `model-tiny wasm bench: ... tok/s` for `cargo xtask bench`.
#![cfg(target_arch = "wasm32")]
#![allow(clippy::unwrap_used)] // Test helpers may panic: a failure is the test failing.

use model_tiny::bench::{bench_sampler, tokens_per_s};
use model_tiny::{
    Config, SamplerConfig, Tokenizer, Transformer, Weights, checkpoint, generate_text, load_weights,
};
use wasm_bindgen_test::{console_log, wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

static MODEL: &[u8] = include_bytes!("../../../shared/models/stories260K.bin");
static TOKENIZER: &[u8] = include_bytes!("../../../shared/models/tok512.bin");
static IDS: &str = include_str!("../../../shared/fixtures/llama2c/noprompt_n200.ids");
static TEXT: &str = include_str!("../../../shared/fixtures/llama2c/noprompt_n200.txt");
static SEEDED: &str = include_str!("fixtures/run_c/t08_p09_s1337_prompt.txt");

fn greedy() -> SamplerConfig {
    SamplerConfig {
        temperature: 0.0,
        ..SamplerConfig::default()
    }
}

#[wasm_bindgen_test]
fn reproduces_run_c_greedy_tokens() {
    let weights = load_weights(MODEL).unwrap();
    let tok = Tokenizer::from_bytes(TOKENIZER, weights.config.vocab_size).unwrap();
    let mut model = Transformer::new(&weights);
    let (text, ids) = generate_text(&mut model, &tok, "", 200, greedy()).unwrap();
    let want: Vec<u32> = IDS.split_whitespace().map(|s| s.parse().unwrap()).collect();
    assert_eq!(ids, want);
    assert_eq!(
        String::from_utf8(text).unwrap(),
        TEXT.trim_end_matches('\n')
    );
}

#[wasm_bindgen_test]
fn reproduces_run_c_seeded_sampling() {
    let weights = load_weights(MODEL).unwrap();
    let tok = Tokenizer::from_bytes(TOKENIZER, weights.config.vocab_size).unwrap();
    let mut model = Transformer::new(&weights);
    let sampler = SamplerConfig {
        temperature: 0.8,
        topp: 0.9,
        seed: 1337,
    };
    let (text, _) = generate_text(&mut model, &tok, "One day, Lily", 200, sampler).unwrap();
    assert_eq!(
        String::from_utf8(text).unwrap(),
        SEEDED.trim_end_matches('\n')
    );
}

#[wasm_bindgen_test]
fn safetensors_checkpoint_loads_and_generates() {
    let config = Config {
        n_layers: 2,
        seq_len: 64,
        ..Config::stories260k()
    };
    let weights = Weights::random(config, 9).unwrap();
    let bytes = checkpoint::save_model(&weights).unwrap();
    let loaded = load_weights(&bytes).unwrap();
    assert_eq!(loaded, weights);
    let tok = Tokenizer::from_bytes(TOKENIZER, 512).unwrap();
    let mut model = Transformer::new(&loaded);
    let (_, ids) = generate_text(&mut model, &tok, "Once", 16, greedy()).unwrap();
    assert!(!ids.is_empty());
}

#[wasm_bindgen_test]
fn bench_stories260k_tokens_per_s() {
    let weights = load_weights(MODEL).unwrap();
    let now = || js_sys::Date::now() / 1000.0;
    let mut runs = Vec::new();
    for _ in 0..5 {
        let mut model = Transformer::new(&weights);
        runs.push(tokens_per_s(&mut model, 256, bench_sampler(false), &now).unwrap());
    }
    runs.sort_by(f64::total_cmp);
    console_log!(
        "model-tiny wasm bench: stories260K {:.1} tok/s (median of 5, 256 steps, greedy)",
        runs[2]
    );
    assert!(runs[2] > 0.0);
}

#[wasm_bindgen_test]
fn bench_random_15m_tokens_per_s() {
    let weights = model_tiny::bench::random_15m().unwrap();
    let now = || js_sys::Date::now() / 1000.0;
    let mut runs = Vec::new();
    let mut model = Transformer::new(&weights);
    drop(weights);
    for _ in 0..3 {
        runs.push(tokens_per_s(&mut model, 256, bench_sampler(true), &now).unwrap());
    }
    runs.sort_by(f64::total_cmp);
    console_log!(
        "model-tiny wasm bench: random-15M-shape {:.1} tok/s (median of 3, 256 steps, -t 1 -p 0 -s 42)",
        runs[1]
    );
    assert!(runs[1] > 0.0);
}

#[wasm_bindgen_test]
fn a_hugging_face_folder_loads_and_generates() {
    let config = Config {
        n_layers: 2,
        seq_len: 64,
        ..Config::stories260k()
    };
    let weights = Weights::random(config, 4).unwrap();
    let (json, bytes) = model_tiny::hf::save(&weights).unwrap();
    let (loaded, hf) = model_tiny::hf::load(json.as_bytes(), &bytes).unwrap();
    assert_eq!(loaded, weights);
    assert_eq!(hf.eos, [2]);
    let tok = Tokenizer::from_bytes(TOKENIZER, 512).unwrap();
    let (_, ids) =
        generate_text(&mut Transformer::new(&loaded), &tok, "Once", 16, greedy()).unwrap();
    assert!(!ids.is_empty());
}

/// The ~100M-parameter Llama the playground opens, loaded from the Hugging Face format. Release
/// builds only (`cargo xtask bench model`): a debug build would take minutes.
#[cfg(not(debug_assertions))]
#[wasm_bindgen_test]
fn bench_random_100m_hf_tokens_per_s() {
    let (json, bytes) = model_tiny::hf::save(&model_tiny::bench::random_100m().unwrap()).unwrap();
    let (weights, _) = model_tiny::hf::load(json.as_bytes(), &bytes).unwrap();
    drop(bytes);
    let mut model = Transformer::new(&weights);
    drop(weights);
    let now = || js_sys::Date::now() / 1000.0;
    let mut runs: Vec<f64> = (0..3)
        .map(|_| tokens_per_s(&mut model, 64, bench_sampler(true), &now).unwrap())
        .collect();
    runs.sort_by(f64::total_cmp);
    console_log!(
        "model-tiny wasm bench: random-100M-hf {:.1} tok/s (median of 3, 64 steps, -t 1 -p 0 -s 42)",
        runs[1]
    );
    assert!(runs[1] > 0.0);
}
