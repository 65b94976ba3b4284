//! The architecture numbers of a llama-family model, shared by every loader and both forward paths.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// The RMSNorm epsilon used by llama2.c.
pub const NORM_EPS: f32 = 1e-5;
/// The RoPE base frequency used by llama2.c.
pub const ROPE_THETA: f32 = 10000.0;
/// The largest parameter count we accept, so a corrupt header cannot ask for terabytes.
pub const MAX_PARAMS: u64 = 1 << 31;
/// The largest KV cache (values in K, and again in V) we accept: Llama-2-7B at 4096 positions
/// needs 2^29; a header asking for more is far more likely corrupt than real.
pub const MAX_KV_CACHE: u64 = 1 << 30;

/// The shape of a llama2.c-style transformer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// Width of the residual stream (`dim` in llama2.c).
    pub dim: usize,
    /// Width of the SwiGLU feed-forward layer.
    pub hidden_dim: usize,
    /// Number of transformer blocks.
    pub n_layers: usize,
    /// Number of query heads.
    pub n_heads: usize,
    /// Number of key/value heads (fewer than `n_heads` for grouped-query attention).
    pub n_kv_heads: usize,
    /// Number of tokens in the vocabulary.
    pub vocab_size: usize,
    /// Longest sequence the model (and its KV cache) handles.
    pub seq_len: usize,
    /// Whether the output classifier is the token embedding matrix.
    pub shared_classifier: bool,
    /// The RMSNorm epsilon: llama2.c's [`NORM_EPS`], or a Hugging Face config's `rms_norm_eps`.
    #[serde(default = "llama2c_norm_eps")]
    pub norm_eps: f32,
    /// The RoPE base frequency: llama2.c's [`ROPE_THETA`], or a Hugging Face config's.
    #[serde(default = "llama2c_rope_theta")]
    pub rope_theta: f32,
}

fn llama2c_norm_eps() -> f32 {
    NORM_EPS
}

fn llama2c_rope_theta() -> f32 {
    ROPE_THETA
}

impl Config {
    /// stories260K's shape (dim 64, hidden 172, 5 layers, 8 heads, 4 KV heads, vocab 512).
    pub fn stories260k() -> Self {
        Config {
            dim: 64,
            hidden_dim: 172,
            n_layers: 5,
            n_heads: 8,
            n_kv_heads: 4,
            vocab_size: 512,
            seq_len: 512,
            shared_classifier: true,
            norm_eps: NORM_EPS,
            rope_theta: ROPE_THETA,
        }
    }

    /// stories15M's shape (dim 288, hidden 768, 6 layers, 6 heads, vocab 32000, seq 256).
    pub fn stories15m() -> Self {
        Config {
            dim: 288,
            hidden_dim: 768,
            n_layers: 6,
            n_heads: 6,
            n_kv_heads: 6,
            vocab_size: 32000,
            seq_len: 256,
            shared_classifier: true,
            norm_eps: NORM_EPS,
            rope_theta: ROPE_THETA,
        }
    }

    /// Width of one attention head.
    pub fn head_size(&self) -> usize {
        self.dim / self.n_heads.max(1)
    }

    /// Width of the key (and value) vector of one position: `n_kv_heads * head_size`.
    pub fn kv_dim(&self) -> usize {
        self.n_kv_heads * self.head_size()
    }

    /// How many query heads share one key/value head.
    pub fn kv_mul(&self) -> usize {
        self.n_heads / self.n_kv_heads.max(1)
    }

    /// Checks that the numbers describe a model the forward passes can run.
    pub fn validate(&self) -> Result<()> {
        let what = "model config";
        for (name, value) in [
            ("dim", self.dim),
            ("hidden_dim", self.hidden_dim),
            ("n_layers", self.n_layers),
            ("n_heads", self.n_heads),
            ("n_kv_heads", self.n_kv_heads),
            ("vocab_size", self.vocab_size),
            ("seq_len", self.seq_len),
        ] {
            if value == 0 || value > (1 << 24) {
                return Err(Error::format(what, name, "a number in 1..=16777216", value));
            }
        }
        if !self.dim.is_multiple_of(self.n_heads) {
            return Err(Error::format(
                what,
                "dim",
                format!("a multiple of n_heads ({})", self.n_heads),
                self.dim,
            ));
        }
        if !self.head_size().is_multiple_of(2) {
            return Err(Error::format(
                what,
                "dim / n_heads",
                "an even head size (RoPE rotates pairs)",
                self.head_size(),
            ));
        }
        if self.n_kv_heads > self.n_heads || !self.n_heads.is_multiple_of(self.n_kv_heads) {
            return Err(Error::format(
                what,
                "n_kv_heads",
                format!("a divisor of n_heads ({})", self.n_heads),
                self.n_kv_heads,
            ));
        }
        if self.vocab_size < 3 {
            return Err(Error::format(
                what,
                "vocab_size",
                "at least 3 (<unk>, <s>, </s>)",
                self.vocab_size,
            ));
        }
        self.check_numerics(what)?;
        // In u128: each number is at most 2^24, so no product below can wrap (in u64 the KV
        // cache's three and the layers' parameters could, and a huge model pass as a small one).
        let kv = self.n_layers as u128 * self.seq_len as u128 * self.kv_dim() as u128;
        if kv > MAX_KV_CACHE as u128 {
            return Err(Error::format(
                what,
                "n_layers * seq_len * kv_dim (KV cache size)",
                format!("at most {MAX_KV_CACHE} values"),
                kv,
            ));
        }
        let n = self.n_params_u128();
        if n > MAX_PARAMS as u128 {
            return Err(Error::format(
                what,
                "parameter count",
                format!("at most {MAX_PARAMS}"),
                n,
            ));
        }
        Ok(())
    }

    /// The RMSNorm epsilon and the RoPE base: finite, and where a model can use them.
    fn check_numerics(&self, what: &str) -> Result<()> {
        if !(self.norm_eps.is_finite() && self.norm_eps > 0.0 && self.norm_eps < 1.0) {
            return Err(Error::format(
                what,
                "norm_eps",
                "a number in (0, 1)",
                self.norm_eps,
            ));
        }
        if !(self.rope_theta.is_finite() && self.rope_theta > 1.0) {
            return Err(Error::format(
                what,
                "rope_theta",
                "a number above 1",
                self.rope_theta,
            ));
        }
        Ok(())
    }

    /// The parameter count, exact for any numbers up to 2^24 each (it stays below 2^80).
    fn n_params_u128(&self) -> u128 {
        let (d, h, l, v) = (
            self.dim as u128,
            self.hidden_dim as u128,
            self.n_layers as u128,
            self.vocab_size as u128,
        );
        let kv = (self.n_kv_heads as u128) * (d / (self.n_heads as u128).max(1));
        let per_layer = 2 * d + 2 * d * d + 2 * d * kv + 3 * d * h;
        let classifier = if self.shared_classifier { 0 } else { v * d };
        v * d + l * per_layer + d + classifier
    }

    /// Number of parameters (the shared classifier counted once; `usize::MAX` for a count that
    /// does not fit, which [`Config::validate`] refuses).
    pub fn n_params(&self) -> usize {
        usize::try_from(self.n_params_u128()).unwrap_or(usize::MAX)
    }
}
