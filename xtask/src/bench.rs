//! `cargo xtask bench [plan|model|train-tiny|app|edge|artifacts|train|data|all]`: benchmarks printed as ratios against a reference measured
//! in the same run, never against a number remembered from another machine or day.
//!
//! - `plan`: one validate + full estimate of each starter spec (jobspec, native release), next to
//!   a plain `serde_json` parse of the same spec as the reference.
//! - `model`: model-tiny's single-thread tokens/s on stories260K and a random stories15M-shaped
//!   model, next to llama2.c's `run.c` when `LLAMA2C_RUN` names its binary (built with -Ofast),
//!   and training tokens/s; the same generation in headless Chromium (wasm) as a ratio to them.
//! - `train-tiny`: the default tiny-train template on the release runner (wall, user and sys
//!   time, the first loss's delay) and its training tokens/s next to a plain candle loop on the
//!   same model and batch, then Submit → first loss point through the local stack (see
//!   `bench_train.rs`).
//! - `app`: cold and warm page load to first token, the gzip sizes of the page and the
//!   inference worker, and the tokens/s the Try page shows next to the native binary's on the
//!   same tokens (see `bench_app.rs`).
//! - `edge`: requests/s and p50/p99 of sign-in, balance, redeem and submit with 8/32/128
//!   concurrent clients against `wrangler dev`, next to `/api/health` (see `bench_edge.rs`).
//! - `artifacts`: a job's artifact of 192 MiB uploaded in parts and downloaded through
//!   `wrangler dev`'s local R2, next to a plain copy of the file, and the runtime's peak memory
//!   while it streams (see `bench_artifacts.rs`).
//! - `train`: onramp-train's training tokens/s on the CPU next to a plain Hugging Face Trainer
//!   script on the same model, data and settings (`trainer/bench/bench_train.py`).
//! - `data`: the dataset checker's MB/s and tokens/s on a chat JSONL with a tokenizer trained on
//!   the spot, natively and in the Plan page's worker in headless Chromium (`bench_data.rs`),
//!   next to onramp-train's own count and Python's `tokenizers` alone on the same file and
//!   tokenizer (`trainer/bench/bench_data.py`).

use crate::cmd::{self, cargo, shared_dir, target_dir};

pub fn run(args: &[String]) -> Result<(), String> {
    let which = args.first().map_or("all", String::as_str);
    let known = [
        "plan",
        "model",
        "train-tiny",
        "app",
        "edge",
        "artifacts",
        "train",
        "data",
        "all",
    ];
    if !known.contains(&which) || args.len() > 1 {
        return Err(format!("usage: cargo xtask bench [{}]", known.join("|")));
    }
    if matches!(which, "plan" | "all") {
        plan()?;
    }
    if matches!(which, "model" | "all") {
        model()?;
    }
    if matches!(which, "train-tiny" | "all") {
        crate::bench_train::run()?;
    }
    if matches!(which, "train" | "all") {
        train()?;
    }
    if matches!(which, "data" | "all") {
        data()?;
    }
    if matches!(which, "app" | "all") {
        let tools = crate::setup::run()?;
        crate::build::all(&tools)?;
        println!("\n== app: load to first token in headless Chromium, and download sizes ==");
        for line in crate::bench_app::run()? {
            println!("{line}");
        }
    }
    if matches!(which, "edge" | "all") {
        let tools = crate::setup::build_tools()?;
        crate::build::all(&tools)?;
        println!("\n== edge: money routes under concurrent clients, against wrangler dev ==");
        for line in crate::bench_edge::run()? {
            println!("{line}");
        }
    }
    if matches!(which, "artifacts" | "all") {
        let tools = crate::setup::build_tools()?;
        crate::build::all(&tools)?;
        println!("\n== artifacts: a job's file through wrangler dev's local R2 ==");
        for line in crate::bench_artifacts::run()? {
            println!("{line}");
        }
    }
    Ok(())
}

