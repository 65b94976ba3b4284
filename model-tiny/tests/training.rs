//! Training: the candle model agrees with the fast path, the loss falls on tinyshakespeare, and a
//! checkpoint written by training resumes and loads back for inference.
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used)] // Test helpers may panic: a failure is the test failing.

use candle_core::{Device, Tensor};
use model_tiny::model::CandleModel;
use model_tiny::train::{TrainConfig, Trainer, encode_corpus};
use model_tiny::{
    Config, SamplerConfig, Tokenizer, Transformer, Weights, generate_text, load_weights,
};
use std::path::PathBuf;

fn shared(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared")
        .join(rel)
}

fn tok512() -> Tokenizer {
    Tokenizer::from_bytes(&std::fs::read(shared("models/tok512.bin")).unwrap(), 512).unwrap()
}

fn shakespeare(chars: usize) -> Vec<u32> {
    let text = std::fs::read_to_string(shared("data/tinyshakespeare.txt")).unwrap();
    let end = text
        .char_indices()
        .nth(chars)
        .map_or(text.len(), |(i, _)| i);
    encode_corpus(&tok512(), &text[..end])
}

#[test]
fn candle_forward_matches_fast_forward_on_stories260k() {
    let w = load_weights(&std::fs::read(shared("models/stories260K.bin")).unwrap()).unwrap();
    let tokens: Vec<u32> = vec![1, 403, 407, 261, 378, 432, 383, 286, 261, 376];
    let model = CandleModel::from_weights(&w, &Device::Cpu).unwrap();
    let input = Tensor::from_vec(tokens.clone(), (1, tokens.len()), &Device::Cpu).unwrap();
    let logits = model.forward(&input).unwrap();
    let mut fast = Transformer::new(&w);
    for (pos, t) in tokens.iter().enumerate() {
        let want = fast.forward(*t, pos).unwrap().to_vec();
        let got = logits
            .get(0)
            .unwrap()
            .get(pos)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        let worst = want
            .iter()
            .zip(&got)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(worst < 1e-3, "position {pos}: max difference {worst}");
    }
}

fn tiny_config() -> Config {
    Config {
        dim: 64,
        hidden_dim: 172,
        n_layers: 2,
        n_heads: 8,
        n_kv_heads: 4,
        vocab_size: 512,
        seq_len: 64,
        shared_classifier: true,
        ..Config::stories260k()
    }
}

#[test]
fn loss_falls_on_tinyshakespeare_from_scratch() {
    let tokens = shakespeare(60_000);
    let cfg = TrainConfig {
        steps: 40,
        batch_size: 8,
        seq_len: 64,
        learning_rate: 3e-3,
        warmup_steps: 5,
        eval_every: 40,
        log_every: 1,
        ..TrainConfig::default()
    };
    let w = Weights::random(tiny_config(), 7).unwrap();
    let mut trainer = Trainer::new(&w, &tokens, cfg).unwrap();
    let initial = trainer.val_loss().unwrap().unwrap();
    let mut lines = Vec::new();
    trainer
        .run(None, &mut |m| {
            lines.push(m.clone());
            Ok(())
        })
        .unwrap();
    assert_eq!(lines.len(), 40);
    let last = lines.last().unwrap();
    let val = last.val_loss.unwrap();
    assert!(val < initial - 1.0, "validation loss {initial} -> {val}");
    assert!(
        last.loss < lines[0].loss - 1.0,
        "{} -> {}",
        lines[0].loss,
        last.loss
    );
    assert!(last.tokens_per_s > 0.0 && last.elapsed_s > 0.0);
    let json = serde_json::to_string(last).unwrap();
    for key in [
        "step",
        "loss",
        "val_loss",
        "lr",
        "tokens_per_s",
        "elapsed_s",
    ] {
        assert!(json.contains(&format!("\"{key}\"")), "{json}");
    }
}

