//! `model-tiny train`: trains from scratch or from a checkpoint on a text corpus, printing
//! JSON-lines metrics on stdout (and POSTing them to a URL when asked).

use crate::run::read;
use model_tiny::train::{Metrics, TrainConfig, Trainer, encode_corpus, post_metrics};
use model_tiny::{Config, Error, Result, Tokenizer, Weights, load_weights};
use std::path::Path;

/// `model-tiny train`'s command line.
#[derive(Debug, clap::Args)]
#[command(after_help = "Metrics: one JSON object per line on stdout: \
{\"step\", \"loss\", \"val_loss\" (null between evaluations), \"lr\", \"tokens_per_s\", \"elapsed_s\"}")]
pub struct TrainArgs {
    /// The text corpus
    #[arg(long, value_name = "TEXT")]
    data: String,
    /// The tokenizer (llama2.c tokenizer.bin format)
    #[arg(long, value_name = "TOK.bin")]
    tokenizer: String,
    /// Start from a llama2.c .bin or model-tiny .safetensors (fine-tuning) [default: stories260K's
    /// shape with the tokenizer's vocabulary, random weights]
    #[arg(long, value_name = "CHECKPOINT", conflicts_with = "model_config")]
    init: Option<String>,
    /// A Config JSON file (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len,
    /// shared_classifier) for training from scratch
    #[arg(long, value_name = "JSON")]
    model_config: Option<String>,
    /// Checkpoints: model.safetensors (+config.json, optimizer, state.json)
    #[arg(long, value_name = "DIR")]
    out: Option<String>,
    /// Continue the run saved in --out
    #[arg(long)]
    resume: bool,
    /// Also POST each metrics line as JSON to this http:// URL
    #[arg(long, value_name = "URL")]
    metrics_url: Option<String>,
    #[command(flatten)]
    settings: Settings,
}

/// The training settings; their defaults are `TrainConfig::default()`'s.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Settings")]
struct Settings {
    #[arg(long, value_name = "N", default_value_t = TrainConfig::default().steps)]
    steps: usize,
    #[arg(long, value_name = "N", default_value_t = TrainConfig::default().batch_size)]
    batch_size: usize,
    #[arg(long, value_name = "N", default_value_t = TrainConfig::default().seq_len)]
    seq_len: usize,
    #[arg(long, value_name = "F", default_value_t = TrainConfig::default().learning_rate)]
    lr: f64,
    #[arg(long, value_name = "F", default_value_t = TrainConfig::default().min_lr)]
    min_lr: f64,
    #[arg(long, value_name = "N", default_value_t = TrainConfig::default().warmup_steps)]
    warmup: usize,
    #[arg(long, value_name = "F", default_value_t = TrainConfig::default().weight_decay)]
    weight_decay: f64,
    #[arg(long, value_name = "F", default_value_t = TrainConfig::default().grad_clip)]
    grad_clip: f64,
    #[arg(long, value_name = "F", default_value_t = TrainConfig::default().val_fraction)]
    val_fraction: f64,
    #[arg(long, value_name = "N", default_value_t = TrainConfig::default().eval_every)]
    eval_every: usize,
    #[arg(long, value_name = "N", default_value_t = TrainConfig::default().eval_batches)]
    eval_batches: usize,
    #[arg(long, value_name = "N", default_value_t = TrainConfig::default().log_every)]
    log_every: usize,
    /// 0 = at the end
    #[arg(long, value_name = "N", default_value_t = TrainConfig::default().checkpoint_every)]
    checkpoint_every: usize,
    #[arg(long, value_name = "N", default_value_t = TrainConfig::default().seed)]
    seed: u64,
}

impl Settings {
    fn config(&self) -> TrainConfig {
        TrainConfig {
            steps: self.steps,
            batch_size: self.batch_size,
            seq_len: self.seq_len,
            learning_rate: self.lr,
            min_lr: self.min_lr,
            warmup_steps: self.warmup,
            weight_decay: self.weight_decay,
            grad_clip: self.grad_clip,
            val_fraction: self.val_fraction,
            eval_every: self.eval_every,
            eval_batches: self.eval_batches,
            log_every: self.log_every,
            checkpoint_every: self.checkpoint_every,
            seed: self.seed,
            ..TrainConfig::default()
        }
    }
}

