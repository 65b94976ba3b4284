//! `cargo xtask gpu-check [--card <id>] [--steps N]`: for a machine with an NVIDIA GPU (it cannot
//! run in CI). It trains a ~0.5B random Llama with onramp-train, as jobspec launches it
//! (`torchrun … -m onramp_train onramp-run.json`, the run jobspec derives), twice on one GPU — full
//! fine-tuning with ZeRO-2 and LoRA — and, on a machine with two GPUs or more, twice on two:
//! data-parallel ZeRO-2 and tensor-parallel (`tp = 2`, DeepSpeed's AutoTP). It prints the
//! measured peak GPU memory and tokens/s next to jobspec's estimates for the same spec, as
//! ratios, in a block to paste into a note. About five minutes per GPU count on an H100-class
//! card; every run has a time limit.
//!
//! It needs the trainer's environment (`ONRAMP_PYTHON`, else the one `cargo xtask setup`
//! installed) and `../shared` (the 512-token SentencePiece model and, when present, the
//! tinyshakespeare corpus; otherwise a generated text stands in: speed and memory do not depend
//! on what the words say).

use crate::cmd::{repo_root, shared_dir};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One run of the check.
struct Case {
    name: &'static str,
    task: &'static str,
    zero_stage: u8,
    cards: u32,
    tp: u32,
}

const CASES: [Case; 4] = [
    Case {
        name: "full, ZeRO-2",
        task: "sft",
        zero_stage: 2,
        cards: 1,
        tp: 1,
    },
    Case {
        name: "LoRA r=16",
        task: "lora",
        zero_stage: 0,
        cards: 1,
        tp: 1,
    },
    Case {
        name: "2 GPU ZeRO-2",
        task: "sft",
        zero_stage: 2,
        cards: 2,
        tp: 1,
    },
    Case {
        name: "2 GPU tp=2",
        task: "sft",
        zero_stage: 1,
        cards: 2,
        tp: 2,
    },
];

/// The spec of one case: a 30-layer, 1024-wide Llama (0.50 B parameters with the 512-token
/// vocabulary the shared tokenizer has), sequences of 1024 tokens, 8 per step.
fn spec_toml(case: &Case, card: &str, steps: u32) -> String {
    let lora = if case.task == "lora" {
        "lora_rank = 16\nlora_alpha = 32\n"
    } else {
        ""
    };
    format!(
        "name = \"gpu-check\"\ntask = \"{task}\"\nbackend = \"auto\"\n\n\
         [model]\nname = \"llama-0.5b-random\"\nlayers = 30\nhidden = 1024\nheads = 16\n\
         kv_heads = 16\nffn = 4096\nvocab = 512\n\n\
         [data]\ndataset = \"corpus.txt\"\nseq_len = 1024\n\n\
         [train]\nsteps = {steps}\nmicro_batch = 8\ngrad_accum = 1\nlr = 1e-4\nwarmup = 2\n\
         precision = \"bf16\"\ngrad_checkpointing = false\n{lora}\n\
         [parallel]\nzero_stage = {zero}\ntp = {tp}\n\n\
         [resources]\ncard = \"{card}\"\ncards_per_node = {cards}\nnodes = 1\ntime_limit = \"20m\"\n",
        task = case.task,
        zero = case.zero_stage,
        tp = case.tp,
        cards = case.cards,
    )
}

/// What one run measured.
#[derive(Debug, Default, PartialEq)]
struct Measured {
    peak_bytes: Option<u64>,
    tokens_per_s: Option<f64>,
    steps: usize,
}

/// Reads the trainer's metrics lines: the highest peak memory any line reports, and the median
/// tokens/s over the steps after the first `skip` (compilation and allocator warm-up).
fn measure(lines: &[Value], skip: u64) -> Measured {
    let steps: Vec<&Value> = lines.iter().filter(|l| l["step"].is_u64()).collect();
    let peak_bytes = steps
        .iter()
        .filter_map(|l| l["peak_mem_bytes"].as_u64())
        .max();
    let mut speeds: Vec<f64> = steps
        .iter()
        .filter(|l| l["step"].as_u64().is_some_and(|s| s > skip))
        .filter_map(|l| l["tokens_per_s"].as_f64())
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    speeds.sort_by(f64::total_cmp);
    let tokens_per_s = (!speeds.is_empty()).then(|| speeds[speeds.len() / 2]);
    Measured {
        peak_bytes,
        tokens_per_s,
        steps: steps.len(),
    }
}

