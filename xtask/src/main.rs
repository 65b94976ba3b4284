//! `cargo xtask`: the single source of developer commands.
//!
//! - `setup`: install whatever is missing (wasm target, Chromium, wasm-bindgen-cli, worker-build,
//!   the Node tools, the trainer's Python environment), machine-wide and keyed by version so that every clone reuses them;
//! - `dev`: setup, build, and serve the whole local stack on one URL until Ctrl-C;
//! - `test`: setup, build, and run every test (host, wasm in headless Chromium, the stack);
//! - `deploy`: build and deploy the edge to Cloudflare (`--dry-run`: every check that needs no
//!   account, as `test` runs it);
//! - `bench`: benchmarks, printed as ratios against a reference measured in the same run.

mod bench;
mod bench_app;
mod bench_artifacts;
mod bench_data;
mod bench_edge;
mod bench_train;
mod build;
mod cmd;
mod deploy;
mod dev;
mod gpu_check;
mod models;
mod setup;
mod slurm;
mod stack_tests;
mod test;
mod trainer_env;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (command, rest) = match args.split_first() {
        Some((c, rest)) => (c.as_str(), rest),
        None => ("help", &[][..]),
    };
    let result = match command {
        "setup" => setup::run().map(|_| ()),
        "dev" => dev::run(rest),
        "test" => test::run(rest),
        "deploy" => deploy::run(rest),
        "bench" => bench::run(rest),
        "gpu-check" => gpu_check::run(rest),
        "build" => setup::run_then(build::all).map(|_| ()),
        "help" | "-h" | "--help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => Err(format!("unknown command {other:?}\n\n{USAGE}")),
    };
    if let Err(e) = result {
        eprintln!("xtask: error: {e}");
        std::process::exit(1);
    }
}

const USAGE: &str = "usage: cargo xtask <command>

commands:
  setup   install what is missing (wasm target, chromium, wasm-bindgen-cli, worker-build, node tools,
          the trainer's Python environment)
  dev     build everything and serve the local stack on http://127.0.0.1:$ONRAMP_PORT (default 8787)
  test    run every test: host, wasm in headless Chromium, the edge under wrangler, end to end
  bench   print benchmarks as ratios against references measured in the same run
  gpu-check [--card <id>] [--steps N]
          on a machine with an NVIDIA GPU: train a 0.5 B model (full with ZeRO-2, and LoRA) and
          print measured peak memory and tokens/s next to jobspec's estimates, as ratios
  build   build the app, the worker and the runner without starting anything
  deploy  build, apply the D1 migrations and deploy the edge as edge/wrangler.toml's
          [env.production] (ONRAMP_D1_ID, ONRAMP_KV_ID, ONRAMP_PUBLIC_URL, ONRAMP_MAIL_HTTP_URL;
          see docs/operator.md); --dry-run checks the config and the bundle with no account";
