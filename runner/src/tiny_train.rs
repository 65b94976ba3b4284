//! `onramp-runner tiny-train`: the child process of a tiny-train job. Trains model-tiny on this
//! machine's cores with the spec's settings, prints JSON-lines metrics, POSTs them to the edge
//! (`ONRAMP_REPORT_URL`, `ONRAMP_REPORT_TOKEN`) from a background thread so that a slow or absent
//! edge never slows or stops training, and writes the checkpoint into `--out`.

use crate::assets::Assets;
use crate::report::{self, MetricPoint, Report};
use crate::tiny_args::TinyArgs;
use crate::wire::ReportTarget;
use model_tiny::train::{Metrics, TrainConfig, Trainer, encode_corpus};
use model_tiny::{Config, Tokenizer, Weights, load_weights};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// Settings that training's libraries read from the environment before this code could set
/// them: mimalloc when the process starts, candle when its thread pool starts.
/// - mimalloc hands freed memory back to the kernel 10 ms after it is freed; a training step
///   frees and takes back the same tensors' megabytes every few milliseconds, so every step
///   faulted (and zeroed) them in again: most of the run's system time. `-1`: keep it.
/// - candle's pool workers spin 25,000 times before they sleep, waiting for the next op; between
///   ops the matrix products run on rayon's threads, and on a machine with few cores the
///   spinning workers took the cores those threads needed (a run on 2 busy cores took 2.5× as
///   long). 100 spins are still enough to catch the op that follows at once.
///
/// A value the environment already has is kept.
pub const TUNING: [(&str, &str); 2] = [
    ("MIMALLOC_PURGE_DELAY", "-1"),
    ("CANDLE_BARRIER_POOL_SPIN_LIMIT", "100"),
];

/// Starts this same command again, in this same process (its pid, its process group, its
/// files), with [`TUNING`] in its environment, unless it is there already. Returns only when
/// that is not needed or not possible (then training goes on untuned, and says so).
pub fn exec_tuned() {
    use std::os::unix::process::CommandExt;

    let missing: Vec<_> = TUNING
        .iter()
        .filter(|(k, _)| std::env::var_os(k).is_none())
        .collect();
    if missing.is_empty() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut args = std::env::args_os();
    let mut cmd = std::process::Command::new(exe);
    if let Some(arg0) = args.next() {
        cmd.arg0(arg0);
    }
    cmd.args(args);
    for (k, v) in missing {
        cmd.env(k, v);
    }
    let e = cmd.exec();
    eprintln!("tiny-train: going on without its tuned settings (cannot start again: {e})");
}

/// Runs the subcommand; the error is printed by `main` and makes the exit code 1.
pub fn main(args: &[String]) -> Result<(), String> {
    run(TinyArgs::parse(args)?)
}

/// Runs the subcommand with its parsed arguments.
pub fn run(args: TinyArgs) -> Result<(), String> {
    let assets = Assets {
        eval_tasks: None,
        root: args.assets.clone().unwrap_or_else(Assets::shared_default),
    };
    let target = report_target();
    let (tx, sender) = start_reporter(target.clone());
    let result = on_the_compute_threads(|| train(&args, &assets, &tx));
    // The checkpoint goes to the edge as the job's artifact `model.safetensors` (what the
    // playground opens and `onramp artifacts` downloads), while the job still runs. One that
    // cannot go stays here, served by the runner as before: the training itself succeeded.
    if let (Ok(()), Some(t), Some(dir)) = (&result, &target, args.out.as_deref()) {
        let file = dir.join(crate::store::CHECKPOINT_FILE);
        match crate::push::push_file(t, &file, crate::store::CHECKPOINT_FILE) {
            Ok(_) => eprintln!("tiny-train: the checkpoint was pushed to the edge"),
            Err(e) => eprintln!("tiny-train: the checkpoint could not be pushed to the edge: {e}"),
        }
    }
    if let Err(e) = &result {
        let _ = tx.send(Report {
            message: Some(format!("tiny-train failed: {e}")),
            ..Report::default()
        });
    }
    drop(tx);
    if let Some(h) = sender {
        // Every queued report goes out before the process ends (the runner reports the final
        // state after this exit, so metrics arrive first).
        let _ = h.join();
    }
    result
}

/// Runs `f` on one of the threads that the training's parallel work (matrix products, the
/// fused ops) runs on: this thread then works on that parallel work too instead of waiting for
/// it, and the process has one thread fewer competing for the cores.
fn on_the_compute_threads<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    match rayon::ThreadPoolBuilder::new().build() {
        Ok(pool) => pool.install(f),
        Err(_) => f(),
    }
}