/// The catalogue card whose short name (`H200`, `A100`, `4090`, …) the GPU's name contains.
fn card_for(gpu_name: &str) -> Option<&'static str> {
    let name = gpu_name.to_ascii_lowercase();
    let mut found: Vec<&'static jobspec::catalog::Card> = jobspec::catalog::CARDS
        .iter()
        .filter(|c| c.is_gpu)
        .filter(|c| {
            let id = c.id.strip_prefix("rtx-").unwrap_or(c.id);
            let short = id.split('-').next().unwrap_or(id);
            !short.is_empty() && name.contains(short)
        })
        .collect();
    // An 80 GB A100 is `a100-80g`, not the 40 GB one.
    found.sort_by_key(|c| {
        let gib = c.mem_bytes >> 30;
        (!name.contains(&format!("{gib}gb")) && !name.contains(&format!("{gib} gb"))) as u8
    });
    found.first().map(|c| c.id)
}

fn ratio(measured: Option<f64>, estimate: f64) -> String {
    match measured {
        Some(m) if estimate > 0.0 => format!("{:.2}", m / estimate),
        _ => "-".into(),
    }
}

fn gib(b: f64) -> String {
    format!("{:.1}", b / (1u64 << 30) as f64)
}

/// One row of the report: measured and estimated, as ratios measured / estimate.
fn row(name: &str, m: &Measured, est_bytes: u64, est_tokens_per_s: f64) -> String {
    format!(
        "{name:<14} {:>9} {:>8} {:>6}   {:>9} {:>9} {:>6}",
        m.peak_bytes.map_or("-".into(), |b| gib(b as f64)),
        gib(est_bytes as f64),
        ratio(m.peak_bytes.map(|b| b as f64), est_bytes as f64),
        m.tokens_per_s.map_or("-".into(), |t| format!("{t:.0}")),
        format!("{est_tokens_per_s:.0}"),
        ratio(m.tokens_per_s, est_tokens_per_s),
    )
}