#[test]
fn checkpoint_resumes_and_loads_for_inference() {
    let tokens = shakespeare(20_000);
    let dir = std::env::temp_dir().join(format!("model-tiny-ckpt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cfg = TrainConfig {
        steps: 6,
        batch_size: 2,
        seq_len: 32,
        checkpoint_every: 3,
        ..TrainConfig::default()
    };
    let w = Weights::random(tiny_config(), 3).unwrap();
    // One run of 6 steps, and one of 3 steps resumed for 3 more, end with the same weights.
    let mut straight = Trainer::new(&w, &tokens, cfg.clone()).unwrap();
    straight.run(None, &mut |_| Ok(())).unwrap();
    let half = TrainConfig {
        steps: 3,
        ..cfg.clone()
    };
    let mut first = Trainer::new(&w, &tokens, half).unwrap();
    first.run(Some(&dir), &mut |_| Ok(())).unwrap();
    assert!(Trainer::can_resume(&dir));
    let mut resumed = Trainer::resume(&dir, &tokens, cfg).unwrap();
    assert_eq!(resumed.step_count(), 3);
    resumed.run(Some(&dir), &mut |_| Ok(())).unwrap();
    let (a, b) = (straight.weights().unwrap(), resumed.weights().unwrap());
    let worst = a
        .tok_embeddings
        .iter()
        .zip(&b.tok_embeddings)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max);
    assert!(worst < 1e-5, "resumed run differs by {worst}");

    let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
    let loaded = load_weights(&bytes).unwrap();
    assert_eq!(loaded, b);
    let mut model = Transformer::new(&loaded);
    let greedy = SamplerConfig {
        temperature: 0.0,
        ..SamplerConfig::default()
    };
    let (_, ids) = generate_text(&mut model, &tok512(), "First", 20, greedy).unwrap();
    assert!(!ids.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Mean next-token loss of `weights` on `tokens` (one sequence).
fn loss_on(weights: &Weights, tokens: &[u32]) -> f32 {
    let model = CandleModel::from_weights(weights, &Device::Cpu).unwrap();
    let n = tokens.len() - 1;
    let x = Tensor::from_vec(tokens[..n].to_vec(), (1, n), &Device::Cpu).unwrap();
    let y = Tensor::from_vec(tokens[1..].to_vec(), (1, n), &Device::Cpu).unwrap();
    model.loss(&x, &y).unwrap().to_scalar::<f32>().unwrap()
}

#[test]
fn fine_tuning_stories260k_keeps_it_coherent() {
    let base = load_weights(&std::fs::read(shared("models/stories260K.bin")).unwrap()).unwrap();
    let tok = tok512();
    // A TinyStories text (run.c's own greedy story, so its loss starts very low, ~0.5 nats):
    // in-distribution for stories260K. Uniform guessing would be ln 512 = 6.2 nats.
    let story = std::fs::read_to_string(shared("fixtures/llama2c/noprompt_n200.txt")).unwrap();
    let story = tok.encode(&story, true, false);
    let tokens = shakespeare(60_000);
    let cfg = TrainConfig {
        steps: 10,
        batch_size: 4,
        seq_len: 128,
        learning_rate: 1e-4,
        min_lr: 1e-5,
        warmup_steps: 2,
        eval_every: 10,
        ..TrainConfig::default()
    };
    let mut trainer = Trainer::new(&base, &tokens, cfg).unwrap();
    let val_before = trainer.val_loss().unwrap().unwrap();
    trainer.run(None, &mut |_| Ok(())).unwrap();
    let val_after = trainer.val_loss().unwrap().unwrap();
    let tuned = trainer.weights().unwrap();
    assert!(
        val_after < val_before,
        "shakespeare loss {val_before} -> {val_after}"
    );
    let (story_before, story_after) = (loss_on(&base, &story), loss_on(&tuned, &story));
    assert!(
        story_after < story_before + 0.5,
        "story loss {story_before} -> {story_after}: fine-tuning broke the model"
    );
    let mut model = Transformer::new(&tuned);
    let greedy = SamplerConfig {
        temperature: 0.0,
        ..SamplerConfig::default()
    };
    let (text, _) = generate_text(&mut model, &tok, "Once upon a time", 80, greedy).unwrap();
    let text = String::from_utf8_lossy(&text).into_owned();
    let words: Vec<&str> = text.split_whitespace().collect();
    let common = [
        "the", "a", "was", "and", "to", "she", "he", "her", "it", "of", "in",
    ];
    let hits = words
        .iter()
        .filter(|w| {
            common.contains(
                &w.trim_matches(|c: char| !c.is_alphabetic())
                    .to_lowercase()
                    .as_str(),
            )
        })
        .count();
    assert!(hits >= 5, "not English-like any more: {text}");
}
