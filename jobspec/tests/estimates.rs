//! Estimator properties: DeepSpeed's figures reproduced through the whole pipeline, and the
//! directions every estimate must move in.

// Test helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used)]

use jobspec::estimate::{self, deepspeed_zero2, deepspeed_zero3};
use jobspec::{ValidSpec, validate_toml};

fn spec(model: &str, card: &str, cards: u32, nodes: u32, extra: &str) -> ValidSpec {
    let src = format!(
        "name = \"t\"\ntask = \"sft\"\nmodel = \"{model}\"\n[data]\ndataset = \"d\"\ntokens = 100000000\nseq_len = 2048\n\
         [resources]\ncard = \"{card}\"\ncards_per_node = {cards}\nnodes = {nodes}\n{extra}"
    );
    let (v, diags) = validate_toml(&src);
    v.unwrap_or_else(|| panic!("{src}\n{diags:#?}"))
}

/// For every model, stage 2/3, offload choice and cluster shape, the model-state bytes per GPU
/// equal what DeepSpeed's `estimate_zero2/3_model_states_mem_needs` return for the same inputs.
#[test]
fn model_states_equal_deepspeed() {
    let mut checked = 0;
    for m in jobspec::catalog::MODELS {
        for (cards, nodes) in [(1, 1), (2, 1), (8, 1), (8, 4)] {
            for (stage, opt, par) in [
                (2, "none", "none"),
                (2, "cpu", "none"),
                (3, "none", "none"),
                (3, "cpu", "none"),
                (3, "cpu", "cpu"),
                (3, "nvme", "nvme"),
            ] {
                let extra = format!(
                    "[parallel]\nzero_stage = {stage}\noffload_optimizer = \"{opt}\"\noffload_params = \"{par}\"\n"
                );
                let v = spec(m.id, "h100-80g", cards, nodes, &extra);
                let e = estimate::estimate(&v);
                let pc = e.parameters;
                let (per_node, n) = (u64::from(cards), u64::from(nodes));
                let ds = if stage == 2 {
                    deepspeed_zero2(pc.total, per_node, n, opt != "none")
                } else {
                    deepspeed_zero3(
                        pc.total,
                        pc.largest_layer,
                        per_node,
                        n,
                        opt != "none",
                        par != "none",
                    )
                };
                assert_eq!(
                    e.memory.per_gpu.model_states_bytes, ds.gpu_bytes,
                    "{} {cards}x{nodes} stage {stage} {opt}/{par}",
                    m.id
                );
                assert_eq!(e.memory.deepspeed_gpu_bytes, Some(ds.gpu_bytes));
                checked += 1;
            }
        }
    }
    assert_eq!(checked, jobspec::catalog::MODELS.len() * 4 * 6);
}

/// ZeRO-0 is the paper's 16 bytes per parameter; ZeRO-1 4Ψ + 12Ψ/N.
#[test]
fn zero_0_and_1_follow_the_paper() {
    let v = spec("llama-3-8b", "h100-80g", 8, 1, "");
    let e = estimate::estimate(&v);
    assert_eq!(e.memory.per_gpu.model_states_bytes, 16 * e.parameters.total);
    let v = spec(
        "llama-3-8b",
        "h100-80g",
        8,
        1,
        "[parallel]\nzero_stage = 1\n",
    );
    let e = estimate::estimate(&v);
    let p = e.parameters.total;
    assert_eq!(e.memory.per_gpu.model_states_bytes, 4 * p + 12 * p / 8);
}

#[test]
fn lora_counts_adapter_shapes() {
    let v = spec("qwen2.5-7b", "rtx-4090", 1, 1, "");
    let mut s = v.spec().clone();
    s.task = jobspec::spec::Task::Lora;
    s.train.lora_rank = Some(16);
    let (v, _) = jobspec::validate_spec(s);
    let pc = estimate::parameters(&v.unwrap());
    // 28 layers × 16 × [(3584+3584) q + (3584+512) k + (3584+512) v + (3584+3584) o].
    assert_eq!(pc.trainable, 10_092_544);
}