fn report_target() -> Option<ReportTarget> {
    let url = std::env::var("ONRAMP_REPORT_URL")
        .ok()
        .filter(|u| !u.is_empty())?;
    let token = std::env::var("ONRAMP_REPORT_TOKEN").unwrap_or_default();
    Some(ReportTarget { url, token })
}

/// A thread that posts queued reports in order; without a target it drains them.
fn start_reporter(
    target: Option<ReportTarget>,
) -> (mpsc::Sender<Report>, Option<std::thread::JoinHandle<()>>) {
    let (tx, rx) = mpsc::channel::<Report>();
    let Some(target) = target else {
        return (tx, None);
    };
    let handle = std::thread::spawn(move || {
        while let Ok(first) = rx.recv() {
            // Points that queued up while a post was in flight go out together.
            let mut batch = vec![first];
            batch.extend(rx.try_iter());
            for r in coalesce(batch) {
                post(&target, &r);
            }
        }
    });
    (tx, Some(handle))
}

/// Joins runs of metrics-only reports into one, keeping their order and every other report.
fn coalesce(batch: Vec<Report>) -> Vec<Report> {
    let only_metrics = |r: &Report| r.state.is_none() && r.message.is_none();
    let mut out: Vec<Report> = Vec::new();
    for r in batch {
        match out.last_mut() {
            Some(last) if only_metrics(last) && only_metrics(&r) => last
                .metrics
                .get_or_insert_with(Vec::new)
                .extend(r.metrics.unwrap_or_default()),
            _ => out.push(r),
        }
    }
    out
}

fn post(target: &ReportTarget, r: &Report) {
    if let Err(e) = report::post_blocking(target, r, 2) {
        eprintln!("tiny-train: {e} (training goes on)");
    }
}

fn train(args: &TinyArgs, assets: &Assets, reports: &mpsc::Sender<Report>) -> Result<(), String> {
    let (weights, origin) = initial_weights(args, assets)?;
    let c = weights.config;
    let tok_path = assets.tokenizer(c.vocab_size).ok_or_else(|| {
        format!(
            "no tokenizer for a vocabulary of {} in {}",
            c.vocab_size,
            assets.root.join("models").display()
        )
    })?;
    let tokenizer = Tokenizer::from_bytes(&read(&tok_path)?, c.vocab_size)
        .map_err(|e| format!("{}: {e}", tok_path.display()))?;
    let data_path = dataset_path(&args.dataset, assets)?;
    let text = String::from_utf8_lossy(&read(&data_path)?).into_owned();
    let tokens = encode_corpus(&tokenizer, &text);
    let seq_len = args.seq_len.min(c.seq_len);
    eprintln!(
        "tiny-train: {} ({origin}, {} parameters) on {} ({} tokens), {} steps of {}x{seq_len}",
        args.model,
        c.n_params(),
        data_path.display(),
        tokens.len(),
        args.steps,
        args.micro_batch
    );
    let cfg = train_config(args, seq_len);
    let mut trainer = Trainer::new(&weights, &tokens, cfg).map_err(|e| e.to_string())?;
    let out = args.out.as_deref();
    trainer
        .run(out, &mut |m: &Metrics| {
            if let Ok(line) = serde_json::to_string(m) {
                println!("{line}");
            }
            let _ = reports.send(Report {
                metrics: Some(vec![point(m)]),
                ..Report::default()
            });
            Ok(())
        })
        .map_err(|e| e.to_string())?;
    if let Some(dir) = out {
        eprintln!(
            "tiny-train: checkpoint written to {}",
            dir.join(crate::store::CHECKPOINT_FILE).display()
        );
    }
    Ok(())
}

/// The spec's settings as model-tiny's; evaluation and logging scale with the run so that a
/// short test run and a long one both give a readable curve (about 40 points, 5 validations).
fn train_config(args: &TinyArgs, seq_len: usize) -> TrainConfig {
    let d = TrainConfig::default();
    TrainConfig {
        steps: args.steps,
        batch_size: args.micro_batch,
        seq_len,
        learning_rate: args.lr,
        min_lr: args.lr / 10.0,
        warmup_steps: args.warmup.min(args.steps.saturating_sub(1)),
        log_every: (args.steps / 40).max(1),
        eval_every: (args.steps / 5).max(1),
        seed: args.seed,
        weight_decay: args.weight_decay.unwrap_or(d.weight_decay),
        beta1: args.beta1.unwrap_or(d.beta1),
        beta2: args.beta2.unwrap_or(d.beta2),
        eps: args.eps.unwrap_or(d.eps),
        grad_clip: args.grad_clip.unwrap_or(d.grad_clip),
        ..d
    }
}

fn point(m: &Metrics) -> MetricPoint {
    MetricPoint {
        step: m.step as u64,
        loss: m.loss,
        val_loss: m.val_loss,
        lr: Some(m.lr),
        tokens_per_s: Some(m.tokens_per_s),
        elapsed_s: m.elapsed_s,
    }
}

