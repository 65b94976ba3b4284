//! The parameters of one model as plain f32 arrays in PyTorch's `[out, in]` layout, named as in
//! llama2.c's `model.py`: the single source that loaders fill and both forward paths read.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::sampler::XorShift;

/// The weights of one transformer block.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerWeights {
    /// RMSNorm scale before attention, `[dim]`.
    pub attention_norm: Vec<f32>,
    /// Query projection, `[dim, dim]`.
    pub wq: Vec<f32>,
    /// Key projection, `[kv_dim, dim]`.
    pub wk: Vec<f32>,
    /// Value projection, `[kv_dim, dim]`.
    pub wv: Vec<f32>,
    /// Attention output projection, `[dim, dim]`.
    pub wo: Vec<f32>,
    /// RMSNorm scale before the feed-forward layer, `[dim]`.
    pub ffn_norm: Vec<f32>,
    /// Feed-forward gate projection, `[hidden_dim, dim]`.
    pub w1: Vec<f32>,
    /// Feed-forward down projection, `[dim, hidden_dim]`.
    pub w2: Vec<f32>,
    /// Feed-forward up projection, `[hidden_dim, dim]`.
    pub w3: Vec<f32>,
    /// Query, key and value biases, `[dim + 2 kv_dim]` (query and key in llama2.c's RoPE order):
    /// a Qwen2's, which is a Llama with these; none in llama2.c's models, nor in training.
    pub bqkv: Option<Vec<f32>>,
}

/// All the parameters of a model, with its config.
#[derive(Debug, Clone, PartialEq)]
pub struct Weights {
    /// The architecture these weights belong to.
    pub config: Config,
    /// Token embedding table, `[vocab_size, dim]`.
    pub tok_embeddings: Vec<f32>,
    /// The transformer blocks.
    pub layers: Vec<LayerWeights>,
    /// Final RMSNorm scale, `[dim]`.
    pub norm: Vec<f32>,
    /// Output classifier `[vocab_size, dim]`, `None` when it is the embedding table.
    pub output: Option<Vec<f32>>,
}

/// The role of a tensor, which decides its shape and its initialisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorKind {
    /// A norm scale, initialised to one.
    Norm,
    /// A matrix, initialised from N(0, 0.02).
    Matrix,
    /// A matrix that writes into the residual stream, scaled down by depth (GPT-2 style).
    ResidualMatrix,
}

/// Name, shape and role of one tensor in the canonical order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorSpec {
    /// Name as in llama2.c's `model.py` state dict.
    pub name: String,
    /// Shape, `[out, in]` for matrices.
    pub shape: Vec<usize>,
    /// Role of the tensor.
    pub kind: TensorKind,
}

impl TensorSpec {
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
}

/// The tensors a model of `config` has, in a fixed order.
pub fn tensor_specs(config: &Config) -> Vec<TensorSpec> {
    let (d, h, kv, v) = (
        config.dim,
        config.hidden_dim,
        config.kv_dim(),
        config.vocab_size,
    );
    let spec = |name: String, shape: Vec<usize>, kind| TensorSpec { name, shape, kind };
    let mut out = vec![spec(
        "tok_embeddings.weight".into(),
        vec![v, d],
        TensorKind::Matrix,
    )];
    for l in 0..config.n_layers {
        let p = format!("layers.{l}");
        out.push(spec(
            format!("{p}.attention_norm.weight"),
            vec![d],
            TensorKind::Norm,
        ));
        out.push(spec(
            format!("{p}.attention.wq.weight"),
            vec![d, d],
            TensorKind::Matrix,
        ));
        out.push(spec(
            format!("{p}.attention.wk.weight"),
            vec![kv, d],
            TensorKind::Matrix,
        ));
        out.push(spec(
            format!("{p}.attention.wv.weight"),
            vec![kv, d],
            TensorKind::Matrix,
        ));
        out.push(spec(
            format!("{p}.attention.wo.weight"),
            vec![d, d],
            TensorKind::ResidualMatrix,
        ));
        out.push(spec(
            format!("{p}.ffn_norm.weight"),
            vec![d],
            TensorKind::Norm,
        ));
        out.push(spec(
            format!("{p}.feed_forward.w1.weight"),
            vec![h, d],
            TensorKind::Matrix,
        ));
        out.push(spec(
            format!("{p}.feed_forward.w2.weight"),
            vec![d, h],
            TensorKind::ResidualMatrix,
        ));
        out.push(spec(
            format!("{p}.feed_forward.w3.weight"),
            vec![h, d],
            TensorKind::Matrix,
        ));
    }
    out.push(spec("norm.weight".into(), vec![d], TensorKind::Norm));
    if !config.shared_classifier {
        out.push(spec("output.weight".into(), vec![v, d], TensorKind::Matrix));
    }
    out
}

