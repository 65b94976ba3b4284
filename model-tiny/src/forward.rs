//! The fast inference path: a hand-written single-token f32 forward pass with a KV cache, built
//! from the same [`Weights`] as the candle model but with Q/K/V and W1/W3 fused into one matrix
//! each, and every buffer allocated once, because tiny models are bound by per-token overhead.

use crate::arena::Arena;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::kernels::{add_assign, attend, exp, matvec, rmsnorm};
use crate::weights::Weights;
use std::ops::Range;

/// Where one block's matrices are in the [`Arena`].
struct Layer {
    attention_norm: Vec<f32>,
    /// Rows of wq, then wk, then wv: `[dim + 2 kv_dim, dim]`.
    wqkv: Range<usize>,
    /// Their biases, `[dim + 2 kv_dim]`, in a model that has them (a Qwen2's).
    bqkv: Option<Vec<f32>>,
    wo: Range<usize>,
    ffn_norm: Vec<f32>,
    /// Rows of w1, then w3: `[2 hidden_dim, dim]`.
    w13: Range<usize>,
    w2: Range<usize>,
}

/// A model ready for token-by-token inference, with its activations and KV cache.
pub struct Transformer {
    config: Config,
    /// Every matrix, in the order a token reads them.
    matrices: Arena,
    tok_embeddings: Range<usize>,
    layers: Vec<Layer>,
    norm: Vec<f32>,
    /// The classifier: its own matrix, or the embedding table's range when shared.
    output: Range<usize>,
    /// cos and sin of every (position, pair) for RoPE, computed with run.c's f32 formula, for
    /// the positions reached so far (see [`Transformer::grow`]).
    rope: Vec<(f32, f32)>,
    x: Vec<f32>,
    xb: Vec<f32>,
    xb2: Vec<f32>,
    qkv: Vec<f32>,
    hb: Vec<f32>,
    att: Vec<f32>,
    logits: Vec<f32>,
    /// Per block, `[position, kv_dim]` for the positions reached so far.
    key_cache: Vec<Vec<f32>>,
    value_cache: Vec<Vec<f32>>,
}

impl Transformer {
    /// Prepares `weights` for inference (they are copied into the fused layout).
    pub fn new(weights: &Weights) -> Self {
        let c = weights.config;
        // Read order: per block wq|wk|wv (fused into one matrix), wo, w1|w3 (fused), w2; then
        // the embedding table, which is also the classifier when shared; then the classifier.
        let fused: Vec<Vec<f32>> = weights
            .layers
            .iter()
            .flat_map(|l| {
                [
                    [&l.wq[..], &l.wk, &l.wv].concat(),
                    [&l.w1[..], &l.w3].concat(),
                ]
            })
            .collect();
        let mut parts: Vec<&[f32]> = Vec::new();
        for (l, f) in weights.layers.iter().zip(fused.chunks_exact(2)) {
            parts.extend([&f[0][..], &l.wo, &f[1], &l.w2]);
        }
        parts.push(&weights.tok_embeddings);
        if let Some(output) = &weights.output {
            parts.push(output);
        }
        let (matrices, ranges) = Arena::new(&parts);
        let layers = weights
            .layers
            .iter()
            .zip(ranges.chunks_exact(4))
            .map(|(l, r)| Layer {
                attention_norm: l.attention_norm.clone(),
                wqkv: r[0].clone(),
                bqkv: l.bqkv.clone(),
                wo: r[1].clone(),
                ffn_norm: l.ffn_norm.clone(),
                w13: r[2].clone(),
                w2: r[3].clone(),
            })
            .collect();
        let tok_embeddings = ranges[4 * weights.layers.len()].clone();
        let output = ranges.last().cloned().unwrap_or_default();
        Transformer {
            config: c,
            matrices,
            tok_embeddings,
            layers,
            norm: weights.norm.clone(),
            output,
            rope: Vec::new(),
            x: vec![0.0; c.dim],
            xb: vec![0.0; c.dim],
            xb2: vec![0.0; c.dim],
            qkv: vec![0.0; c.dim + 2 * c.kv_dim()],
            hb: vec![0.0; 2 * c.hidden_dim],
            att: Vec::new(),
            logits: vec![0.0; c.vocab_size],
            key_cache: vec![Vec::new(); c.n_layers],
            value_cache: vec![Vec::new(); c.n_layers],
        }
    }

