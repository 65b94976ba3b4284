//! `model-tiny`: a drop-in for llama2.c's `run` (`model-tiny <checkpoint> [-t T] [-p P] [-s SEED]
//! [-n STEPS] [-i PROMPT] [-z TOKENIZER]`), plus `model-tiny train` and `model-tiny bench`.

#[cfg(not(target_arch = "wasm32"))]
mod args;
#[cfg(not(target_arch = "wasm32"))]
mod bench;
#[cfg(not(target_arch = "wasm32"))]
mod run;
#[cfg(not(target_arch = "wasm32"))]
mod train;

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let result = match argv.get(1).map(String::as_str) {
        Some("train") => train::main(&argv[2..]),
        Some("bench") => bench::main(&argv[2..]),
        Some("random") => bench::random(&argv[2..]),
        Some("-h" | "--help" | "help") | None => {
            eprint!("{}", run::USAGE);
            std::process::exit(1);
        }
        Some(_) => run::main(&argv[1..]),
    };
    if let Err(e) = result {
        eprintln!("model-tiny: error: {e}");
        std::process::exit(1);
    }
}

/// The command line needs a file system and a terminal; in the browser the library is used.
#[cfg(target_arch = "wasm32")]
fn main() {}
