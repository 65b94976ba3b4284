//! The `onramp-runner tiny-train` command line, shared by both sides: the runner builds it from a
//! validated spec, the child parses it. The flags are those of `jobspec::launch`'s tiny-train
//! command (`--model --dataset --steps --micro-batch --seq-len --lr --warmup`), plus where to
//! write the checkpoint (`--out`) and where the models and corpora are (`--assets`).

use crate::assets::Assets;
use crate::error::ApiError;
use crate::jobs::Runner;
use jobspec::spec::{ModelRef, Task};
use std::path::PathBuf;

/// What one tiny-train run does.
#[derive(Debug, Clone, PartialEq)]
pub struct TinyArgs {
    /// A catalogue model id (`stories260K`, …): its shape, and its weights when the assets have
    /// them (then the run fine-tunes; otherwise it trains from scratch).
    pub model: String,
    /// A dataset id in the assets' `data/`, or (on the command line only) a path to a text file.
    pub dataset: String,
    pub steps: usize,
    pub micro_batch: usize,
    pub seq_len: usize,
    pub lr: f64,
    pub warmup: usize,
    pub seed: u64,
    pub out: Option<PathBuf>,
    pub assets: Option<PathBuf>,
}

pub const USAGE: &str = "usage: onramp-runner tiny-train --model ID --dataset ID|PATH --steps N \
    --micro-batch N --seq-len N --lr F --warmup N [--seed N] [--out DIR] [--assets DIR]
  reports to $ONRAMP_REPORT_URL with $ONRAMP_REPORT_TOKEN when set";

impl TinyArgs {
    /// Parses the flags; every one but `--out`, `--assets` and `--seed` is required, so that a
    /// command line always says exactly what it trains.
    pub fn parse(args: &[String]) -> Result<TinyArgs, String> {
        let mut map = std::collections::BTreeMap::new();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            if flag == "-h" || flag == "--help" {
                return Err(USAGE.into());
            }
            let name = flag
                .strip_prefix("--")
                .ok_or_else(|| format!("unexpected argument {flag:?}\n{USAGE}"))?;
            const KNOWN: &[&str] = &[
                "model",
                "dataset",
                "steps",
                "micro-batch",
                "seq-len",
                "lr",
                "warmup",
                "seed",
                "out",
                "assets",
            ];
            if !KNOWN.contains(&name) {
                return Err(format!("unknown flag {flag:?}\n{USAGE}"));
            }
            let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
            map.insert(name.to_string(), value.clone());
        }
        let text = |k: &str| {
            map.get(k)
                .cloned()
                .ok_or_else(|| format!("--{k} is required\n{USAGE}"))
        };
        fn num<T: std::str::FromStr>(k: &str, v: String) -> Result<T, String> {
            v.parse()
                .map_err(|_| format!("--{k} {v:?} is not a valid number"))
        }
        let a = TinyArgs {
            model: text("model")?,
            dataset: text("dataset")?,
            steps: num("steps", text("steps")?)?,
            micro_batch: num("micro-batch", text("micro-batch")?)?,
            seq_len: num("seq-len", text("seq-len")?)?,
            lr: num("lr", text("lr")?)?,
            warmup: num("warmup", text("warmup")?)?,
            seed: map
                .get("seed")
                .map_or(Ok(1337), |v| num("seed", v.clone()))?,
            out: map.get("out").map(PathBuf::from),
            assets: map.get("assets").map(PathBuf::from),
        };
        if a.steps == 0 || a.micro_batch == 0 || a.seq_len == 0 {
            return Err("--steps, --micro-batch and --seq-len must be at least 1".into());
        }
        if !(a.lr.is_finite() && a.lr > 0.0) {
            return Err(format!("--lr must be a positive number (got {})", a.lr));
        }
        Ok(a)
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
        let plan = jobspec::plan_toml(spec_toml);
        let Some(v) = plan.valid else {
            let diags: Vec<_> = plan
                .diagnostics
                .iter()
                .filter(|d| d.is_error())
                .map(jobspec::DiagnosticWire::from)
                .collect();
            let first = diags.first().map_or_else(String::new, |d| {
                format!(": {} (line {}, column {})", d.message, d.line, d.column)
            });
            return Err(ApiError::bad_request(
                "spec_toml",
                format!("the spec is not valid{first}"),
            )
            .with_details(serde_json::json!({"field": "spec_toml", "diagnostics": diags})));
        };
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
            seed: 1337,
            out: None,
            assets: None,
        })
    }
}

/// The child's argv for a tiny-train job: the runner itself with the spec's settings.
pub fn runner_argv(runner: &Runner, spec_toml: &str) -> Result<Vec<String>, ApiError> {
    let mut args = TinyArgs::from_spec(spec_toml, &runner.assets)?;
    args.out = Some(PathBuf::from(crate::store::CHECKPOINT_DIR));
    args.assets = Some(runner.assets.root.clone());
    let mut argv = vec![runner.exe.display().to_string(), "tiny-train".into()];
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
        assert_eq!(TinyArgs::parse(&a.to_args()).unwrap(), a);
    }

    #[test]
    fn refuses_bad_flags_with_their_name() {
        let e = TinyArgs::parse(&strings(&["--model", "m", "--frob", "1"])).unwrap_err();
        assert!(e.contains("--frob"), "{e}");
        let e = TinyArgs::parse(&strings(&["--model", "m"])).unwrap_err();
        assert!(e.contains("--dataset is required"), "{e}");
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
        assert!(TinyArgs::parse(&ok).unwrap_err().contains("--steps \"x\""));
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
        let assets = Assets { root: tmp.clone() };
        let a = TinyArgs::from_spec(SPEC, &assets).unwrap();
        assert_eq!(a.steps, 200);
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
