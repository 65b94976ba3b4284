//! Corrupt, truncated and mis-shaped files give an error that says what and where, never a
//! panic; every llama2.c format and our safetensors format round-trips.
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used)] // Test helpers may panic: a failure is the test failing.

use model_tiny::{Config, Error, Tokenizer, Weights, checkpoint, llama2c, load_weights};
use std::path::PathBuf;

fn shared(rel: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared")
        .join(rel);
    std::fs::read(p).unwrap()
}

fn message(e: Error) -> String {
    e.to_string()
}

fn small(shared_classifier: bool) -> Weights {
    let config = Config {
        dim: 16,
        hidden_dim: 40,
        n_layers: 2,
        n_heads: 4,
        n_kv_heads: 2,
        vocab_size: 32,
        seq_len: 8,
        shared_classifier,
        ..Config::stories260k()
    };
    Weights::random(config, 5).unwrap()
}

/// Version 2 (Q8_0) as llama2.c's export.py writes it, for the loader to read back.
fn export_v2(w: &Weights, group: usize) -> Vec<u8> {
    let c = &w.config;
    let mut out = Vec::new();
    out.extend_from_slice(&llama2c::MAGIC.to_le_bytes());
    out.extend_from_slice(&2i32.to_le_bytes());
    for x in [
        c.dim,
        c.hidden_dim,
        c.n_layers,
        c.n_heads,
        c.n_kv_heads,
        c.vocab_size,
        c.seq_len,
    ] {
        out.extend_from_slice(&(x as i32).to_le_bytes());
    }
    out.push(u8::from(c.shared_classifier));
    out.extend_from_slice(&(group as i32).to_le_bytes());
    out.resize(256, 0);
    let floats =
        |out: &mut Vec<u8>, xs: &[f32]| xs.iter().for_each(|x| out.extend(x.to_le_bytes()));
    w.layers
        .iter()
        .for_each(|l| floats(&mut out, &l.attention_norm));
    w.layers.iter().for_each(|l| floats(&mut out, &l.ffn_norm));
    floats(&mut out, &w.norm);
    let mut mats: Vec<&[f32]> = vec![&w.tok_embeddings];
    for pick in [
        |l: &model_tiny::weights::LayerWeights| l.wq.clone(),
        |l: &model_tiny::weights::LayerWeights| l.wk.clone(),
        |l: &model_tiny::weights::LayerWeights| l.wv.clone(),
        |l: &model_tiny::weights::LayerWeights| l.wo.clone(),
        |l: &model_tiny::weights::LayerWeights| l.w1.clone(),
        |l: &model_tiny::weights::LayerWeights| l.w2.clone(),
        |l: &model_tiny::weights::LayerWeights| l.w3.clone(),
    ] {
        for l in &w.layers {
            mats.push(Box::leak(pick(l).into_boxed_slice()));
        }
    }
    if let Some(o) = &w.output {
        mats.push(o);
    }
    for m in mats {
        let mut scales = Vec::new();
        for g in m.chunks(group) {
            let max = g.iter().fold(0.0f32, |a, x| a.max(x.abs()));
            let scale = max / 127.0;
            scales.push(scale);
            out.extend(g.iter().map(|x| (x / scale).round() as i8 as u8));
        }
        floats(&mut out, &scales);
    }
    out
}

#[test]
fn every_format_round_trips() {
    for shared_classifier in [true, false] {
        let w = small(shared_classifier);
        assert_eq!(load_weights(&llama2c::export_v0(&w).unwrap()).unwrap(), w);
        assert_eq!(load_weights(&llama2c::export_v1(&w).unwrap()).unwrap(), w);
        assert_eq!(
            load_weights(&checkpoint::save_model(&w).unwrap()).unwrap(),
            w
        );
        let q = load_weights(&export_v2(&w, 8)).unwrap();
        assert_eq!(q.config, w.config);
        let worst = q
            .tok_embeddings
            .iter()
            .zip(&w.tok_embeddings)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(worst < 1e-3, "Q8_0 error {worst}");
    }
    // The legacy header marks an unshared classifier with a negative vocabulary size.
    let v0 = llama2c::export_v0(&small(false)).unwrap();
    assert_eq!(i32::from_le_bytes(v0[20..24].try_into().unwrap()), -32);
}

#[test]
fn stories260k_has_grouped_kv_heads() {
    let w = load_weights(&shared("models/stories260K.bin")).unwrap();
    assert_eq!(w.config, Config::stories260k());
    assert_eq!(w.layers[0].wk.len(), 32 * 64);
    assert_eq!(w.config.n_params(), 260_032);
}

