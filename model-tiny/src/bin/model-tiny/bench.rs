//! `model-tiny bench`: single-thread generation tokens/s on stories260K, on a random
//! stories15M-shaped model, and on a random 100M-parameter Llama that model-tiny loads from the
//! Hugging Face format (run.c runs the same weights exported to its own), next to llama2.c's run.c
//! when its binary is given.

use model_tiny::bench::{bench_sampler, random_15m, random_100m};
use model_tiny::{Error, Result, Weights, llama2c};
use std::process::Command;

/// `model-tiny bench`'s command line.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Where stories260K.bin, tok512.bin and tokenizer.bin are
    #[arg(long, value_name = "DIR", default_value = "../shared/models")]
    models: String,
    /// llama2.c's run binary, measured in the same run [default: $LLAMA2C_RUN if set]
    #[arg(long, value_name = "PATH")]
    run_c: Option<String>,
    /// Runs per figure; the median is reported
    #[arg(long, value_name = "N", default_value_t = 5)]
    repeats: usize,
    /// Also measure training tokens/s over N steps (0: skip)
    #[arg(long, value_name = "N", default_value_t = 0)]
    train_steps: usize,
    /// Training corpus for --train-steps
    #[arg(
        long,
        value_name = "FILE",
        default_value = "../shared/data/tinyshakespeare.txt"
    )]
    data: String,
    /// One JSON object per line instead of text
    #[arg(long)]
    json: bool,
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    xs.get(xs.len() / 2).copied().unwrap_or(0.0)
}

/// Median of `bin`'s own "achieved tok/s" over `repeats` runs with the benchmark's sampling.
/// Our binary is measured the same way as run.c's, so both pay for printing alike.
fn measure(bin: &str, model: &str, tokenizer: &str, random: bool, steps: usize) -> Result<f64> {
    let s = bench_sampler(random);
    let (t, p, seed) = (
        s.temperature.to_string(),
        s.topp.to_string(),
        s.seed.to_string(),
    );
    let n = steps.to_string();
    let out = Command::new(bin)
        .args([
            model, "-z", tokenizer, "-t", &t, "-p", &p, "-s", &seed, "-n", &n,
        ])
        .output()
        .map_err(|e| Error::io(bin, e))?;
    let err = String::from_utf8_lossy(&out.stderr);
    err.lines()
        .find_map(|l| l.strip_prefix("achieved tok/s: "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .ok_or_else(|| Error::Usage(format!("{bin} printed no tok/s: {err}")))
}

/// One benchmark model: the file (or folder) model-tiny runs, the file run.c runs, its
/// tokenizer and how many positions each run generates.
struct Case {
    name: &'static str,
    ours: String,
    theirs: String,
    tokenizer: String,
    steps: usize,
}

/// Writes the random models where the benchmark runs them: the 15M one in llama2.c's format,
/// the 100M one as a Hugging Face folder and in llama2.c's format for run.c.
fn write_random(dir: &std::path::Path) -> Result<()> {
    let put = |name: &str, bytes: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| Error::io(&path, e))
    };
    std::fs::create_dir_all(dir.join("hf")).map_err(|e| Error::io(dir, e))?;
    put("15m.bin", &llama2c::export_v0(&random_15m()?)?)?;
    let w100 = random_100m()?;
    put("100m.bin", &llama2c::export_v0(&w100)?)?;
    let (config, safetensors) = model_tiny::hf::save(&w100)?;
    drop(w100);
    put("hf/config.json", config.as_bytes())?;
    put("hf/model.safetensors", &safetensors)
}

pub fn main(args: BenchArgs) -> Result<()> {
    let dir = args.models;
    let runc = args.run_c.or_else(|| std::env::var("LLAMA2C_RUN").ok());
    let repeats = args.repeats.max(1);
    let json = args.json;

    let me = std::env::current_exe()
        .map_err(|e| Error::io("current executable", e))?
        .display()
        .to_string();
    let tmp = std::env::temp_dir().join(format!("model-tiny-bench-{}", std::process::id()));
    let result = write_random(&tmp).and_then(|()| {
        let at = |name: &str| tmp.join(name).display().to_string();
        let m260 = format!("{dir}/stories260K.bin");
        let cases = [
            Case {
                name: "stories260K",
                ours: m260.clone(),
                theirs: m260,
                tokenizer: format!("{dir}/tok512.bin"),
                steps: 256,
            },
            Case {
                name: "random-15M-shape",
                ours: at("15m.bin"),
                theirs: at("15m.bin"),
                tokenizer: format!("{dir}/tokenizer.bin"),
                steps: 256,
            },
            Case {
                name: "random-100M-hf",
                ours: at("hf"),
                theirs: at("100m.bin"),
                tokenizer: format!("{dir}/tokenizer.bin"),
                steps: 64,
            },
        ];
        for case in cases {
            let random = case.name != "stories260K";
            let mut ours = Vec::new();
            let mut theirs = Vec::new();
            // Alternate the two programs so that a busy machine slows both alike.
            for _ in 0..repeats {
                ours.push(measure(
                    &me,
                    &case.ours,
                    &case.tokenizer,
                    random,
                    case.steps,
                )?);
                if let Some(bin) = &runc {
                    theirs.push(measure(
                        bin,
                        &case.theirs,
                        &case.tokenizer,
                        random,
                        case.steps,
                    )?);
                }
            }
            let theirs = (!theirs.is_empty()).then(|| median(theirs));
            report(json, case.name, median(ours), theirs);
        }
        Ok(())
    });
    let _ = std::fs::remove_dir_all(&tmp);
    result?;
    if args.train_steps > 0 {
        crate::train::bench(&dir, &args.data, args.train_steps, json)?;
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

/// `model-tiny random`'s command line.
#[derive(Debug, clap::Args)]
pub struct RandomArgs {
    /// Where to write the model
    #[arg(long, value_name = "PATH")]
    out: String,
    /// The seed of the weights [default: the benchmark's]
    #[arg(long, value_name = "N", default_value_t = model_tiny::bench::BENCH_SEED)]
    seed: u64,
    /// The file format
    #[arg(long, value_enum, default_value_t = Format::V0)]
    format: Format,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Format {
    /// llama2.c's legacy format (run.c reads it)
    V0,
    /// llama2.c's version 1
    V1,
    /// model-tiny's safetensors checkpoint
    Safetensors,
}

/// `model-tiny random`: writes the benchmark's random 15M-shaped model (dim 288, hidden 768,
/// 6 layers, 6 heads, vocab 32000, seq 256), e.g. for run.c.
pub fn random(args: RandomArgs) -> Result<()> {
    let weights = Weights::random(model_tiny::Config::stories15m(), args.seed)?;
    let bytes = match args.format {
        Format::V0 => llama2c::export_v0(&weights)?,
        Format::V1 => llama2c::export_v1(&weights)?,
        Format::Safetensors => model_tiny::checkpoint::save_model(&weights)?,
    };
    std::fs::write(&args.out, bytes).map_err(|e| Error::io(&args.out, e))
}
