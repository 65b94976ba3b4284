//! Training with candle's autograd: AdamW, linear warmup then cosine decay, global gradient-norm
//! clipping, a train/validation split with periodic validation loss, JSON-lines [`Metrics`], and
//! checkpoints (model + optimizer + state) that a later run resumes from.

use crate::checkpoint::{load_model, load_tensors, save_model, save_tensors};
use crate::error::{Error, Result};
use crate::model::CandleModel;
use crate::sampler::XorShift;
use crate::tokenizer::{BOS, Tokenizer};
use crate::weights::{Weights, tensor_specs};
use candle_core::{Device, Tensor};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

/// The settings of a training run (defaults suit a stories260K-sized model on a CPU).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TrainConfig {
    /// Optimizer steps in total (a resumed run continues up to this number).
    pub steps: usize,
    /// Sequences per step.
    pub batch_size: usize,
    /// Tokens per sequence (at most the model's `seq_len`).
    pub seq_len: usize,
    /// Peak learning rate, reached after the warmup.
    pub learning_rate: f64,
    /// Learning rate at the end of the cosine decay.
    pub min_lr: f64,
    /// Steps of linear warmup.
    pub warmup_steps: usize,
    /// AdamW decoupled weight decay, applied to matrices only.
    pub weight_decay: f64,
    /// AdamW first-moment decay.
    pub beta1: f64,
    /// AdamW second-moment decay.
    pub beta2: f64,
    /// AdamW epsilon.
    pub eps: f64,
    /// Clip the global gradient norm to this (0 disables).
    pub grad_clip: f64,
    /// Fraction of the tokens (at the end of the corpus) held out for validation.
    pub val_fraction: f64,
    /// Compute validation loss every this many steps (and at the last step).
    pub eval_every: usize,
    /// Batches averaged for one validation loss.
    pub eval_batches: usize,
    /// Emit training metrics every this many steps.
    pub log_every: usize,
    /// Write a checkpoint every this many steps (0: only at the end), when a directory is set.
    pub checkpoint_every: usize,
    /// Seed of batch sampling (and of the weights when training from scratch).
    pub seed: u64,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            steps: 200,
            batch_size: 8,
            seq_len: 128,
            learning_rate: 1e-3,
            min_lr: 1e-4,
            warmup_steps: 20,
            weight_decay: 0.1,
            beta1: 0.9,
            beta2: 0.95,
            eps: 1e-8,
            grad_clip: 1.0,
            val_fraction: 0.1,
            eval_every: 50,
            eval_batches: 4,
            log_every: 10,
            checkpoint_every: 0,
            seed: 1337,
        }
    }
}

/// One line of the metrics stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Optimizer steps done (1 after the first).
    pub step: usize,
    /// Training loss of this step's batch.
    pub loss: f32,
    /// Validation loss, on the steps where it was computed.
    pub val_loss: Option<f32>,
    /// Learning rate used for this step.
    pub lr: f64,
    /// Training tokens per second since the previous metrics line.
    pub tokens_per_s: f64,
    /// Seconds since this run (or resumption) started.
    pub elapsed_s: f64,
}

/// The learning rate at `step` (0-based): linear warmup, then cosine decay to `min_lr`.
pub fn learning_rate(cfg: &TrainConfig, step: usize) -> f64 {
    if step < cfg.warmup_steps {
        return cfg.learning_rate * (step + 1) as f64 / cfg.warmup_steps as f64;
    }
    let span = cfg.steps.saturating_sub(cfg.warmup_steps).max(1) as f64;
    let progress = ((step - cfg.warmup_steps) as f64 / span).min(1.0);
    let coeff = 0.5 * (1.0 + (std::f64::consts::PI * progress).cos());
    cfg.min_lr + coeff * (cfg.learning_rate - cfg.min_lr)
}

/// Tokenises a training corpus: BOS, then each line (newline included) encoded as run.c encodes
/// text but without the dummy prefix, so that a megabyte of text takes a moment, not minutes.
pub fn encode_corpus(tokenizer: &Tokenizer, text: &str) -> Vec<u32> {
    let mut out = vec![BOS];
    for line in text.split_inclusive('\n') {
        out.extend(tokenizer.encode_bytes(line.as_bytes(), false, false, false));
    }
    out
}

