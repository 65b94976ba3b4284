//! `cargo xtask bench`: benchmarks printed as ratios against a reference measured in the same run.

pub fn run(args: &[String]) -> Result<(), String> {
    let _ = args;
    Err("no benchmarks yet".into())
}
