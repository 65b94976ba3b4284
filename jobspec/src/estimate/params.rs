//! Parameter counts of a llama-family decoder and of its LoRA adapters, from the shapes.

use crate::catalog::{Arch, Family};
use serde::Serialize;

/// Parameter counts of a model as trained by one spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ParamCount {
    /// Every weight of the base model (embeddings counted once when tied).
    pub total: u64,
    /// Weights that receive gradients: all of them, or only the adapters.
    pub trainable: u64,
    /// The largest single module's own parameters, as DeepSpeed's `model_to_params` counts them
    /// (usually the embedding): ZeRO-3 gathers one such module at a time.
    pub largest_layer: u64,
    /// Parameters of one transformer block.
    pub per_layer: u64,
    /// The embedding matrix (vocab × hidden).
    pub embedding: u64,
    /// LoRA adapter parameters (0 without LoRA).
    pub adapter: u64,
}

fn head_dim(a: &Arch) -> u64 {
    u64::from(a.hidden) / u64::from(a.heads.max(1))
}

/// The (in, out) shape of each linear projection of one block, by PEFT module name.
pub fn block_linears(a: &Arch) -> [(&'static str, u64, u64); 7] {
    let h = u64::from(a.hidden);
    let kv = u64::from(a.kv_heads) * head_dim(a);
    let f = u64::from(a.ffn);
    [
        ("q_proj", h, h),
        ("k_proj", h, kv),
        ("v_proj", h, kv),
        ("o_proj", h, h),
        ("gate_proj", h, f),
        ("up_proj", h, f),
        ("down_proj", f, h),
    ]
}

/// Parameters of one transformer block: projections, optional q/k/v biases, two RMSNorms.
pub fn per_layer(a: &Arch) -> u64 {
    let h = u64::from(a.hidden);
    let kv = u64::from(a.kv_heads) * head_dim(a);
    let linear: u64 = block_linears(a).iter().map(|(_, i, o)| i * o).sum();
    let bias = if a.qkv_bias { h + 2 * kv } else { 0 };
    linear + bias + 2 * h
}

/// Counts the base model's parameters.
pub fn count(a: &Arch) -> ParamCount {
    let h = u64::from(a.hidden);
    let embedding = u64::from(a.vocab) * h;
    let head = if a.tied_embeddings { 0 } else { embedding };
    let layer = per_layer(a);
    let total = embedding + head + u64::from(a.layers) * layer + h;
    let q_with_bias = h * h + if a.qkv_bias { h } else { 0 };
    let largest_linear = block_linears(a)
        .iter()
        .map(|(_, i, o)| i * o)
        .max()
        .unwrap_or(0)
        .max(q_with_bias);
    ParamCount {
        total,
        trainable: total,
        largest_layer: embedding.max(largest_linear),
        per_layer: layer,
        embedding,
        adapter: 0,
    }
}

/// The (in, out) shape of each linear layer of one block as the family names and fuses them
/// (ChatGLM's `query_key_value` is q, k and v in one; its `dense_h_to_4h` is gate and up).
pub fn family_linears(a: &Arch, family: Family) -> Vec<(&'static str, u64, u64)> {
    let [q, k, v, o, gate, up, down] = block_linears(a);
    match family {
        Family::Llama => vec![q, k, v, o, gate, up, down],
        Family::ChatGlm => vec![
            ("query_key_value", q.1, q.2 + k.2 + v.2),
            ("dense", o.1, o.2),
            ("dense_h_to_4h", gate.1, gate.2 + up.2),
            ("dense_4h_to_h", down.1, down.2),
        ],
    }
}

/// LoRA adds A (r × in) and B (out × r) to each targeted linear layer of every block.
pub fn lora_adapter(a: &Arch, family: Family, rank: u32, targets: &[String]) -> u64 {
    let all = targets.iter().any(|t| t == "all-linear");
    let per_block: u64 = family_linears(a, family)
        .iter()
        .filter(|(name, _, _)| all || targets.iter().any(|t| t == name))
        .map(|(_, i, o)| u64::from(rank) * (i + o))
        .sum();
    per_block * u64::from(a.layers)
}

/// Parameters inside the blocks' linear projections: what QLoRA stores in 4 bits.
pub fn quantizable(a: &Arch) -> u64 {
    let linear: u64 = block_linears(a).iter().map(|(_, i, o)| i * o).sum();
    linear * u64::from(a.layers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::MODELS;

    /// Every catalogue model's count agrees with its publisher's figure to the precision the
    /// publisher gave (one unit of the last digit: "7.61B" allows ±10M, "15M" allows ±1M).
    #[test]
    fn counts_match_published() {
        for m in MODELS {
            let n = count(&m.arch).total;
            let mut unit = 1u64;
            while m.published_params % (unit * 10) == 0 {
                unit *= 10;
            }
            assert!(
                n.abs_diff(m.published_params) <= unit,
                "{}: counted {n}, published {}",
                m.id,
                m.published_params
            );
        }
    }

    #[test]
    fn exact_counts() {
        let c = |id: &str| crate::catalog::model(id).map(|m| count(&m.arch).total);
        assert_eq!(c("llama-3-8b"), Some(8_030_261_248));
        assert_eq!(c("stories260K"), Some(260_032));
        assert_eq!(c("qwen2.5-7b"), Some(7_615_616_512));
    }
}