    /// Makes room for positions `0..=pos` (at most `seq_len`, checked by the caller): the KV
    /// cache, the attention scores and the RoPE table grow with the positions a generation
    /// reaches, doubling, instead of being allocated for `seq_len` up front (a model may declare
    /// far more positions than a browser tab could hold a cache for, and use a few hundred).
    fn grow(&mut self, pos: usize) {
        let c = self.config;
        let have = self.att.len();
        if pos < have {
            return;
        }
        let to = (pos + 1).max(2 * have).max(64).min(c.seq_len);
        let kv = c.kv_dim();
        for cache in self.key_cache.iter_mut().chain(&mut self.value_cache) {
            cache.reserve_exact(to * kv - cache.len());
            cache.resize(to * kv, 0.0);
        }
        self.att.resize(to, 0.0);
        let hs = c.head_size();
        self.rope.reserve_exact((to - have) * hs / 2);
        for p in have..to {
            for i in (0..hs).step_by(2) {
                let freq = 1.0f32 / c.rope_theta.powf(i as f32 / hs as f32);
                let val = p as f32 * freq;
                self.rope.push((val.cos(), val.sin()));
            }
        }
    }

    /// The architecture.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Runs `token` at position `pos` (positions must be fed in order from 0; the KV cache keeps
    /// the earlier ones) and returns the logits for the next token.
    pub fn forward(&mut self, token: u32, pos: usize) -> Result<&mut [f32]> {
        let c = self.config;
        if token as usize >= c.vocab_size {
            return Err(Error::Usage(format!(
                "token {token} is outside the vocabulary (size {})",
                c.vocab_size
            )));
        }
        if pos >= c.seq_len {
            return Err(Error::Usage(format!(
                "position {pos} is past the model's sequence length {}",
                c.seq_len
            )));
        }
        self.grow(pos);
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx") {
            #[allow(unsafe_code)]
            // SAFETY: `step_avx` needs AVX, and the CPU has it (checked just above).
            unsafe {
                self.step_avx(token as usize, pos)
            };
            return Ok(&mut self.logits);
        }
        self.step(token as usize, pos);
        Ok(&mut self.logits)
    }

    /// [`Transformer::step`] compiled for AVX: binaries are built for baseline x86_64, and this
    /// copy lets the vectorised loops (exponentials, softmax, norms, the attention's weighted
    /// sums) use 256-bit registers where the CPU has them. Every loop keeps its lanes and order,
    /// and Rust never fuses a multiply and an add, so the result is the same bit for bit.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx")]
    fn step_avx(&mut self, t: usize, pos: usize) {
        self.step(t, pos)
    }

    /// The forward pass of token `t` at `pos` (both checked), leaving the logits in `self.logits`.
    #[inline(always)]
    fn step(&mut self, t: usize, pos: usize) {
        let c = self.config;
        let (dim, kv_dim, hidden, hs) = (c.dim, c.kv_dim(), c.hidden_dim, c.head_size());
        let kv_mul = c.kv_mul();
        let m = &self.matrices;
        self.x
            .copy_from_slice(&m.get(&self.tok_embeddings)[t * dim..(t + 1) * dim]);
        let rope = &self.rope[pos * hs / 2..(pos + 1) * hs / 2];
        let scale = (hs as f32).sqrt();
        for (l, layer) in self.layers.iter().enumerate() {
            rmsnorm(&mut self.xb, &self.x, &layer.attention_norm, c.norm_eps);
            matvec(&mut self.qkv, m.get(&layer.wqkv), &self.xb);
            if let Some(b) = &layer.bqkv {
                add_assign(&mut self.qkv, b);
            }
            let (q, kv) = self.qkv.split_at_mut(dim);
            let (k, v) = kv.split_at_mut(kv_dim);
            // RoPE: rotate each (even, odd) pair of every query head and key head.
            for head in q.chunks_exact_mut(hs).chain(k.chunks_exact_mut(hs)) {
                for (pair, (fcr, fci)) in head.chunks_exact_mut(2).zip(rope) {
                    let (v0, v1) = (pair[0], pair[1]);
                    pair[0] = v0 * fcr - v1 * fci;
                    pair[1] = v0 * fci + v1 * fcr;
                }
            }
            let at = pos * kv_dim;
            self.key_cache[l][at..at + kv_dim].copy_from_slice(k);
            self.value_cache[l][at..at + kv_dim].copy_from_slice(v);
            let keys = &self.key_cache[l][..at + kv_dim];
            let values = &self.value_cache[l][..at + kv_dim];
            for (h, (qh, out)) in q
                .chunks_exact(hs)
                .zip(self.xb.chunks_exact_mut(hs))
                .enumerate()
            {
                let off = (h / kv_mul) * hs;
                attend(
                    qh,
                    keys,
                    values,
                    kv_dim,
                    off,
                    scale,
                    &mut self.att[..=pos],
                    out,
                );
            }
            matvec(&mut self.xb2, m.get(&layer.wo), &self.xb);
            add_assign(&mut self.x, &self.xb2);

            rmsnorm(&mut self.xb, &self.x, &layer.ffn_norm, c.norm_eps);
            matvec(&mut self.hb, m.get(&layer.w13), &self.xb);
            let (h1, h3) = self.hb.split_at_mut(hidden);
            for (a, b) in h1.iter_mut().zip(h3.iter()) {
                let val = *a;
                *a = val * (1.0 / (1.0 + exp(-val))) * b;
            }
            matvec(&mut self.xb, m.get(&layer.w2), h1);
            add_assign(&mut self.x, &self.xb);
        }
        self.xb.copy_from_slice(&self.x);
        rmsnorm(&mut self.x, &self.xb, &self.norm, c.norm_eps);
        matvec(&mut self.logits, m.get(&self.output), &self.x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Logits of `tokens` fed from position 0, by the portable pass or the AVX one.
    fn logits(weights: &Weights, tokens: &[u32], avx: bool) -> Vec<Vec<u32>> {
        let mut model = Transformer::new(weights);
        tokens
            .iter()
            .enumerate()
            .map(|(pos, &t)| {
                model.grow(pos);
                #[cfg(target_arch = "x86_64")]
                if avx {
                    #[allow(unsafe_code)]
                    // SAFETY: only called with `avx` after checking that the CPU has AVX.
                    unsafe {
                        model.step_avx(t as usize, pos)
                    };
                    return model.logits.iter().map(|v| v.to_bits()).collect();
                }
                let _ = avx;
                model.step(t as usize, pos);
                model.logits.iter().map(|v| v.to_bits()).collect()
            })
            .collect()
    }

    /// The AVX copy of the pass must not change a single bit: head sizes with their own
    /// unrolled loop (8) and without (12), widths with and without a tail after the last 16-float
    /// group, grouped and plain KV heads, shared and separate classifiers.
    #[test]
    fn the_avx_pass_gives_the_same_bits_as_the_portable_one() {
        #[cfg(target_arch = "x86_64")]
        if !std::arch::is_x86_feature_detected!("avx") {
            eprintln!("no AVX on this CPU: nothing to compare");
            return;
        }
        let shapes = [
            Config::stories260k(),
            Config {
                dim: 36,
                hidden_dim: 99,
                n_layers: 2,
                n_heads: 3,
                n_kv_heads: 1,
                vocab_size: 70,
                seq_len: 40,
                shared_classifier: false,
                ..Config::stories260k()
            },
        ];
        for config in shapes {
            let weights = Weights::random(config, 7).expect("random weights");
            let tokens: Vec<u32> = (0..config.seq_len.min(40) as u32)
                .map(|i| (i * 37 + 1) % config.vocab_size as u32)
                .collect();
            let portable = logits(&weights, &tokens, false);
            let avx = logits(&weights, &tokens, cfg!(target_arch = "x86_64"));
            for (pos, (a, b)) in portable.iter().zip(&avx).enumerate() {
                assert!(a == b, "{config:?}: logits differ at position {pos}");
            }
        }
    }
}