fn train() -> Result<(), String> {
    println!("\n== train: onramp-train vs a plain Hugging Face Trainer script (CPU, same run) ==");
    let env = crate::trainer_env::ensure()?;
    // The CLI derives the run the trainer reads (`onramp plan --trainer-run`).
    crate::build::runner()?;
    let status = env
        .python()
        .arg(crate::cmd::repo_root().join("trainer/bench/bench_train.py"))
        .arg("--shared")
        .arg(shared_dir())
        .arg("--onramp")
        .arg(target_dir().join("debug/onramp"))
        .status()
        .map_err(|e| format!("cannot run the trainer bench: {e}"))?;
    if !status.success() {
        return Err(format!("the trainer bench failed ({status})"));
    }
    Ok(())
}

fn data() -> Result<(), String> {
    println!(
        "\n== data: the dataset checker (native, and in the browser) vs Python on the same file and tokenizer =="
    );
    let env = crate::trainer_env::ensure()?;
    let tools = crate::setup::run()?;
    crate::build::all(&tools)?;
    crate::cmd::run(
        "cargo build --release -p datacheck --example throughput",
        cargo()
            .args(["build", "--quiet", "--release", "-p", "datacheck"])
            .args(["--example", "throughput"]),
    )?;
    let dir = onramp_tests::stack::unique_temp_dir("onramp-bench-data");
    let out = env
        .python()
        .arg(crate::cmd::repo_root().join("trainer/bench/bench_data.py"))
        .arg("--checker")
        .arg(target_dir().join("release/examples/throughput"))
        .arg("--keep")
        .arg(&dir)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run trainer/bench/bench_data.py: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut figures = None;
    for line in stdout.lines() {
        match line.strip_prefix("bench-data-json: ") {
            Some(j) => figures = serde_json::from_str::<serde_json::Value>(j).ok(),
            None => println!("{line}"),
        }
    }
    let result = match (out.status.success(), figures) {
        (true, Some(f)) => crate::bench_data::Measured::from_json(&f)
            .and_then(|m| crate::bench_data::run(&dir, &m)),
        _ => Err(format!(
            "trainer/bench/bench_data.py failed ({})",
            out.status
        )),
    };
    let _ = std::fs::remove_dir_all(&dir);
    for line in result? {
        println!("{line}");
    }
    Ok(())
}

