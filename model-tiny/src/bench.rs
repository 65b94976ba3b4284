//! Generation speed measured the way run.c reports it: greedy tokens after the first one, over
//! the wall time since the first one. The clock is a parameter so the browser can pass its own.

use crate::config::Config;
use crate::error::Result;
use crate::forward::Transformer;
use crate::generate::Generator;
use crate::sampler::SamplerConfig;
use crate::tokenizer::BOS;
use crate::weights::Weights;

/// The seed of the random-weight stories15M-shaped benchmark model.
pub const BENCH_SEED: u64 = 15;

/// The stories15M-shaped model with random weights that the benchmarks use (never stored).
pub fn random_15m() -> Result<Weights> {
    Weights::random(Config::stories15m(), BENCH_SEED)
}

/// Greedy generation from BOS for `steps` positions (stopping early at BOS, as run.c does);
/// returns run.c's figure: tokens after the first, per second of `now_s` time.
pub fn greedy_tokens_per_s(
    model: &mut Transformer,
    steps: usize,
    now_s: &dyn Fn() -> f64,
) -> Result<f64> {
    let greedy = SamplerConfig {
        temperature: 0.0,
        ..SamplerConfig::default()
    };
    let mut generator = Generator::from_tokens(model, vec![BOS], steps, greedy);
    let mut start = None;
    while generator.next_token()?.is_some() {
        start.get_or_insert_with(now_s);
    }
    let pos = generator.pos();
    Ok(match start {
        Some(t0) if pos > 1 => (pos - 1) as f64 / (now_s() - t0).max(1e-9),
        _ => 0.0,
    })
}