impl Weights {
    /// Builds weights from tensors given in the order of [`tensor_specs`], checking every length.
    pub fn from_ordered(config: Config, tensors: Vec<Vec<f32>>) -> Result<Self> {
        config.validate()?;
        let specs = tensor_specs(&config);
        if specs.len() != tensors.len() {
            return Err(Error::format(
                "weights",
                "tensor count",
                specs.len(),
                tensors.len(),
            ));
        }
        for (spec, t) in specs.iter().zip(&tensors) {
            if spec.numel() != t.len() {
                return Err(Error::format(
                    "weights",
                    format!("tensor {} of shape {:?}", spec.name, spec.shape),
                    format!("{} values", spec.numel()),
                    t.len(),
                ));
            }
            if let Some(i) = t.iter().position(|x| !x.is_finite()) {
                return Err(Error::format(
                    "weights",
                    format!("tensor {} element {i}", spec.name),
                    "a finite number",
                    t[i],
                ));
            }
        }
        let mut it = tensors.into_iter();
        let mut next = || it.next().unwrap_or_default();
        let tok_embeddings = next();
        let mut layers = Vec::with_capacity(config.n_layers);
        for _ in 0..config.n_layers {
            layers.push(LayerWeights {
                attention_norm: next(),
                wq: next(),
                wk: next(),
                wv: next(),
                wo: next(),
                ffn_norm: next(),
                w1: next(),
                w2: next(),
                w3: next(),
                bqkv: None,
            });
        }
        let norm = next();
        let output = (!config.shared_classifier).then(next);
        Ok(Weights {
            config,
            tok_embeddings,
            layers,
            norm,
            output,
        })
    }

    /// Whether its blocks have query, key and value biases ([`LayerWeights::bqkv`]).
    pub fn has_qkv_biases(&self) -> bool {
        self.layers.iter().any(|l| l.bqkv.is_some())
    }

    /// Refuses weights with biases where only llama2.c's tensors go (`what`: a training run, a
    /// checkpoint), which would otherwise lose them.
    pub fn without_biases(&self, what: &str) -> Result<()> {
        if self.has_qkv_biases() {
            return Err(Error::format(
                "weights",
                "the query, key and value biases",
                format!("none ({what} takes llama2.c's tensors only)"),
                "biases (a Qwen2-style model)",
            ));
        }
        Ok(())
    }

    /// The tensors in the order of [`tensor_specs`] (the biases, where any, are not among them:
    /// see [`Weights::without_biases`]).
    pub fn ordered(&self) -> Vec<&[f32]> {
        let mut out: Vec<&[f32]> = vec![&self.tok_embeddings];
        for l in &self.layers {
            out.extend([
                &l.attention_norm[..],
                &l.wq,
                &l.wk,
                &l.wv,
                &l.wo,
                &l.ffn_norm,
                &l.w1,
                &l.w2,
                &l.w3,
            ]);
        }
        out.push(&self.norm);
        if let Some(o) = &self.output {
            out.push(o);
        }
        out
    }

    /// The classifier matrix `[vocab_size, dim]` (the embedding table when shared).
    pub fn classifier(&self) -> &[f32] {
        self.output.as_deref().unwrap_or(&self.tok_embeddings)
    }

    /// Fresh weights for `config` drawn from `seed` (deterministic on every platform): norms one,
    /// matrices N(0, 0.02), residual projections N(0, 0.02 / sqrt(2 n_layers)).
    pub fn random(config: Config, seed: u64) -> Result<Self> {
        config.validate()?;
        let mut rng = XorShift::new(seed.max(1));
        let resid_std = 0.02 / (2.0 * config.n_layers as f32).sqrt();
        let tensors = tensor_specs(&config)
            .iter()
            .map(|s| match s.kind {
                TensorKind::Norm => vec![1.0; s.numel()],
                TensorKind::Matrix => rng.normal_vec(s.numel(), 0.02),
                TensorKind::ResidualMatrix => rng.normal_vec(s.numel(), resid_std),
            })
            .collect();
        Weights::from_ordered(config, tensors)
    }
}