/// What a checkpoint directory holds besides the tensors.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct TrainState {
    step: usize,
    rng_state: u64,
    config: TrainConfig,
}

const MODEL_FILE: &str = "model.safetensors";
const OPTIMIZER_FILE: &str = "optimizer.safetensors";
const STATE_FILE: &str = "state.json";
const CONFIG_FILE: &str = "config.json";

/// A training run in progress.
pub struct Trainer {
    model: CandleModel,
    m: Vec<Tensor>,
    v: Vec<Tensor>,
    decay: Vec<bool>,
    cfg: TrainConfig,
    train: Vec<u32>,
    val: Vec<u32>,
    rng: XorShift,
    step: usize,
    started: Instant,
    last_log: (Instant, usize),
}

impl Trainer {
    /// Starts training `weights` on `tokens` (split into train and validation parts).
    pub fn new(weights: &Weights, tokens: &[u32], cfg: TrainConfig) -> Result<Self> {
        let device = Device::Cpu;
        let model = CandleModel::from_weights(weights, &device)?;
        let zeros = model
            .vars()
            .iter()
            .map(|v| v.as_tensor().zeros_like())
            .collect::<candle_core::Result<Vec<_>>>()?;
        Self::assemble(model, zeros.clone(), zeros, tokens, cfg, 0, None)
    }

    fn assemble(
        model: CandleModel,
        m: Vec<Tensor>,
        v: Vec<Tensor>,
        tokens: &[u32],
        cfg: TrainConfig,
        step: usize,
        rng_state: Option<u64>,
    ) -> Result<Self> {
        let c = *model.config();
        if cfg.seq_len == 0 || cfg.seq_len > c.seq_len || cfg.batch_size == 0 {
            return Err(Error::Usage(format!(
                "seq_len must be in 1..={} and batch_size at least 1 (got {} and {})",
                c.seq_len, cfg.seq_len, cfg.batch_size
            )));
        }
        if let Some(t) = tokens.iter().find(|t| **t as usize >= c.vocab_size) {
            return Err(Error::Usage(format!(
                "token {t} is outside the model's vocabulary of {}",
                c.vocab_size
            )));
        }
        let n_val = ((tokens.len() as f64) * cfg.val_fraction.clamp(0.0, 0.5)) as usize;
        let (train, val) = tokens.split_at(tokens.len() - n_val);
        if train.len() <= cfg.seq_len || (n_val > 0 && val.len() <= cfg.seq_len) {
            return Err(Error::Usage(format!(
                "corpus too small: {} training and {} validation tokens for sequences of {}",
                train.len(),
                val.len(),
                cfg.seq_len
            )));
        }
        let decay = tensor_specs(&c)
            .iter()
            .map(|s| s.shape.len() >= 2)
            .collect();
        let now = Instant::now();
        Ok(Trainer {
            model,
            m,
            v,
            decay,
            rng: XorShift::new(rng_state.unwrap_or(cfg.seed.max(1))),
            cfg,
            train: train.to_vec(),
            val: val.to_vec(),
            step,
            started: now,
            last_log: (now, step),
        })
    }

    /// Steps done so far.
    pub fn step_count(&self) -> usize {
        self.step
    }

    /// The settings.
    pub fn config(&self) -> &TrainConfig {
        &self.cfg
    }

    /// The current weights.
    pub fn weights(&self) -> Result<Weights> {
        self.model.to_weights()
    }

    fn batch(&self, data: &[u32], rng: &mut XorShift) -> Result<(Tensor, Tensor)> {
        let (b, t) = (self.cfg.batch_size, self.cfg.seq_len);
        let mut x = Vec::with_capacity(b * t);
        let mut y = Vec::with_capacity(b * t);
        for _ in 0..b {
            let i = rng.below(data.len() - t);
            x.extend_from_slice(&data[i..i + t]);
            y.extend_from_slice(&data[i + 1..i + t + 1]);
        }
        let dev = self.model.device();
        Ok((
            Tensor::from_vec(x, (b, t), dev)?,
            Tensor::from_vec(y, (b, t), dev)?,
        ))
    }