#[test]
fn activations_move_the_right_way() {
    let act = |extra: &str| {
        estimate::estimate(&spec("llama-3-8b", "h100-80g", 8, 1, extra))
            .memory
            .per_gpu
            .activations_bytes
    };
    let none = act("[train]\nflash_attention = false\n");
    let flash = act("[train]\nflash_attention = true\n");
    let full = act("[train]\ngrad_checkpointing = true\n");
    assert!(full < flash && flash < none, "{full} {flash} {none}");
    let sp = act("[parallel]\nsp = 8\n[train]\nflash_attention = true\n");
    assert_eq!(sp, flash / 8);
    // Korthikanti et al. Table 2, no parallelism: s·b·h·(34 + 5·a·s/h) per layer.
    let v = spec(
        "llama-3-8b",
        "h100-80g",
        1,
        1,
        "[train]\nflash_attention = false\n",
    );
    let per_layer = estimate::estimate(&v).memory.activations_per_layer_bytes;
    let (s, b, h, a) = (2048.0, 1.0, 4096.0, 32.0);
    assert_eq!(per_layer, (s * b * h * (34.0 + 5.0 * a * s / h)) as u64);
}

#[test]
fn cost_is_integer_fen_rounded_up() {
    let card = jobspec::catalog::card("a100-80g").unwrap();
    let price = card.price_fen_per_hour;
    assert_eq!(estimate::cost_fen(price, 8, 3600), 8 * price);
    assert_eq!(estimate::cost_fen(price, 1, 1), price.div_ceil(3600));
    assert_eq!(estimate::cost_fen(price, u32::MAX, u64::MAX), u64::MAX);
    let v = spec("llama-3-8b", "a100-80g", 8, 1, "");
    assert_eq!(v.max_cost_fen(), 8 * 24 * price);
    // A deployment's own price applies everywhere costs appear.
    let v = v.with_prices(&[("a100-80g", 1234), ("h100-80g", 1)]);
    assert_eq!(v.max_cost_fen(), 8 * 24 * 1234);
    let plan = jobspec::plan::finish(Some(v), Vec::new());
    assert_eq!(plan.estimate.unwrap().cost.price_fen_per_hour, 1234);
    let h100 = plan.cards.iter().find(|r| r.card == "h100-80g").unwrap();
    assert_eq!(h100.price_fen_per_hour, 1);
}

#[test]
fn more_cards_means_less_time() {
    let t = |cards| {
        estimate::estimate(&spec("llama-3-8b", "h100-80g", cards, 1, ""))
            .time
            .seconds
    };
    assert!((t(8) * 8.0 - t(1)).abs() / t(1) < 1e-9);
}

/// The spec survives JSON: what the app sends is what the edge validates.
#[test]
fn json_round_trip_of_templates() {
    for t in jobspec::templates() {
        let (v, _) = validate_toml(t.toml);
        let v = v.unwrap();
        let json = serde_json::to_string(v.spec()).unwrap();
        let (again, diags) = jobspec::validate_json(&json);
        assert_eq!(
            again.as_ref().map(|a| a.spec()),
            Some(v.spec()),
            "{}: {diags:#?}",
            t.id
        );
    }
}

/// `--explain` in Chinese is Chinese: no formula or assumption of any template (nor of ZeRO-3
/// with offload, nor of LoRA) keeps the English words of its English twin.
#[test]
fn every_explanation_is_in_both_languages() {
    const ENGLISH: &[&str] = &[
        "bytes",
        "params",
        "ranks",
        " per ",
        "cards",
        "steps",
        "total",
        "node(s)",
        "dense",
        "attention",
        "rounded",
        "fits",
        "frozen",
        "adapters",
        "gather",
        "runtime",
        "tokens",
        "largest",
        "assumed",
        "datasheet",
        "optimizer",
        "layer",
        " with ",
        " of ",
    ];
    let mut specs: Vec<String> = jobspec::templates()
        .iter()
        .map(|t| t.toml.to_string())
        .collect();
    let offload =
        "[parallel]\nzero_stage = 3\noffload_optimizer = \"cpu\"\noffload_params = \"cpu\"\n";
    specs.push(format!("{}{offload}", jobspec::templates()[1].toml));
    let mut seen = 0;
    for text in &specs {
        let Some(e) = jobspec::plan_toml(text).estimate else {
            continue;
        };
        for x in &e.explain {
            for (what, zh) in [
                ("formula", &x.formula.zh),
                ("assumptions", &x.assumptions.zh),
            ] {
                seen += 1;
                for word in ENGLISH {
                    assert!(!zh.contains(word), "{} {what} has {word:?}: {zh}", x.figure);
                }
            }
        }
    }
    assert!(seen >= 40, "{seen}");
}
