//! The Hugging Face reader and writer, on folders written here and by hand.

use super::*;

#[test]
fn the_query_rows_go_back_to_llama2cs_pairs() {
    // One head of 4 with 1 input: HF rows [p0.a, p1.a, p0.b, p1.b] → [p0.a, p0.b, p1.a, p1.b].
    assert_eq!(
        unpermute(&[0.0, 1.0, 2.0, 3.0], 1, 4, 1),
        vec![0.0, 2.0, 1.0, 3.0]
    );
    // Two heads: each permuted on its own.
    let w: Vec<f32> = (0..8).map(|x| x as f32).collect();
    assert_eq!(
        unpermute(&w, 2, 4, 1),
        vec![0.0, 2.0, 1.0, 3.0, 4.0, 6.0, 5.0, 7.0]
    );
}

#[test]
fn a_saved_folder_loads_back_to_the_same_weights() {
    for shared_classifier in [true, false] {
        let config = Config {
            n_layers: 2,
            shared_classifier,
            norm_eps: 1e-6,
            ..Config::stories260k()
        };
        let weights = Weights::random(config, 3).expect("random weights");
        let (json, bytes) = save(&weights).expect("saved");
        let (back, model) = load(json.as_bytes(), &bytes).expect("loaded");
        assert_eq!(back, weights);
        assert_eq!((model.bos, model.eos), (Some(1), vec![2]));
    }
}

fn llama(extra: &str) -> String {
    format!(
        r#"{{"model_type": "llama", "hidden_size": 64, "intermediate_size": 172,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 512, "max_position_embeddings": 64, "tie_word_embeddings": true,
        "rms_norm_eps": 1e-06, "bos_token_id": 1, "eos_token_id": [2, 7]{extra}}}"#
    )
}

#[test]
fn a_transformers_llama_config_reads_as_its_numbers() {
    let m = config(
        llama(r#", "rope_parameters": {"rope_theta": 500000.0, "rope_type": "default"}"#)
            .as_bytes(),
    )
    .expect("a Llama config");
    assert_eq!(
        (m.config.dim, m.config.n_kv_heads, m.config.seq_len),
        (64, 2, 64)
    );
    assert!(m.config.shared_classifier);
    assert_eq!((m.config.norm_eps, m.config.rope_theta), (1e-6, 500000.0));
    assert_eq!((m.bos, m.eos), (Some(1), vec![2, 7]));
    assert_eq!(
        config(llama("").as_bytes())
            .expect("older")
            .config
            .rope_theta,
        10000.0
    );
}

#[test]
fn what_the_playground_cannot_run_is_refused_by_its_key() {
    for (extra, key) in [
        (r#", "attention_bias": true"#, "attention_bias"),
        (r#", "hidden_act": "gelu""#, "hidden_act"),
        (
            r#", "rope_scaling": {"rope_type": "yarn", "factor": 4.0}"#,
            "rope_scaling.rope_type",
        ),
        (r#", "head_dim": 32"#, "head_dim"),
        (
            r#", "quantization_config": {"bits": 4}"#,
            "quantization_config",
        ),
    ] {
        let e = config(llama(extra).as_bytes())
            .expect_err(extra)
            .to_string();
        assert!(e.contains(key), "{extra}: {e}");
    }
    let mistral = llama("").replace("\"llama\"", "\"mistral\"");
    assert!(
        config(mistral.as_bytes())
            .expect_err("mistral")
            .to_string()
            .contains("model_type")
    );
    let windowed = llama(r#", "use_sliding_window": true"#).replace("\"llama\"", "\"qwen2\"");
    assert!(
        config(windowed.as_bytes())
            .expect_err("a sliding window")
            .to_string()
            .contains("use_sliding_window")
    );
    let short = llama("").replace("\"hidden_size\": 64,", "");
    assert!(
        config(short.as_bytes())
            .expect_err("missing")
            .to_string()
            .contains("hidden_size")
    );
}

/// Random weights of a Qwen2: a Llama with query, key and value biases.
fn qwen(seed: u64) -> Weights {
    let config = Config {
        n_layers: 2,
        norm_eps: 1e-6,
        ..Config::stories260k()
    };
    let mut w = Weights::random(config, seed).expect("random weights");
    let n = config.dim + 2 * config.kv_dim();
    let mut rng = crate::sampler::XorShift::new(seed + 7);
    for l in &mut w.layers {
        l.bqkv = Some(rng.normal_vec(n, 0.5));
    }
    w
}

#[test]
fn a_qwen2_folder_round_trips_with_its_biases() {
    let weights = qwen(5);
    let (json, bytes) = save(&weights).expect("saved");
    let doc: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (doc["model_type"].as_str(), doc.get("attention_bias")),
        (Some("qwen2"), None)
    );
    let (back, model) = load(json.as_bytes(), &bytes).expect("loaded");
    assert!(model.qkv_bias);
    assert_eq!(back, weights);
    // Without its biases the same file is another model: refused, naming the first one missing.
    let llama = json.replace("\"qwen2\"", "\"llama\"");
    let e = load(llama.as_bytes(), &bytes).expect_err("biases left over");
    assert!(e.to_string().contains("_proj.bias"), "{e}");
    let mut plain = weights.clone();
    for l in &mut plain.layers {
        l.bqkv = None;
    }
    let (json, stripped) = save(&plain).expect("saved");
    let e =
        load(json.replace("\"llama\"", "\"qwen2\"").as_bytes(), &stripped).expect_err("no biases");
    assert!(e.to_string().contains("q_proj.bias"), "{e}");
}

#[test]
fn the_biases_move_the_logits_and_zero_biases_do_not() {
    let logits = |w: &Weights| {
        let mut t = crate::Transformer::new(w);
        t.forward(1, 0).expect("a token").to_vec()
    };
    let biased = qwen(9);
    let mut zero = biased.clone();
    let mut none = biased.clone();
    for (z, n) in zero.layers.iter_mut().zip(&mut none.layers) {
        z.bqkv = z.bqkv.as_ref().map(|b| vec![0.0; b.len()]);
        n.bqkv = None;
    }
    assert_eq!(logits(&zero), logits(&none));
    assert_ne!(logits(&biased), logits(&none));
}

#[test]
fn training_and_checkpoints_refuse_what_would_lose_the_biases() {
    let w = qwen(11);
    let e = crate::checkpoint::save_model(&w).expect_err("a checkpoint");
    assert!(e.to_string().contains("biases"), "{e}");
    let e = crate::model::CandleModel::from_weights(&w, &candle_core::Device::Cpu)
        .err()
        .expect("training");
    assert!(e.to_string().contains("biases"), "{e}");
}
