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

#[cfg(test)]
mod tests {
    #[test]
    fn the_short_tiny_train_spec_is_submittable() {
        let text = super::tiny_train(30);
        assert!(text.contains("steps = 30") && text.contains("seq_len = 64"));
        assert!(jobspec::plan_toml(&text).is_submittable());
    }
}
