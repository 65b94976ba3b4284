//! `model-tiny`: a drop-in for llama2.c's `run` (`model-tiny <checkpoint> [-t T] [-p P] [-s SEED]
//! [-n STEPS] [-i PROMPT] [-z TOKENIZER]`), plus `model-tiny train`, `bench` and `random`.

#[cfg(not(target_arch = "wasm32"))]
mod args;
#[cfg(not(target_arch = "wasm32"))]
mod bench;
#[cfg(not(target_arch = "wasm32"))]
mod run;
#[cfg(not(target_arch = "wasm32"))]
mod train;

/// The subcommands, on clap. The run.c-compatible form (`model-tiny <checkpoint> -t …`) keeps
/// run.c's own single-dash options and is parsed by hand in `run.rs`.
#[cfg(not(target_arch = "wasm32"))]
#[derive(clap::Parser)]
#[command(
    name = "model-tiny",
    version,
    about = "A llama-family transformer: run.c-compatible generation, training and benchmarks",
    after_help = run::USAGE
)]
enum Sub {
    /// Train from scratch or from a checkpoint on a text corpus, printing JSON-lines metrics
    Train(train::TrainArgs),
    /// Single-thread generation tokens/s, next to llama2.c's run.c when given
    Bench(bench::BenchArgs),
    /// Write the benchmark's random stories15M-shaped model
    Random(bench::RandomArgs),
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    use clap::Parser;
    // Not `args()`: a prompt need not be UTF-8 (run.c takes any bytes).
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let result = match argv.get(1).map(|a| a.to_str()) {
        // run.c prints its usage and fails when given nothing.
        None => {
            eprint!("{}", run::USAGE);
            std::process::exit(1);
        }
        Some(Some(
            "train" | "bench" | "random" | "help" | "-h" | "--help" | "-V" | "--version",
        )) => match Sub::parse() {
            Sub::Train(a) => train::main(a),
            Sub::Bench(a) => bench::main(a),
            Sub::Random(a) => bench::random(a),
        },
        Some(_) => run::main(&argv[1..]),
    };
    if let Err(e) = result {
        eprintln!("model-tiny: error: {e}");
        // A file that cannot be read or written is not a usage error (clap's exit 2).
        let code = if matches!(e, model_tiny::Error::Io { .. }) {
            3
        } else {
            1
        };
        std::process::exit(code);
    }
}

/// The command line needs a file system and a terminal; in the browser the library is used.
#[cfg(target_arch = "wasm32")]
fn main() {}