pub fn main(args: TrainArgs) -> Result<()> {
    let data_path = &args.data;
    let tokenizer = Tokenizer::from_bytes_all(&read(&args.tokenizer)?)?;
    let text = String::from_utf8_lossy(&read(data_path)?).into_owned();
    let cfg = args.settings.config();
    eprintln!(
        "model-tiny train: tokenising {data_path} ({} bytes)",
        text.len()
    );
    let tokens = encode_corpus(&tokenizer, &text);
    eprintln!("model-tiny train: {} tokens", tokens.len());
    let out = args.out.as_deref().map(Path::new);
    let mut trainer = match out {
        Some(dir) if args.resume && Trainer::can_resume(dir) => {
            let t = Trainer::resume(dir, &tokens, cfg)?;
            eprintln!(
                "model-tiny train: resuming {} at step {}",
                dir.display(),
                t.step_count()
            );
            t
        }
        _ => {
            let weights = initial_weights(&args, tokenizer.vocab_size(), cfg.seed)?;
            if weights.config.vocab_size != tokenizer.vocab_size() {
                return Err(Error::Usage(format!(
                    "the model's vocabulary ({}) differs from the tokenizer's ({})",
                    weights.config.vocab_size,
                    tokenizer.vocab_size()
                )));
            }
            eprintln!(
                "model-tiny train: {:?}, {} parameters",
                weights.config,
                weights.config.n_params()
            );
            Trainer::new(&weights, &tokens, cfg)?
        }
    };
    let url = args.metrics_url.clone();
    trainer.run(out, &mut |m: &Metrics| {
        let line = serde_json::to_string(m).map_err(|e| Error::Usage(e.to_string()))?;
        println!("{line}");
        if let Some(url) = &url {
            // A metrics sink that is down must not kill the training run.
            if let Err(e) = post_metrics(url, m) {
                eprintln!("model-tiny train: {e}");
            }
        }
        Ok(())
    })?;
    if let Some(dir) = out {
        eprintln!(
            "model-tiny train: checkpoint in {}",
            dir.join("model.safetensors").display()
        );
    }
    Ok(())
}

fn initial_weights(args: &TrainArgs, vocab_size: usize, seed: u64) -> Result<Weights> {
    if let Some(path) = &args.init {
        return load_weights(&read(path)?);
    }
    let config = match &args.model_config {
        Some(path) => {
            let json = String::from_utf8_lossy(&read(path)?).into_owned();
            model_tiny::checkpoint::parse_config(&json)?
        }
        None => Config {
            vocab_size,
            ..Config::stories260k()
        },
    };
    Weights::random(config, seed)
}

/// `bench --train-steps N`: training tokens/s fine-tuning stories260K on tinyshakespeare.
pub fn bench(models: &str, data: &str, steps: usize, json: bool) -> Result<()> {
    let weights = load_weights(&read(&format!("{models}/stories260K.bin"))?)?;
    let tokenizer = Tokenizer::from_bytes(&read(&format!("{models}/tok512.bin"))?, 512)?;
    let text = String::from_utf8_lossy(&read(data)?).into_owned();
    let tokens = encode_corpus(&tokenizer, &text);
    let cfg = TrainConfig {
        steps: steps + 1,
        log_every: 1,
        eval_every: 0,
        ..TrainConfig::default()
    };
    let mut trainer = Trainer::new(&weights, &tokens, cfg.clone())?;
    trainer.step()?; // The first step pays for allocation; leave it out.
    let t0 = std::time::Instant::now();
    for _ in 0..steps {
        trainer.train_step()?;
    }
    let tps = (steps * cfg.batch_size * cfg.seq_len) as f64 / t0.elapsed().as_secs_f64();
    if json {
        let v = serde_json::json!({
            "bench": "train", "model": "stories260K", "batch_size": cfg.batch_size,
            "seq_len": cfg.seq_len, "steps": steps, "tokens_per_s": tps,
        });
        println!("{v}");
    } else {
        println!(
            "train stories260K  batch {}x{}  {tps:.0} tokens/s over {steps} steps",
            cfg.batch_size, cfg.seq_len
        );
    }
    Ok(())
}
