//! The same transformer as [`crate::forward`] written with candle tensors, for training with
//! candle's autograd: parameters are [`Var`]s created from, and turned back into, [`Weights`].

use crate::bmm::bmm;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::fused::{causal_softmax, cross_entropy};
use crate::weights::{Weights, tensor_specs};
use candle_core::{D, Device, Tensor, Var};

/// A trainable model: one [`Var`] per tensor, in the order of [`tensor_specs`].
pub struct CandleModel {
    config: Config,
    vars: Vec<Var>,
    device: Device,
}

/// The parameters of one block, as tensors.
struct Block<'a> {
    attention_norm: &'a Tensor,
    wq: &'a Tensor,
    wk: &'a Tensor,
    wv: &'a Tensor,
    wo: &'a Tensor,
    ffn_norm: &'a Tensor,
    w1: &'a Tensor,
    w2: &'a Tensor,
    w3: &'a Tensor,
}

fn rmsnorm(x: &Tensor, weight: &Tensor, eps: f32) -> Result<Tensor> {
    let ms = x.sqr()?.mean_keepdim(D::Minus1)?;
    let inv = (ms + eps as f64)?.sqrt()?.recip()?;
    Ok(x.broadcast_mul(&inv)?.broadcast_mul(weight)?)
}

/// `x W^T` for `x` of shape `[n, in]` and `W` of shape `[out, in]`.
fn linear(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    Ok(x.matmul(&w.t()?)?)
}

/// llama2.c's RoPE on `[b, heads, t, hs]`: rotates each (even, odd) pair by position.
fn rope(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {
    let (b, h, t, hs) = x.dims4()?;
    let x = x.reshape((b, h, t, hs / 2, 2))?;
    let x0 = x.narrow(4, 0, 1)?;
    let x1 = x.narrow(4, 1, 1)?;
    let out0 = (x0.broadcast_mul(cos)? - x1.broadcast_mul(sin)?)?;
    let out1 = (x0.broadcast_mul(sin)? + x1.broadcast_mul(cos)?)?;
    Ok(Tensor::cat(&[out0, out1], 4)?.reshape((b, h, t, hs))?)
}

impl CandleModel {
    /// Trainable copies of `weights` on `device`.
    pub fn from_weights(weights: &Weights, device: &Device) -> Result<Self> {
        weights.without_biases("training")?;
        let vars = tensor_specs(&weights.config)
            .iter()
            .zip(weights.ordered())
            .map(|(spec, data)| Var::from_slice(data, spec.shape.as_slice(), device))
            .collect::<candle_core::Result<Vec<_>>>()?;
        Ok(CandleModel {
            config: weights.config,
            vars,
            device: device.clone(),
        })
    }

    /// The architecture.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The parameters, in the order of [`tensor_specs`].
    pub fn vars(&self) -> &[Var] {
        &self.vars
    }

    /// The device the parameters live on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The current parameters as plain [`Weights`].
    pub fn to_weights(&self) -> Result<Weights> {
        let tensors = self
            .vars
            .iter()
            .map(|v| v.as_tensor().flatten_all()?.to_vec1::<f32>())
            .collect::<candle_core::Result<Vec<_>>>()?;
        Weights::from_ordered(self.config, tensors)
    }

    fn block(&self, layer: usize) -> Block<'_> {
        let base = 1 + 9 * layer;
        let t = |i: usize| self.vars[base + i].as_tensor();
        Block {
            attention_norm: t(0),
            wq: t(1),
            wk: t(2),
            wv: t(3),
            wo: t(4),
            ffn_norm: t(5),
            w1: t(6),
            w2: t(7),
            w3: t(8),
        }
    }

    fn rope_tables(&self, t: usize) -> Result<(Tensor, Tensor)> {
        let hs = self.config.head_size();
        let mut cos = Vec::with_capacity(t * hs / 2);
        let mut sin = Vec::with_capacity(t * hs / 2);
        for pos in 0..t {
            for i in (0..hs).step_by(2) {
                let freq = 1.0f32 / self.config.rope_theta.powf(i as f32 / hs as f32);
                let val = pos as f32 * freq;
                cos.push(val.cos());
                sin.push(val.sin());
            }
        }
        let shape = (t, hs / 2, 1);
        Ok((
            Tensor::from_vec(cos, shape, &self.device)?,
            Tensor::from_vec(sin, shape, &self.device)?,
        ))
    }

    /// Logits `[b, t, vocab]` for token ids `[b, t]` (u32), with causal attention.
    pub fn forward(&self, tokens: &Tensor) -> Result<Tensor> {
        let c = self.config;
        let (b, t) = tokens.dims2()?;
        if t > c.seq_len {
            return Err(Error::Usage(format!(
                "sequence of {t} tokens is longer than the model's seq_len {}",
                c.seq_len
            )));
        }
        let (d, h, kvh, hs) = (c.dim, c.n_heads, c.n_kv_heads, c.head_size());
        let emb = self.vars[0].as_tensor();
        let mut x = emb.index_select(&tokens.flatten_all()?, 0)?; // [b*t, d]
        let (cos, sin) = self.rope_tables(t)?;
        let scale = 1.0 / (hs as f64).sqrt();
        for l in 0..c.n_layers {
            let blk = self.block(l);
            let hn = rmsnorm(&x, blk.attention_norm, self.config.norm_eps)?;
            let heads = |w: &Tensor, n: usize| -> Result<Tensor> {
                Ok(linear(&hn, w)?
                    .reshape((b, t, n, hs))?
                    .transpose(1, 2)?
                    .contiguous()?)
            };
            let q = rope(&heads(blk.wq, h)?, &cos, &sin)?;
            let k = rope(&heads(blk.wk, kvh)?, &cos, &sin)?;
            let v = heads(blk.wv, kvh)?;
            let repeat = |x: Tensor| -> Result<Tensor> {
                if h == kvh {
                    return Ok(x);
                }
                Ok(x.unsqueeze(2)?
                    .broadcast_as((b, kvh, h / kvh, t, hs))?
                    .contiguous()?
                    .reshape((b, h, t, hs))?)
            };
            let (k, v) = (repeat(k)?, repeat(v)?);
            let att = causal_softmax(&bmm(&q, &k, false, true)?, scale)?;
            let y = bmm(&att, &v, false, false)?
                .transpose(1, 2)?
                .contiguous()?
                .reshape((b * t, d))?;
            x = (x + linear(&y, blk.wo)?)?;
            let hn = rmsnorm(&x, blk.ffn_norm, self.config.norm_eps)?;
            let gate = linear(&hn, blk.w1)?.silu()?;
            let up = linear(&hn, blk.w3)?;
            x = (x + linear(&(gate * up)?, blk.w2)?)?;
        }
        let norm = self.vars[1 + 9 * c.n_layers].as_tensor();
        let x = rmsnorm(&x, norm, self.config.norm_eps)?;
        let classifier = if c.shared_classifier {
            emb
        } else {
            self.vars[2 + 9 * c.n_layers].as_tensor()
        };
        Ok(linear(&x, classifier)?.reshape((b, t, c.vocab_size))?)
    }

    /// Mean cross-entropy of predicting `targets` `[b, t]` from `inputs` `[b, t]`.
    pub fn loss(&self, inputs: &Tensor, targets: &Tensor) -> Result<Tensor> {
        let logits = self.forward(inputs)?;
        let (b, t, v) = logits.dims3()?;
        Ok(cross_entropy(
            &logits.reshape((b * t, v))?,
            &targets.flatten_all()?,
        )?)
    }
}
