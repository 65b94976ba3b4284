//! Job specs the stack tests submit, derived from the repository's templates so that they stay
//! valid as the templates change.

/// The tiny-train template (stories260K on the local runner) cut down to `steps` short steps,
/// quick on 2 cores.
pub fn tiny_train(steps: u32) -> String {
    include_str!("../../jobspec/specs/tiny-train-stories260k.toml")
        .replace("steps = 200", &format!("steps = {steps}"))
        .replace("seq_len = 256", "seq_len = 64")
        .replace("micro_batch = 8", "micro_batch = 4")
}

/// A LoRA run of a small model made on the spot (2 layers, 64 wide, the 512-token vocabulary)
/// on tinyshakespeare, 12 steps on the CPU card: onramp-train's smallest real job, named `name`
/// and aimed at `backend`.
pub fn lora_cpu(name: &str, backend: &str) -> String {
    format!(
        r#"name = "{name}"
task = "lora"
backend = "{backend}"

[model]
name = "mini"
layers = 2
hidden = 64
heads = 4
kv_heads = 2
ffn = 172
vocab = 512

[data]
dataset = "tinyshakespeare"
seq_len = 64

[train]
steps = 12
micro_batch = 4
lr = 1e-2
warmup = 2
lora_rank = 8

[resources]
card = "cpu"
time_limit = "20m"
"#
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_short_tiny_train_spec_is_submittable() {
        let text = super::tiny_train(30);
        assert!(text.contains("steps = 30") && text.contains("seq_len = 64"));
        assert!(jobspec::plan_toml(&text).is_submittable());
    }
}
