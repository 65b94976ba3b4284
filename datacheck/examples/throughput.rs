//! `cargo run --release -p datacheck --example throughput -- FILE TOKENIZER_DIR SEQ_LEN [MODEL]`: the
//! dataset checker's native throughput over FILE with the tokenizer folder TOKENIZER_DIR, as one
//! JSON line (`bytes`, `examples`, `tokens`, `seconds`), for `cargo xtask bench data`
//! (`trainer/bench/bench_data.py` runs it beside Python's `tokenizers` on the same file).

use std::time::Instant;

fn main() {
    if let Err(e) = run() {
        eprintln!("datacheck throughput: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [file, tokenizer, seq_len, rest @ ..] = args.as_slice() else {
        return Err("usage: throughput FILE TOKENIZER_DIR SEQ_LEN [MODEL]".into());
    };
    let seq_len: u32 = seq_len
        .parse()
        .map_err(|_| format!("SEQ_LEN {seq_len:?} is not a number"))?;
    let model = rest.first().map(String::as_str);
    // Reading the tokenizer is part of what a check costs, as in the page.
    let start = Instant::now();
    let counter = datacheck::hf::HfCounter::from_folder(std::path::Path::new(tokenizer), model)?;
    let f = std::fs::File::open(file).map_err(|e| format!("{file}: {e}"))?;
    let report = datacheck::check_reader(Some(file), f, counter, seq_len, |_| {})
        .map_err(|e| format!("{file}: {e}"))?;
    let seconds = start.elapsed().as_secs_f64();
    if !report.exact {
        return Err(format!("not counted exactly: {}", report.counted_with));
    }
    println!(
        "{}",
        serde_json::json!({
            "bytes": report.bytes,
            "examples": report.examples,
            "tokens": report.tokens,
            "bad_lines": report.bad_lines,
            "seconds": seconds,
        })
    );
    Ok(())
}
