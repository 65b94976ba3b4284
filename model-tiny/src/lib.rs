//! model-tiny: the one llama-family model definition that the browser playground, the runner's
//! training jobs and the tests all use.
//!
//! - [`Weights`] (with its [`Config`]) is the model; [`llama2c`] and [`checkpoint`] fill it from
//!   bytes, [`load_weights`] picks the format by itself; [`hf`] reads a Hugging Face Llama folder
//!   (with [`Tokenizer::from_hf_json`] for its tokenizer).
//! - [`Transformer`] is the fast f32 inference path; [`Generator`] streams tokens exactly as
//!   llama2.c's `run.c` does; [`Tokenizer`] and [`Sampler`] are run.c's.
//! - [`model::CandleModel`] is the same model in candle for autograd; `train` (native only)
//!   trains it.

mod arena;
pub mod bench;
mod bmm;
pub mod checkpoint;
pub mod config;
pub mod error;
pub mod forward;
mod fused;
pub mod generate;
pub mod hf;
pub mod hf_index;
mod hf_tokenizer;
mod kernels;
pub mod llama2c;
pub mod model;
pub mod sampler;
pub mod tokenizer;
#[cfg(not(target_arch = "wasm32"))]
pub mod train;
pub mod weights;

pub use config::Config;
pub use error::{Error, Result};
pub use forward::Transformer;
pub use generate::{Generator, Token, generate_text};
pub use sampler::{Sampler, SamplerConfig, XorShift};
pub use tokenizer::Tokenizer;
pub use weights::Weights;

/// Loads weights from a llama2.c checkpoint (any version) or one of our safetensors checkpoints,
/// telling them apart by their first bytes.
pub fn load_weights(bytes: &[u8]) -> Result<Weights> {
    if checkpoint::is_safetensors(bytes) {
        checkpoint::load_model(bytes, None)
    } else {
        llama2c::load(bytes)
    }
}