fn plan() -> Result<(), String> {
    println!("\n== plan: validate + full estimate (jobspec, native, release) ==");
    let out = cargo()
        .args([
            "run",
            "--quiet",
            "--release",
            "-p",
            "jobspec",
            "--example",
            "bench",
            "--",
            "400",
        ])
        .output()
        .map_err(|e| format!("cannot run the jobspec bench: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!(
            "jobspec bench failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    print!("{text}");
    let micros = |line: &str| -> Option<f64> { line.split_whitespace().nth(1)?.parse().ok() };
    let native_us = text
        .lines()
        .find(|l| l.starts_with("deepseek-7b-128k-mxc500"))
        .and_then(micros);

    println!("\n== plan: the same in headless Chromium (wasm, release) ==");
    let lines = browser_bench("jobspec", "jobspec wasm bench: ")?;
    for line in &lines {
        let wasm_us: f64 = line
            .split_whitespace()
            .next()
            .and_then(|w| w.parse().ok())
            .unwrap_or(0.0);
        match native_us {
            Some(n) if n > 0.0 => println!(
                "{line}\n  = {:.2}x native in the same run; budget 5 ms: {:.3}x",
                wasm_us / n,
                wasm_us / 5000.0
            ),
            _ => println!("{line}; budget 5 ms: {:.3}x", wasm_us / 5000.0),
        }
    }
    Ok(())
}

fn model() -> Result<(), String> {
    println!("\n== model: generation tokens/s, one thread (model-tiny vs llama2.c run.c) ==");
    if std::env::var_os("LLAMA2C_RUN").is_none() {
        println!(
            "(LLAMA2C_RUN is not set: run.c is not measured, so no ratio is printed. Point it at \
             llama2.c's `run` built with `gcc -Ofast -o run run.c -lm`.)"
        );
    }
    cmd::run(
        "cargo build --release -p model-tiny",
        cargo().args(["build", "--quiet", "--release", "-p", "model-tiny"]),
    )?;
    let bin = target_dir().join("release/model-tiny");
    let out = std::process::Command::new(bin)
        .arg("bench")
        .arg("--models")
        .arg(shared_dir().join("models"))
        .arg("--data")
        .arg(shared_dir().join("data/tinyshakespeare.txt"))
        .args(["--train-steps", "20", "--json"])
        .env("RAYON_NUM_THREADS", "1")
        .output()
        .map_err(|e| format!("cannot run model-tiny bench: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "model-tiny bench failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    // Native figures, keyed by model, to put the browser's figures next to them.
    let mut native = std::collections::BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
        let tps = v["tokens_per_s"].as_f64().unwrap_or(0.0);
        match v["bench"].as_str() {
            Some("generate") => {
                let model = v["model"].as_str().unwrap_or("?").to_string();
                match (v["run_c_tokens_per_s"].as_f64(), v["ratio"].as_f64()) {
                    (Some(r), Some(x)) => println!(
                        "{model:<20} native  model-tiny {tps:>9.1} tok/s   run.c {r:>9.1} tok/s   ratio {x:.2}x"
                    ),
                    _ => println!("{model:<20} native  model-tiny {tps:>9.1} tok/s"),
                }
                native.insert(model, (tps, v["run_c_tokens_per_s"].as_f64()));
            }
            Some(other) => println!("{other:<20} {line}"),
            None => {}
        }
    }

    println!("\n== model: generation tokens/s in headless Chromium (wasm, release) ==");
    let lines = browser_bench("model-tiny", "model-tiny wasm bench: ")?;
    for line in &lines {
        let mut words = line.split_whitespace();
        let model = words.next().unwrap_or("?");
        let tps: f64 = words.next().and_then(|w| w.parse().ok()).unwrap_or(0.0);
        // The browser names its models as the native bench does.
        let reference = native.get(model).copied();
        match reference {
            Some((_, Some(run_c))) => println!(
                "{model:<20} browser model-tiny {tps:>9.1} tok/s   ratio to native run.c {:.2}x",
                tps / run_c
            ),
            Some((ours, None)) => println!(
                "{model:<20} browser model-tiny {tps:>9.1} tok/s   ratio to native model-tiny {:.2}x",
                tps / ours
            ),
            None => println!("{model:<20} browser model-tiny {tps:>9.1} tok/s"),
        }
    }
    Ok(())
}

/// Runs a package's `wasm` test target in headless Chromium (release) filtered to its `bench`
/// tests, and returns what follows `marker` on each line they logged.
fn browser_bench(package: &str, marker: &str) -> Result<Vec<String>, String> {
    let tools = crate::setup::run()?;
    let webdriver_json = crate::test::write_webdriver_json()?;
    let tmp = crate::test::ScratchTmp::new("browser-bench")?;
    // No --quiet: cargo passes it on to wasm-bindgen-test-runner, which refuses it.
    let out = cargo()
        .args(["test", "-p", package, "--target", "wasm32-unknown-unknown"])
        .args(["--release", "--test", "wasm", "--", "--nocapture", "bench"])
        .env(
            "PATH",
            cmd::path_with(std::slice::from_ref(&tools.wasm_bindgen_bin)),
        )
        .env("CHROMEDRIVER", &tools.chromedriver)
        .env("WASM_BINDGEN_TEST_WEBDRIVER_JSON", &webdriver_json)
        .env("TMPDIR", tmp.path())
        .output()
        .map_err(|e| format!("cannot run the {package} browser bench: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "{package} browser bench failed: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(text
        .lines()
        .filter_map(|l| l.split(marker).nth(1))
        .map(str::to_string)
        .collect())
}
