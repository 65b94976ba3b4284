//! The `onramp-runner tiny-train` command line, shared by both sides: the runner builds it from a
//! validated spec, the child parses it. The flags are those of `jobspec::launch`'s tiny-train
//! command (`--model --dataset --steps --micro-batch --seq-len --lr --warmup --seed`, and the
//! optimizer's numbers the spec sets), plus where to write the checkpoint (`--out`) and where
//! the models and corpora are (`--assets`).

use crate::assets::Assets;
use crate::error::ApiError;
use jobspec::spec::{ModelRef, Task};
use std::path::{Path, PathBuf};

/// A count of at least one.
pub fn positive(s: &str) -> Result<usize, String> {
    s.parse()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("`{s}` is not a positive number"))
}

/// What one tiny-train run does. Every flag but `--out`, `--assets`, `--seed` and the optimizer's
/// numbers (model-tiny's defaults, which are jobspec's) is required, so that a command line always
/// says what it trains.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct TinyArgs {
    /// A catalogue model id (`stories260K`, …): its shape, and its weights when the assets have
    /// them (then the run fine-tunes; otherwise it trains from scratch).
    #[arg(long, value_name = "ID")]
    pub model: String,
    /// A dataset id in the assets' `data/`, or (on the command line only) a path to a text file.
    #[arg(long, value_name = "ID|PATH")]
    pub dataset: String,
    /// Optimizer steps
    #[arg(long, value_name = "N", value_parser = positive)]
    pub steps: usize,
    /// Sequences per step
    #[arg(long, value_name = "N", value_parser = positive)]
    pub micro_batch: usize,
    /// Tokens per sequence
    #[arg(long, value_name = "N", value_parser = positive)]
    pub seq_len: usize,
    /// Peak learning rate
    #[arg(long, value_name = "F", value_parser = positive_rate)]
    pub lr: f64,
    /// Warm-up steps
    #[arg(long, value_name = "N")]
    pub warmup: usize,
    /// Seed of the weights' initialisation and the batches
    #[arg(long, value_name = "N", default_value_t = 1337)]
    pub seed: u64,
    /// AdamW's decoupled weight decay [default: model-tiny's, 0.1]
    #[arg(long, value_name = "F", value_parser = rate_at_least_zero)]
    pub weight_decay: Option<f64>,
    /// AdamW's β₁ [default: 0.9]
    #[arg(long, value_name = "F", value_parser = beta)]
    pub beta1: Option<f64>,
    /// AdamW's β₂ [default: 0.95]
    #[arg(long, value_name = "F", value_parser = beta)]
    pub beta2: Option<f64>,
    /// AdamW's ε [default: 1e-8]
    #[arg(long, value_name = "F", value_parser = positive_rate)]
    pub eps: Option<f64>,
    /// The gradient norm clipped to, 0 for none [default: 1.0]
    #[arg(long, value_name = "F", value_parser = rate_at_least_zero)]
    pub grad_clip: Option<f64>,
    /// Where to write the checkpoint
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Where the models and corpora are [default: $ONRAMP_SHARED, else ../shared]
    #[arg(long, value_name = "DIR")]
    pub assets: Option<PathBuf>,
}

/// A learning rate: a finite number above zero.
fn positive_rate(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|r| r.is_finite() && *r > 0.0)
        .ok_or_else(|| format!("`{s}` is not a positive number"))
}

/// A finite number of zero or more.
fn rate_at_least_zero(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|r| r.is_finite() && *r >= 0.0)
        .ok_or_else(|| format!("`{s}` is not a number of 0 or more"))
}

/// A moment's decay: at least 0 and below 1.
fn beta(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|r| (0.0..1.0).contains(r))
        .ok_or_else(|| format!("`{s}` is not a number from 0 to below 1"))
}

/// `TinyArgs` alone on a command line, for [`TinyArgs::parse`].
#[derive(clap::Parser)]
#[command(name = "onramp-runner tiny-train", no_binary_name = true)]
struct TinyCommand {
    #[command(flatten)]
    args: TinyArgs,
}

impl TinyArgs {
    /// Parses the flags (without the program and subcommand names).
    pub fn parse(args: &[String]) -> Result<TinyArgs, String> {
        use clap::Parser;
        TinyCommand::try_parse_from(args)
            .map(|c| c.args)
            .map_err(|e| e.to_string())
    }