    /// One optimizer step on a fresh batch; returns the batch's loss and the learning rate.
    pub fn train_step(&mut self) -> Result<(f32, f64)> {
        let mut rng = self.rng;
        let (x, y) = self.batch(&self.train, &mut rng)?;
        self.rng = rng;
        let loss = self.model.loss(&x, &y)?;
        let grads = loss.backward()?;
        let lr = learning_rate(&self.cfg, self.step);
        let vars = self.model.vars();
        let mut gs = Vec::with_capacity(vars.len());
        let mut sq = 0.0f64;
        for var in vars {
            let g = match grads.get(var.as_tensor()) {
                Some(g) => g.clone(),
                None => var.as_tensor().zeros_like()?,
            };
            sq += g.sqr()?.sum_all()?.to_scalar::<f32>()? as f64;
            gs.push(g);
        }
        let norm = sq.sqrt();
        let clip = if self.cfg.grad_clip > 0.0 && norm > self.cfg.grad_clip {
            self.cfg.grad_clip / norm
        } else {
            1.0
        };
        let t = (self.step + 1) as i32;
        let (b1, b2) = (self.cfg.beta1, self.cfg.beta2);
        let (bc1, bc2) = (1.0 - b1.powi(t), 1.0 - b2.powi(t));
        for (i, (var, g)) in vars.iter().zip(gs).enumerate() {
            let g = (g * clip)?;
            self.m[i] = ((&self.m[i] * b1)? + (&g * (1.0 - b1))?)?;
            self.v[i] = ((&self.v[i] * b2)? + (g.sqr()? * (1.0 - b2))?)?;
            let mhat = (&self.m[i] / bc1)?;
            let vhat = (&self.v[i] / bc2)?;
            let mut update = mhat.div(&(vhat.sqrt()? + self.cfg.eps)?)?;
            let p = var.as_tensor();
            if self.decay[i] {
                update = (update + (p * self.cfg.weight_decay)?)?;
            }
            var.set(&(p - (update * lr)?)?)?;
        }
        self.step += 1;
        Ok((loss.to_scalar::<f32>()?, lr))
    }

    /// Mean loss over `eval_batches` validation batches (always the same ones).
    pub fn val_loss(&self) -> Result<Option<f32>> {
        if self.val.len() <= self.cfg.seq_len {
            return Ok(None);
        }
        let mut rng = XorShift::new(0x5EED ^ self.cfg.seed);
        let mut total = 0.0f32;
        let n = self.cfg.eval_batches.max(1);
        for _ in 0..n {
            let (x, y) = self.batch(&self.val, &mut rng)?;
            total += self.model.loss(&x, &y)?.to_scalar::<f32>()?;
        }
        Ok(Some(total / n as f32))
    }

    /// One step plus the metrics line it produces, if this step logs (or evaluates).
    pub fn step(&mut self) -> Result<Option<Metrics>> {
        let (loss, lr) = self.train_step()?;
        let last = self.step >= self.cfg.steps;
        let eval =
            last || (self.cfg.eval_every > 0 && self.step.is_multiple_of(self.cfg.eval_every));
        // The first step always logs, so that a user sees a loss within seconds of the start.
        let log = eval
            || self.step == 1
            || self.cfg.log_every <= 1
            || self.step.is_multiple_of(self.cfg.log_every);
        if !log {
            return Ok(None);
        }
        let val_loss = if eval { self.val_loss()? } else { None };
        let now = Instant::now();
        let tokens = (self.step - self.last_log.1) * self.cfg.batch_size * self.cfg.seq_len;
        let secs = now.duration_since(self.last_log.0).as_secs_f64().max(1e-9);
        self.last_log = (now, self.step);
        Ok(Some(Metrics {
            step: self.step,
            loss,
            val_loss,
            lr,
            tokens_per_s: tokens as f64 / secs,
            elapsed_s: now.duration_since(self.started).as_secs_f64(),
        }))
    }

    /// Runs to `steps`, passing each metrics line to `on_metrics` and checkpointing into `dir`
    /// (every `checkpoint_every` steps and at the end) when given.
    pub fn run(
        &mut self,
        dir: Option<&Path>,
        on_metrics: &mut dyn FnMut(&Metrics) -> Result<()>,
    ) -> Result<()> {
        while self.step < self.cfg.steps {
            if let Some(m) = self.step()? {
                on_metrics(&m)?;
            }
            let every = self.cfg.checkpoint_every;
            if let Some(dir) = dir
                && (self.step == self.cfg.steps || (every > 0 && self.step.is_multiple_of(every)))
            {
                self.save(dir)?;
            }
        }
        Ok(())
    }