#[test]
fn truncated_checkpoint_says_expected_and_found_size() {
    let bytes = shared("models/stories260K.bin");
    let e = message(load_weights(&bytes[..bytes.len() - 100]).unwrap_err());
    assert!(e.contains("truncated"), "{e}");
    assert!(e.contains("expected 1056540 bytes"), "{e}");
    assert!(e.contains("found 1056440 bytes"), "{e}");
    let e = message(load_weights(&bytes[..10]).unwrap_err());
    assert!(e.contains("header"), "{e}");
    for cut in [0, 1, 27, 28, 29, 1000, 500_000] {
        assert!(load_weights(&bytes[..cut]).is_err());
    }
}

#[test]
fn bad_header_fields_are_named() {
    let mut bytes = shared("models/stories260K.bin");
    bytes[16..20].copy_from_slice(&3i32.to_le_bytes()); // n_kv_heads 3 does not divide 8 heads
    let e = message(load_weights(&bytes).unwrap_err());
    assert!(e.contains("n_kv_heads") && e.contains("found 3"), "{e}");
    bytes[16..20].copy_from_slice(&4i32.to_le_bytes());
    bytes[0..4].copy_from_slice(&(-64i32).to_le_bytes());
    let e = message(load_weights(&bytes).unwrap_err());
    assert!(e.contains("dim") && e.contains("positive"), "{e}");
    bytes[0..4].copy_from_slice(&i32::MAX.to_le_bytes());
    assert!(load_weights(&bytes).is_err());
    let mut v1 = llama2c::export_v1(&small(true)).unwrap();
    v1[4] = 9;
    let e = message(load_weights(&v1).unwrap_err());
    assert!(e.contains("version") && e.contains("found 9"), "{e}");
}

#[test]
fn non_finite_weights_are_rejected() {
    let mut bytes = llama2c::export_v1(&small(true)).unwrap();
    let at = bytes.len() - 8;
    bytes[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    let e = message(load_weights(&bytes).unwrap_err());
    assert!(e.contains("finite"), "{e}");
}

#[test]
fn safetensors_shape_and_name_errors() {
    let w = small(true);
    let mut other = small(true);
    other.config.shared_classifier = false;
    other.output = Some(vec![0.0; 32 * 16]);
    let bytes = checkpoint::save_model(&other).unwrap();
    // Told the classifier is shared, the file's extra tensor is an error, not silently ignored.
    let json = serde_json::to_string(&w.config).unwrap();
    let e = message(checkpoint::load_model(&bytes, Some(&json)).unwrap_err());
    assert!(e.contains("output.weight"), "{e}");
    let mut wrong = w.config;
    wrong.hidden_dim = 48;
    let json = serde_json::to_string(&wrong).unwrap();
    let e = message(
        checkpoint::load_model(&checkpoint::save_model(&w).unwrap(), Some(&json)).unwrap_err(),
    );
    assert!(
        e.contains("shape [48, 16]") && e.contains("shape [40, 16]"),
        "{e}"
    );
    let e = message(
        checkpoint::load_model(&checkpoint::save_model(&w).unwrap(), Some("{\"dim\": 1"))
            .unwrap_err(),
    );
    assert!(e.contains("config JSON"), "{e}");
    let bytes = checkpoint::save_model(&w).unwrap();
    assert!(load_weights(&bytes[..bytes.len() - 4]).is_err());
}

#[test]
fn tokenizer_errors() {
    let tok = shared("models/tok512.bin");
    let e = message(Tokenizer::from_bytes(&tok[..3000], 512).unwrap_err());
    assert!(
        e.contains("token") && e.contains("truncated") || e.contains("end of file"),
        "{e}"
    );
    let e = message(Tokenizer::from_bytes(&tok, 100).unwrap_err());
    assert!(e.contains("more bytes"), "{e}");
    let e = message(Tokenizer::from_bytes(&tok, 32000).unwrap_err());
    assert!(e.contains("token 512"), "{e}");
    assert_eq!(Tokenizer::from_bytes_all(&tok).unwrap().vocab_size(), 512);
    assert_eq!(
        Tokenizer::from_bytes_all(&shared("models/tokenizer.bin"))
            .unwrap()
            .vocab_size(),
        32000
    );
}

#[test]
fn tokenizer_encodes_like_run_c() {
    let tok = Tokenizer::from_bytes(&shared("models/tok512.bin"), 512).unwrap();
    let ids = tok.encode("Once upon a time", true, false);
    assert_eq!(ids[0], 1);
    let text: Vec<u8> = ids
        .windows(2)
        .flat_map(|w| tok.decode(w[0], w[1]).to_vec())
        .collect();
    assert_eq!(text, b"Once upon a time");
    // Code points missing from the vocabulary fall back to byte tokens <0xXX> (id = byte + 3).
    let ids = tok.encode("\u{4e16}", false, false);
    assert!(ids.ends_with(&[0xE4 + 3, 0xB8 + 3, 0x96 + 3]), "{ids:?}");
    assert_eq!(tok.encode("", true, true), vec![1, 2]);
}

#[test]
fn mutated_and_truncated_files_never_panic() {
    let mut rng = model_tiny::XorShift::new(99);
    let w = small(false);
    let files = [
        llama2c::export_v0(&w).unwrap(),
        llama2c::export_v1(&w).unwrap(),
        export_v2(&w, 8),
        checkpoint::save_model(&w).unwrap(),
    ];
    let tok = shared("models/tok512.bin");
    for _ in 0..300 {
        for f in files.iter().chain([&tok]) {
            let mut b = f.clone();
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(b.len().min(300));
                b[i] = rng.next_u32() as u8;
            }
            b.truncate(b.len() - rng.below(3) * rng.below(b.len() / 2 + 1));
            let _ = load_weights(&b);
            let _ = Tokenizer::from_bytes(&b, 512);
            let _ = Tokenizer::from_bytes_all(&b);
        }
    }
}

