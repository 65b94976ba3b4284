//! `model-tiny bench`: single-thread generation tokens/s on stories260K and on a random
//! stories15M-shaped model, next to llama2.c's run.c when its binary is given.

use crate::args::Flags;
use crate::run::read;
use model_tiny::bench::{bench_sampler, random_15m};
use model_tiny::{Error, Result, Weights, llama2c, load_weights};
use std::process::Command;

const HELP: &str = "Usage: model-tiny bench [--models DIR] [--run-c PATH] [--repeats N] [--json] [--train-steps N]
  --models DIR     where stories260K.bin, tok512.bin and tokenizer.bin are (default ../shared/models)
  --run-c PATH     llama2.c's run binary (default: $LLAMA2C_RUN if set); measured in the same run
  --repeats N      runs per figure, the median is reported (default 5)
  --train-steps N  also measure training tokens/s over N steps (default 0: skip)
  --data FILE      training corpus for --train-steps (default ../shared/data/tinyshakespeare.txt)
  --json           one JSON object per line instead of text
";

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    xs.get(xs.len() / 2).copied().unwrap_or(0.0)
}

/// Median of `bin`'s own "achieved tok/s" over `repeats` runs with the benchmark's sampling.
/// Our binary is measured the same way as run.c's, so both pay for printing alike.
fn measure(bin: &str, model: &str, tokenizer: &str, random: bool, repeats: usize) -> Result<f64> {
    let s = bench_sampler(random);
    let (t, p, seed) = (
        s.temperature.to_string(),
        s.topp.to_string(),
        s.seed.to_string(),
    );
    let mut runs = Vec::new();
    for _ in 0..repeats {
        let out = Command::new(bin)
            .args([
                model, "-z", tokenizer, "-t", &t, "-p", &p, "-s", &seed, "-n", "256",
            ])
            .output()
            .map_err(|e| Error::io(bin, e))?;
        let err = String::from_utf8_lossy(&out.stderr);
        let v = err
            .lines()
            .find_map(|l| l.strip_prefix("achieved tok/s: "))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .ok_or_else(|| Error::Usage(format!("{bin} printed no tok/s: {err}")))?;
        runs.push(v);
    }
    Ok(median(runs))
}

pub fn main(args: &[String]) -> Result<()> {
    let flags = Flags::parse(args, &["json", "help"])?;
    if flags.has("help") {
        eprint!("{HELP}");
        return Ok(());
    }
    flags.only(&[
        "models",
        "run-c",
        "repeats",
        "json",
        "help",
        "train-steps",
        "data",
    ])?;
    let dir = flags
        .get("models")
        .unwrap_or("../shared/models")
        .to_string();
    let runc = flags
        .get("run-c")
        .map(str::to_string)
        .or_else(|| std::env::var("LLAMA2C_RUN").ok());
    let repeats = flags.num("repeats", 5usize)?.max(1);
    let json = flags.has("json");

    let me = std::env::current_exe()
        .map_err(|e| Error::io("current executable", e))?
        .display()
        .to_string();
    let m260 = format!("{dir}/stories260K.bin");
    let w260 = load_weights(&read(&m260)?)?;
    let w15 = random_15m()?;
    let tmp = std::env::temp_dir().join(format!("model-tiny-bench-{}.bin", std::process::id()));
    let cases = [
        (
            "stories260K",
            &w260,
            m260.clone(),
            format!("{dir}/tok512.bin"),
        ),
        (
            "random-15M-shape",
            &w15,
            tmp.display().to_string(),
            format!("{dir}/tokenizer.bin"),
        ),
    ];
    for (name, weights, path, tok) in cases {
        let random = name != "stories260K";
        if random {
            std::fs::write(&tmp, llama2c::export_v0(weights)).map_err(|e| Error::io(&tmp, e))?;
        }
        let result = (|| -> Result<(f64, Option<f64>)> {
            let mut ours = Vec::new();
            let mut theirs = Vec::new();
            // Alternate the two programs so that a busy machine slows both alike.
            for _ in 0..repeats {
                ours.push(measure(&me, &path, &tok, random, 1)?);
                if let Some(bin) = &runc {
                    theirs.push(measure(bin, &path, &tok, random, 1)?);
                }
            }
            Ok((median(ours), (!theirs.is_empty()).then(|| median(theirs))))
        })();
        if random {
            let _ = std::fs::remove_file(&tmp);
        }
        let (ours, theirs) = result?;
        report(json, name, ours, theirs);
    }
    let train_steps = flags.num("train-steps", 0usize)?;
    if train_steps > 0 {
        let data = flags
            .get("data")
            .unwrap_or("../shared/data/tinyshakespeare.txt");
        crate::train::bench(&dir, data, train_steps, json)?;
    }
    Ok(())
}

fn report(json: bool, name: &str, ours: f64, run_c: Option<f64>) {
    let ratio = run_c.map(|r| ours / r);
    if json {
        let v = serde_json::json!({
            "bench": "generate", "model": name, "threads": 1,
            "tokens_per_s": ours, "run_c_tokens_per_s": run_c, "ratio": ratio,
        });
        println!("{v}");
    } else {
        match (run_c, ratio) {
            (Some(r), Some(x)) => println!(
                "{name:<18} model-tiny {ours:>9.1} tok/s   run.c {r:>9.1} tok/s   ratio {x:.2}x"
            ),
            _ => println!("{name:<18} model-tiny {ours:>9.1} tok/s   (run.c not given)"),
        }
    }
}

const RANDOM_HELP: &str =
    "Usage: model-tiny random --out PATH [--seed N] [--format v0|v1|safetensors]
  Writes the random-weight stories15M-shaped model (dim 288, hidden 768, 6 layers, 6 heads,
  vocab 32000, seq 256) drawn from the seed (default: the benchmark's).
";

/// `model-tiny random`: writes the benchmark's random 15M-shaped model, e.g. for run.c.
pub fn random(args: &[String]) -> Result<()> {
    let flags = Flags::parse(args, &["help"])?;
    flags.only(&["out", "seed", "format", "help"])?;
    let Some(out) = flags.get("out").filter(|_| !flags.has("help")) else {
        eprint!("{RANDOM_HELP}");
        return Ok(());
    };
    let seed = flags.num("seed", model_tiny::bench::BENCH_SEED)?;
    let weights = Weights::random(model_tiny::Config::stories15m(), seed)?;
    let bytes = match flags.get("format").unwrap_or("v0") {
        "v0" => llama2c::export_v0(&weights),
        "v1" => llama2c::export_v1(&weights),
        "safetensors" => model_tiny::checkpoint::save_model(&weights)?,
        f => {
            return Err(Error::Usage(format!(
                "--format: unknown {f:?}; use v0, v1 or safetensors"
            )));
        }
    };
    std::fs::write(out, bytes).map_err(|e| Error::io(out, e))
}
