//! `model-tiny train`: trains from scratch or from a checkpoint on a text corpus, printing
//! JSON-lines metrics on stdout (and POSTing them to a URL when asked).

use crate::args::Flags;
use crate::run::read;
use model_tiny::train::{Metrics, TrainConfig, Trainer, encode_corpus, post_metrics};
use model_tiny::{Config, Error, Result, Tokenizer, Weights, load_weights};
use std::path::Path;

const HELP: &str = "Usage: model-tiny train --data TEXT --tokenizer TOK.bin [options]
Model (one of; default: stories260K's shape with the tokenizer's vocabulary, random weights):
  --init CHECKPOINT      start from a llama2.c .bin or model-tiny .safetensors (fine-tuning)
  --model-config JSON    a Config JSON file (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
                         vocab_size, seq_len, shared_classifier) for training from scratch
Output:
  --out DIR              checkpoints: model.safetensors (+config.json, optimizer, state.json)
  --resume               continue the run saved in --out
  --metrics-url URL      also POST each metrics line as JSON to this http:// URL
Settings (defaults in brackets):
  --steps [200] --batch-size [8] --seq-len [128] --lr [1e-3] --min-lr [1e-4] --warmup [20]
  --weight-decay [0.1] --grad-clip [1.0] --val-fraction [0.1] --eval-every [50]
  --eval-batches [4] --log-every [10] --checkpoint-every [0 = at the end] --seed [1337]
Metrics: one JSON object per line on stdout:
  {\"step\", \"loss\", \"val_loss\" (null between evaluations), \"lr\", \"tokens_per_s\", \"elapsed_s\"}
";

const SETTINGS: &[&str] = &[
    "steps",
    "batch-size",
    "seq-len",
    "lr",
    "min-lr",
    "warmup",
    "weight-decay",
    "grad-clip",
    "val-fraction",
    "eval-every",
    "eval-batches",
    "log-every",
    "checkpoint-every",
    "seed",
];

pub fn config_from(flags: &Flags) -> Result<TrainConfig> {
    let d = TrainConfig::default();
    Ok(TrainConfig {
        steps: flags.num("steps", d.steps)?,
        batch_size: flags.num("batch-size", d.batch_size)?,
        seq_len: flags.num("seq-len", d.seq_len)?,
        learning_rate: flags.num("lr", d.learning_rate)?,
        min_lr: flags.num("min-lr", d.min_lr)?,
        warmup_steps: flags.num("warmup", d.warmup_steps)?,
        weight_decay: flags.num("weight-decay", d.weight_decay)?,
        grad_clip: flags.num("grad-clip", d.grad_clip)?,
        val_fraction: flags.num("val-fraction", d.val_fraction)?,
        eval_every: flags.num("eval-every", d.eval_every)?,
        eval_batches: flags.num("eval-batches", d.eval_batches)?,
        log_every: flags.num("log-every", d.log_every)?,
        checkpoint_every: flags.num("checkpoint-every", d.checkpoint_every)?,
        seed: flags.num("seed", d.seed)?,
        ..d
    })
}

pub fn main(args: &[String]) -> Result<()> {
    let flags = Flags::parse(args, &["resume", "help"])?;
    if flags.has("help") || args.is_empty() {
        eprint!("{HELP}");
        return Ok(());
    }
    let mut known = vec![
        "data",
        "tokenizer",
        "init",
        "model-config",
        "out",
        "resume",
        "metrics-url",
        "help",
    ];
    known.extend_from_slice(SETTINGS);
    flags.only(&known)?;
    let need = |name: &str| {
        flags
            .get(name)
            .ok_or_else(|| Error::Usage(format!("train: --{name} is required (see --help)")))
    };
    let data_path = need("data")?;
    let tokenizer = Tokenizer::from_bytes_all(&read(need("tokenizer")?)?)?;
    let text = String::from_utf8_lossy(&read(data_path)?).into_owned();
    let cfg = config_from(&flags)?;
    eprintln!(
        "model-tiny train: tokenising {data_path} ({} bytes)",
        text.len()
    );
    let tokens = encode_corpus(&tokenizer, &text);
    eprintln!("model-tiny train: {} tokens", tokens.len());
    let out = flags.get("out").map(Path::new);
    let mut trainer = match out {
        Some(dir) if flags.has("resume") && Trainer::can_resume(dir) => {
            let t = Trainer::resume(dir, &tokens, cfg)?;
            eprintln!(
                "model-tiny train: resuming {} at step {}",
                dir.display(),
                t.step_count()
            );
            t
        }
        _ => {
            let weights = initial_weights(&flags, tokenizer.vocab_size(), cfg.seed)?;
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
    let url = flags.get("metrics-url").map(str::to_string);
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

fn initial_weights(flags: &Flags, vocab_size: usize, seed: u64) -> Result<Weights> {
    if let Some(path) = flags.get("init") {
        return load_weights(&read(path)?);
    }
    let config = match flags.get("model-config") {
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