#[test]
fn huge_kv_cache_is_refused_before_allocating() {
    let config = Config {
        dim: 64,
        n_kv_heads: 4,
        seq_len: 1 << 20,
        ..small(true).config
    };
    let w = Weights::random(config, 1).unwrap();
    let mut v1 = llama2c::export_v1(&w).unwrap();
    // A v1 file's size does not depend on seq_len: only the header says 2^24 positions.
    v1[32..36].copy_from_slice(&(1i32 << 24).to_le_bytes());
    let e = message(load_weights(&v1).unwrap_err());
    assert!(e.contains("KV cache"), "{e}");
    v1.truncate(100);
    assert!(load_weights(&v1).is_err());
}

#[test]
fn numbers_whose_products_pass_u64_are_refused() {
    // 2^24 layers of exactly 2^40 parameters: in u64 the count wraps to a small one.
    let config = Config {
        dim: 32768,
        hidden_dim: 11_162_922,
        n_layers: 1 << 24,
        n_heads: 512,
        n_kv_heads: 1,
        vocab_size: 3,
        seq_len: 1,
        shared_classifier: true,
        ..Config::stories260k()
    };
    let e = message(config.validate().unwrap_err());
    assert!(e.contains("parameter count"), "{e}");
    assert!(config.n_params() as u64 > 1 << 40, "{}", config.n_params());
}

#[test]
fn a_long_context_takes_memory_only_for_the_positions_used() {
    // 2^24 positions: a cache allocated up front would be 2 GiB here, and the RoPE table 256 MiB.
    let config = Config {
        seq_len: 1 << 24,
        ..small(true).config
    };
    let w = Weights::random(config, 3).unwrap();
    let mut long = model_tiny::Transformer::new(&w);
    let short_config = Config {
        seq_len: 8,
        ..config
    };
    let mut short = model_tiny::Transformer::new(&Weights {
        config: short_config,
        ..w.clone()
    });
    for (pos, token) in [1u32, 5, 9, 2, 30, 7, 7, 11].into_iter().enumerate() {
        let a = long.forward(token, pos).unwrap().to_vec();
        assert_eq!(a, short.forward(token, pos).unwrap(), "position {pos}");
    }
}

#[test]
fn hf_weights_that_are_not_finite_or_are_in_two_shards_are_refused() {
    use model_tiny::hf;
    let w = small(false);
    let (config, st) = hf::save(&w).unwrap();
    let mut bad = w.clone();
    bad.layers[1].w2[3] = f32::NAN;
    let (_, nan) = hf::save(&bad).unwrap();
    let e = message(hf::load(config.as_bytes(), &nan).unwrap_err());
    assert!(
        e.contains("model.layers.1.mlp.down_proj.weight element 3"),
        "{e}"
    );
    let e = message(hf::load_shards(config.as_bytes(), &[&st, &st]).unwrap_err());
    assert!(e.contains("two of the shards"), "{e}");
    assert!(hf::load(config.as_bytes(), &st).is_ok());
}