    /// The flags, in the order `jobspec::launch` writes them.
    pub fn to_args(&self) -> Vec<String> {
        let mut v = vec![
            "--model".into(),
            self.model.clone(),
            "--dataset".into(),
            self.dataset.clone(),
            "--steps".into(),
            self.steps.to_string(),
            "--micro-batch".into(),
            self.micro_batch.to_string(),
            "--seq-len".into(),
            self.seq_len.to_string(),
            "--lr".into(),
            self.lr.to_string(),
            "--warmup".into(),
            self.warmup.to_string(),
            "--seed".into(),
            self.seed.to_string(),
        ];
        let optim = [
            ("--weight-decay", self.weight_decay),
            ("--beta1", self.beta1),
            ("--beta2", self.beta2),
            ("--eps", self.eps),
            ("--grad-clip", self.grad_clip),
        ];
        for (flag, value) in optim {
            if let Some(x) = value {
                v.push(flag.into());
                v.push(x.to_string());
            }
        }
        for (flag, path) in [("--out", &self.out), ("--assets", &self.assets)] {
            if let Some(p) = path {
                v.push(flag.into());
                v.push(p.display().to_string());
            }
        }
        v
    }

    /// The settings of a validated tiny-train spec. Errors are user errors (400), naming the key.
    pub fn from_spec(spec_toml: &str, assets: &Assets) -> Result<TinyArgs, ApiError> {
        let v = valid_spec(spec_toml)?;
        let s = v.spec();
        if s.task != Task::TinyTrain {
            return Err(ApiError::bad_request(
                "spec_toml",
                format!(
                    "this runner trains only task = \"tiny-train\" specs (got \"{}\")",
                    s.task.as_str()
                ),
            ));
        }
        if v.card().is_gpu {
            return Err(ApiError::bad_request(
                "spec_toml",
                format!(
                    "this runner has no GPUs; the spec asks for {}",
                    v.card().display
                ),
            ));
        }
        let model = match &s.model {
            ModelRef::Id(id) => id.clone(),
            ModelRef::Custom(_) => {
                return Err(ApiError::bad_request(
                    "spec_toml",
                    "tiny-train needs a catalogue model (stories260K, stories15M, …)",
                ));
            }
        };
        if assets.dataset(&s.data.dataset).is_none() {
            return Err(ApiError::bad_request(
                "spec_toml",
                format!(
                    "data.dataset {:?} is not on this runner; it has: {}",
                    s.data.dataset,
                    assets.dataset_ids().join(", ")
                ),
            ));
        }
        let arch = v.arch();
        let vocab = arch.vocab as usize;
        if assets.tokenizer(vocab).is_none() {
            return Err(ApiError::unavailable(
                "assets_missing",
                format!(
                    "this runner has no tokenizer for a vocabulary of {vocab} in {}",
                    assets.root.join("models").display()
                ),
            ));
        }
        let steps = usize::try_from(v.steps()).unwrap_or(usize::MAX);
        Ok(TinyArgs {
            model,
            dataset: s.data.dataset.clone(),
            steps,
            micro_batch: s.train.micro_batch as usize,
            seq_len: s.data.seq_len as usize,
            lr: s.train.lr,
            warmup: usize::try_from(s.train.warmup).unwrap_or(usize::MAX),
            seed: s.train.seed,
            weight_decay: s.train.weight_decay,
            beta1: s.train.adam_beta1,
            beta2: s.train.adam_beta2,
            eps: s.train.adam_epsilon,
            grad_clip: s.train.max_grad_norm,
            out: None,
            assets: None,
        })
    }
}

/// The spec, validated; else a 400 with the first error's place and every error in details.
fn valid_spec(spec_toml: &str) -> Result<jobspec::ValidSpec, ApiError> {
    let plan = jobspec::plan_toml(spec_toml);
    plan.valid.ok_or_else(|| {
        let diags: Vec<_> = plan
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(jobspec::DiagnosticWire::from)
            .collect();
        let first = diags.first().map_or_else(String::new, |d| {
            format!(": {} (line {}, column {})", d.message, d.line, d.column)
        });
        ApiError::bad_request("spec_toml", format!("the spec is not valid{first}"))
            .with_details(serde_json::json!({"field": "spec_toml", "diagnostics": diags}))
    })
}

