//! A benchmark hook for `cargo xtask bench`: one validate + full estimate, natively or in wasm.

/// Validates `toml` and runs every estimator, the card comparison, the fix search and the
/// artifact generation: the work the app does on each keystroke. Returns a number derived from
/// the result so the optimiser cannot drop the work.
pub fn validate_and_estimate(toml: &str) -> u64 {
    let plan = crate::plan_toml(toml);
    let mut acc = plan.diagnostics.len() as u64;
    if let Some(e) = &plan.estimate {
        acc = acc
            .wrapping_add(e.memory.per_gpu.total_bytes)
            .wrapping_add(e.cost.fen);
    }
    acc.wrapping_add(plan.cards.len() as u64)
        .wrapping_add(plan.suggestions.len() as u64)
}

/// The spec the benchmark uses by default: the 128K DeepSeek template.
pub const BENCH_SPEC: &str = include_str!("../specs/deepseek-7b-128k-mxc500.toml");
