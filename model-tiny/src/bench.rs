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

/// A Llama of about 100M parameters with random weights (dim 768, hidden 2048, 12 layers of 12
/// heads, vocab 32000, 1024 positions: 110M), the largest size the playground opens comfortably;
/// the benchmarks load it from the Hugging Face format ([`crate::hf::save`], then
/// [`crate::hf::load`]).
pub fn random_100m() -> Result<Weights> {
    let config = Config {
        dim: 768,
        hidden_dim: 2048,
        n_layers: 12,
        n_heads: 12,
        n_kv_heads: 12,
        seq_len: 1024,
        ..Config::stories15m()
    };
    Weights::random(config, BENCH_SEED)
}

/// The sampling each benchmark model uses: greedy for the trained stories260K; plain
/// multinomial sampling (`-t 1 -p 0 -s 42`) for the random model, whose greedy choice after BOS
/// is BOS itself (a shared classifier scores the input token highest), which would end at once.
pub fn bench_sampler(random_weights: bool) -> SamplerConfig {
    if random_weights {
        SamplerConfig {
            temperature: 1.0,
            topp: 0.0,
            seed: 42,
        }
    } else {
        SamplerConfig {
            temperature: 0.0,
            ..SamplerConfig::default()
        }
    }
}

/// Generation from BOS for `steps` positions (stopping early at BOS, as run.c does); returns
/// run.c's figure: tokens after the first, per second of `now_s` time.
pub fn tokens_per_s(
    model: &mut Transformer,
    steps: usize,
    sampler: SamplerConfig,
    now_s: &dyn Fn() -> f64,
) -> Result<f64> {
    let mut generator = Generator::from_tokens(model, vec![BOS], steps, sampler);
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