/// The child's argv for a tiny-train job: the runner itself with the spec's settings.
pub fn runner_argv(exe: &Path, assets: &Assets, spec_toml: &str) -> Result<Vec<String>, ApiError> {
    let mut args = TinyArgs::from_spec(spec_toml, assets)?;
    args.out = Some(PathBuf::from(crate::store::CHECKPOINT_DIR));
    args.assets = Some(assets.root.clone());
    let mut argv = vec![exe.display().to_string(), "tiny-train".into()];
    argv.extend(args.to_args());
    Ok(argv)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = include_str!("../../jobspec/specs/tiny-train-stories260k.toml");

    fn strings(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn parses_the_command_line_that_jobspec_generates() {
        let (valid, _) = jobspec::validate_toml(SPEC);
        let line = jobspec::launch::torchrun_command(&valid.unwrap());
        let words: Vec<String> = line
            .split_whitespace()
            .filter(|w| *w != "\\")
            .map(str::to_string)
            .collect();
        assert_eq!(&words[..2], ["onramp-runner", "tiny-train"]);
        let a = TinyArgs::parse(&words[2..]).unwrap();
        assert_eq!(a.model, "stories260K");
        assert_eq!(a.dataset, "tinyshakespeare");
        assert_eq!(
            (a.steps, a.micro_batch, a.seq_len, a.warmup),
            (200, 8, 256, 10)
        );
        // The spec's seed, its default when it names none.
        assert_eq!(a.seed, jobspec::spec::DEFAULT_SEED);
        assert_eq!(TinyArgs::parse(&a.to_args()).unwrap(), a);
        let seeded = SPEC.replace("warmup = 10", "warmup = 10\nseed = 7");
        let (valid, _) = jobspec::validate_toml(&seeded);
        let line = jobspec::launch::torchrun_command(&valid.unwrap());
        assert!(line.contains("--seed 7"), "{line}");
    }

    #[test]
    fn refuses_bad_flags_with_their_name() {
        let e = TinyArgs::parse(&strings(&["--model", "m", "--frob", "1"])).unwrap_err();
        assert!(e.contains("--frob"), "{e}");
        let e = TinyArgs::parse(&strings(&["--model", "m"])).unwrap_err();
        assert!(e.contains("--dataset"), "{e}");
        let mut ok = strings(&[
            "--model",
            "m",
            "--dataset",
            "d",
            "--steps",
            "x",
            "--micro-batch",
            "1",
            "--seq-len",
            "8",
            "--lr",
            "0.1",
            "--warmup",
            "0",
        ]);
        let e = TinyArgs::parse(&ok).unwrap_err();
        assert!(e.contains("'x'") && e.contains("--steps"), "{e}");
        ok[5] = "0".into();
        assert!(TinyArgs::parse(&ok).is_err());
    }

    #[test]
    fn a_gpu_spec_or_unknown_dataset_is_a_bad_request() {
        let tmp = std::env::temp_dir().join(format!("runner-tiny-args-{}", std::process::id()));
        std::fs::create_dir_all(tmp.join("data")).unwrap();
        std::fs::create_dir_all(tmp.join("models")).unwrap();
        std::fs::write(tmp.join("data/tinyshakespeare.txt"), "x").unwrap();
        std::fs::write(tmp.join("models/tok512.bin"), "x").unwrap();
        let assets = Assets {
            root: tmp.clone(),
            eval_tasks: None,
        };
        let a = TinyArgs::from_spec(SPEC, &assets).unwrap();
        assert_eq!(a.steps, 200);
        // The runner's own command line carries the spec's seed and optimizer numbers.
        let tuned = SPEC.replace("warmup = 10", "warmup = 10\nseed = 9\nadam_beta2 = 0.99");
        let t = TinyArgs::from_spec(&tuned, &assets).unwrap();
        assert_eq!((t.seed, t.beta2, t.beta1), (9, Some(0.99), None));
        let other = SPEC.replace("\"tinyshakespeare\"", "\"wikitext\"");
        let e = TinyArgs::from_spec(&other, &assets).unwrap_err();
        assert!(
            e.message.contains("wikitext") && e.message.contains("tinyshakespeare"),
            "{e:?}"
        );
        let e = TinyArgs::from_spec("name = 1", &assets).unwrap_err();
        assert_eq!(e.status, 400);
        assert!(
            e.details["diagnostics"]
                .as_array()
                .is_some_and(|d| !d.is_empty()),
            "{e:?}"
        );
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