/// The catalogue model's published weights when the assets have them (fine-tuning), else its
/// shape with random weights (training from scratch).
fn initial_weights(args: &TinyArgs, assets: &Assets) -> Result<(Weights, &'static str), String> {
    let m = jobspec::catalog::model(&args.model)
        .ok_or_else(|| format!("--model {:?} is not in the catalogue", args.model))?;
    if let Some(path) = assets.model(m.id) {
        let w = load_weights(&read(&path)?).map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok((w, "fine-tuning its published weights"));
    }
    let a = m.arch;
    let config = Config {
        dim: a.hidden as usize,
        hidden_dim: a.ffn as usize,
        n_layers: a.layers as usize,
        n_heads: a.heads as usize,
        n_kv_heads: a.kv_heads as usize,
        vocab_size: a.vocab as usize,
        seq_len: m.max_seq_len as usize,
        shared_classifier: a.tied_embeddings,
        ..Config::stories260k()
    };
    let w = Weights::random(config, args.seed).map_err(|e| e.to_string())?;
    Ok((w, "from scratch"))
}

/// A dataset id from the assets, or a path to a text file (the command line may name one; the
/// runner's API only passes ids).
fn dataset_path(dataset: &str, assets: &Assets) -> Result<PathBuf, String> {
    if let Some(p) = assets.dataset(dataset) {
        return Ok(p);
    }
    let p = Path::new(dataset);
    if p.is_file() {
        return Ok(p.to_path_buf());
    }
    Err(format!(
        "dataset {dataset:?} is neither an id in {} nor a file",
        assets.root.join("data").display()
    ))
}

fn read(p: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(steps: &[u64]) -> Report {
        Report {
            metrics: Some(
                steps
                    .iter()
                    .map(|&step| MetricPoint {
                        step,
                        loss: 1.0,
                        val_loss: None,
                        lr: None,
                        tokens_per_s: None,
                        elapsed_s: 0.0,
                    })
                    .collect(),
            ),
            ..Report::default()
        }
    }

    #[test]
    fn coalesces_metrics_but_keeps_messages_in_order() {
        let msg = Report {
            message: Some("failed".into()),
            ..Report::default()
        };
        let out = coalesce(vec![
            metrics(&[1]),
            metrics(&[2, 3]),
            msg.clone(),
            metrics(&[4]),
        ]);
        assert_eq!(out, vec![metrics(&[1, 2, 3]), msg, metrics(&[4])]);
    }

    #[test]
    fn the_train_config_follows_the_spec_and_scales_logging() {
        let args = TinyArgs::parse(
            &"--model stories260K --dataset d --steps 200 --micro-batch 4 --seq-len 64 --lr 0.002 --warmup 500"
                .split(' ')
                .map(String::from)
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let c = train_config(&args, 64);
        assert_eq!((c.steps, c.batch_size, c.seq_len), (200, 4, 64));
        assert_eq!((c.log_every, c.eval_every, c.warmup_steps), (5, 40, 199));
        assert_eq!(c.learning_rate, 0.002);
        // The optimizer's numbers the command leaves out are model-tiny's defaults.
        let d = TrainConfig::default();
        assert_eq!(
            (c.weight_decay, c.beta1, c.beta2, c.eps, c.grad_clip),
            (d.weight_decay, d.beta1, d.beta2, d.eps, d.grad_clip)
        );
    }

    /// A spec's optimizer numbers reach model-tiny through the command line jobspec writes.
    #[test]
    fn the_spec_s_optimizer_numbers_reach_the_train_config() {
        let spec = include_str!("../../jobspec/specs/tiny-train-stories260k.toml").replace(
            "precision = \"fp32\"",
            "precision = \"fp32\"\nweight_decay = 0.02\nadam_beta1 = 0.8\nadam_beta2 = 0.99\nadam_epsilon = 1e-6\nmax_grad_norm = 0.5",
        );
        let (v, diags) = jobspec::validate_toml(&spec);
        let line = jobspec::launch::torchrun_command(&v.unwrap_or_else(|| panic!("{diags:?}")));
        let words: Vec<String> = line
            .split_whitespace()
            .filter(|w| *w != "\\")
            .map(str::to_string)
            .collect();
        let args = TinyArgs::parse(&words[2..]).unwrap();
        let c = train_config(&args, 64);
        assert_eq!(
            (c.weight_decay, c.beta1, c.beta2, c.eps, c.grad_clip),
            (0.02, 0.8, 0.99, 1e-6, 0.5)
        );
        assert_eq!(TinyArgs::parse(&args.to_args()).unwrap(), args);
    }
}