    /// Writes `model.safetensors` (loadable for inference), `config.json`,
    /// `optimizer.safetensors` and `state.json` into `dir`, each atomically.
    pub fn save(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let weights = self.weights()?;
        write_atomic(&dir.join(MODEL_FILE), &save_model(&weights)?)?;
        let config = serde_json::to_vec_pretty(&weights.config)
            .map_err(|e| Error::Usage(format!("config: {e}")))?;
        write_atomic(&dir.join(CONFIG_FILE), &config)?;
        let specs = tensor_specs(&weights.config);
        let mut named = Vec::new();
        let mut data = Vec::new();
        for (spec, (m, v)) in specs.iter().zip(self.m.iter().zip(&self.v)) {
            data.push((
                spec,
                m.flatten_all()?.to_vec1::<f32>()?,
                v.flatten_all()?.to_vec1::<f32>()?,
            ));
        }
        for (spec, m, v) in &data {
            named.push((format!("m.{}", spec.name), spec.shape.clone(), m.as_slice()));
            named.push((format!("v.{}", spec.name), spec.shape.clone(), v.as_slice()));
        }
        write_atomic(
            &dir.join(OPTIMIZER_FILE),
            &save_tensors(&named, HashMap::new())?,
        )?;
        let state = TrainState {
            step: self.step,
            rng_state: self.rng.state(),
            config: self.cfg.clone(),
        };
        let state =
            serde_json::to_vec_pretty(&state).map_err(|e| Error::Usage(format!("state: {e}")))?;
        write_atomic(&dir.join(STATE_FILE), &state)
    }

    /// True when `dir` holds a checkpoint that [`Trainer::resume`] can continue.
    pub fn can_resume(dir: &Path) -> bool {
        [MODEL_FILE, OPTIMIZER_FILE, STATE_FILE]
            .iter()
            .all(|f| dir.join(f).is_file())
    }

    /// Continues the run saved in `dir` on `tokens`, with `cfg` (its `steps` may be raised to
    /// train longer; the step count, optimizer moments and batch RNG are restored).
    pub fn resume(dir: &Path, tokens: &[u32], cfg: TrainConfig) -> Result<Self> {
        let read = |f: &str| {
            let p = dir.join(f);
            std::fs::read(&p).map_err(|e| Error::io(&p, e))
        };
        let weights = load_model(&read(MODEL_FILE)?, None)?;
        let state: TrainState = serde_json::from_slice(&read(STATE_FILE)?).map_err(|e| {
            Error::format("training state", STATE_FILE, "valid JSON", e.to_string())
        })?;
        let (mut opt, _) = load_tensors(&read(OPTIMIZER_FILE)?)?;
        let device = Device::Cpu;
        let model = CandleModel::from_weights(&weights, &device)?;
        let (mut m, mut v) = (Vec::new(), Vec::new());
        for spec in tensor_specs(&weights.config) {
            for (prefix, out) in [("m", &mut m), ("v", &mut v)] {
                let name = format!("{prefix}.{}", spec.name);
                let (shape, data) = opt.remove(&name).ok_or_else(|| {
                    Error::format(
                        OPTIMIZER_FILE,
                        format!("tensor {name}"),
                        "present",
                        "missing",
                    )
                })?;
                if shape != spec.shape {
                    return Err(Error::format(
                        OPTIMIZER_FILE,
                        format!("tensor {name}"),
                        format!("shape {:?}", spec.shape),
                        format!("shape {shape:?}"),
                    ));
                }
                out.push(Tensor::from_vec(data, shape, &device)?);
            }
        }
        Self::assemble(model, m, v, tokens, cfg, state.step, Some(state.rng_state))
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
}

/// Sends one metrics line to `url` as a JSON POST (HTTP or HTTPS).
pub fn post_metrics(url: &str, metrics: &Metrics) -> Result<()> {
    ureq::post(url)
        .send_json(metrics)
        .map(|_| ())
        .map_err(|e| Error::Usage(format!("posting metrics to {url}: {e}")))
}