/// The first GPU's name and how many GPUs the machine has.
fn gpus() -> Result<(String, u32), String> {
    let out = Command::new("nvidia-smi")
        .args(["--query-gpu=name", "--format=csv,noheader"])
        .output()
        .map_err(|e| format!("nvidia-smi: {e} (gpu-check needs a machine with an NVIDIA GPU)"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let names: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let first = names.first().ok_or("nvidia-smi lists no GPU")?;
    Ok((first.to_string(), names.len() as u32))
}

fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

pub fn run(args: &[String]) -> Result<(), String> {
    let steps: u32 = flag(args, "--steps")
        .map(|s| {
            s.parse()
                .map_err(|_| format!("--steps {s:?} is not a number"))
        })
        .transpose()?
        .unwrap_or(30);
    let (gpu, count) = gpus()?;
    let card = match flag(args, "--card") {
        Some(c) => jobspec::catalog::card(c)
            .map(|c| c.id)
            .ok_or_else(|| format!("--card {c:?} is not in the catalogue"))?,
        None => card_for(&gpu).ok_or_else(|| {
            format!("no catalogue card matches {gpu:?}; name one with --card <id>")
        })?,
    };
    let python = std::env::var_os("ONRAMP_PYTHON")
        .map(PathBuf::from)
        .map_or_else(|| crate::trainer_env::ensure().map(|t| t.python), Ok)?;
    let shared = shared_dir();
    let tokenizer = shared.join("models/tok512.model");
    if !tokenizer.is_file() {
        return Err(format!("{} is missing", tokenizer.display()));
    }
    let work = std::env::temp_dir().join(format!("onramp-gpu-check-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    write_corpus(&shared, &work.join("corpus.txt"))?;

    let mut rows = Vec::new();
    for case in CASES.iter().filter(|c| c.cards <= count) {
        let toml = spec_toml(case, card, steps);
        let (valid, diags) = jobspec::validate_toml(&toml);
        let v = valid.ok_or_else(|| format!("the {} spec is invalid: {diags:?}", case.name))?;
        let est = jobspec::estimate::estimate(&v);
        let est_tps = est.time.tokens as f64 / est.time.seconds.max(f64::MIN_POSITIVE);
        let dir = work.join(format!("{}-{}-{}", case.task, case.cards, case.tp));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        std::fs::write(dir.join("spec.toml"), jobspec::trainer::spec_toml(&v))
            .map_err(|e| e.to_string())?;
        std::fs::write(
            dir.join(jobspec::trainer::RUN_FILE),
            jobspec::trainer::run_json(&v),
        )
        .map_err(|e| e.to_string())?;
        let command = jobspec::launch::torchrun_command(&v);
        println!("gpu-check: {} — {command}", case.name);
        let lines = run_case(&python, &dir, &work, &tokenizer, &command)?;
        let m = measure(&lines, 5);
        if m.steps == 0 {
            return Err(format!("{}: the trainer printed no metrics", case.name));
        }
        rows.push(row(case.name, &m, est.memory.per_gpu.total_bytes, est_tps));
    }
    println!(
        "\n```\ngpu-check on {count} × {gpu} (card {card}), 0.50 B random Llama, seq_len 1024 × 8 per card, {steps} steps, bf16"
    );
    println!(
        "{:<14} {:>9} {:>8} {:>6}   {:>9} {:>9} {:>6}",
        "case", "peak GiB", "est GiB", "ratio", "tok/s", "est tok/s", "ratio"
    );
    for r in rows {
        println!("{r}");
    }
    if count < 2 {
        println!("(the two-GPU cases, ZeRO-2 and tp = 2, need a machine with two GPUs)");
    }
    println!("```");
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

/// A corpus for the runs: tinyshakespeare when `../shared` has it, else generated words.
fn write_corpus(shared: &Path, to: &Path) -> Result<(), String> {
    let text =
        std::fs::read_to_string(shared.join("data/tinyshakespeare.txt")).unwrap_or_else(|_| {
            let words = [
                "the", "model", "learns", "from", "every", "token", "it", "reads", "and",
            ];
            (0..400_000usize)
                .map(|i| words[(i * 7 + i / 3) % words.len()])
                .collect::<Vec<_>>()
                .join(" ")
        });
    std::fs::write(to, text).map_err(|e| format!("{}: {e}", to.display()))
}

/// Runs one case's launch line in its folder with a time limit and keeps its metrics lines.
fn run_case(
    python: &Path,
    dir: &Path,
    data: &Path,
    tokenizer: &Path,
    command: &str,
) -> Result<Vec<Value>, String> {
    let bin = python.parent().ok_or("ONRAMP_PYTHON has no folder")?;
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Command::new("timeout")
        .args(["240", "sh", "-c", command])
        .current_dir(dir)
        .env("PATH", path)
        .env("PYTHONPATH", repo_root().join("trainer/src"))
        .env("ONRAMP_DATASETS", data)
        .env("ONRAMP_TOKENIZER", tokenizer)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{command}: {e}"))?;
    let started = Instant::now();
    let mut lines = Vec::new();
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if line.starts_with("{\"step\":") {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    lines.push(v);
                }
            } else {
                println!("  {line}");
            }
        }
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!(
            "{command} failed ({status}) after {:.0?}",
            started.elapsed().min(Duration::from_secs(3600))
        ));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_spec_is_valid_and_the_model_is_half_a_billion() {
        for case in &CASES {
            let (v, d) = jobspec::validate_toml(&spec_toml(case, "h100-80g", 30));
            let v = v.unwrap_or_else(|| panic!("{}: {d:?}", case.name));
            assert_eq!(
                (v.world_size(), v.spec().parallel.tp),
                (case.cards, case.tp)
            );
            let command = jobspec::launch::torchrun_command(&v);
            assert!(
                command.contains(&format!("--nproc_per_node {}", case.cards)),
                "{command}"
            );
            let tp = jobspec::trainer::trainer_run(&v).ds_config.unwrap()["tensor_parallel"]
                ["autotp_size"]
                .as_u64();
            assert_eq!(
                tp,
                (case.tp > 1).then_some(u64::from(case.tp)),
                "{}",
                case.name
            );
            let n = jobspec::estimate::parameters(&v).total as f64;
            assert!((0.45e9..0.55e9).contains(&n), "{n}");
        }
    }

    #[test]
    fn metrics_give_the_peak_and_the_median_speed_after_warm_up() {
        let lines: Vec<Value> = (1..=9)
            .map(|s| json!({"step": s, "loss": 1.0, "tokens_per_s": if s <= 2 { 10.0 } else { 100.0 + s as f64 },
                             "peak_mem_bytes": s * 1000}))
            .chain([json!({"eval_loss": 1.0})])
            .collect();
        let m = measure(&lines, 2);
        assert_eq!(m.steps, 9);
        assert_eq!(m.peak_bytes, Some(9000));
        assert_eq!(m.tokens_per_s, Some(106.0));
        assert_eq!(measure(&[], 2), Measured::default());
    }

    #[test]
    fn gpu_names_find_their_card() {
        assert_eq!(card_for("NVIDIA H200"), Some("h200"));
        assert_eq!(card_for("NVIDIA H100 80GB HBM3"), Some("h100-80g"));
        assert_eq!(card_for("NVIDIA A100-SXM4-80GB"), Some("a100-80g"));
        assert_eq!(card_for("NVIDIA GeForce RTX 4090"), Some("rtx-4090"));
        assert_eq!(card_for("Tesla T4"), None);
    }

    #[test]
    fn rows_show_ratios_measured_over_estimate() {
        let m = Measured {
            peak_bytes: Some(12 << 30),
            tokens_per_s: Some(30_000.0),
            steps: 30,
        };
        let r = row("full, ZeRO-2", &m, 10 << 30, 40_000.0);
        assert!(
            r.contains("12.0") && r.contains("10.0") && r.contains("1.20"),
            "{r}"
        );
        assert!(r.contains("30000") && r.contains("0.75"), "{r}");
    }
}
