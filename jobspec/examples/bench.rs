//! Times `jobspec::bench::validate_and_estimate` on every template, next to a reference measured
//! in the same run: a plain parse of the same TOML text into a generic `toml::Table`.
//! `cargo run -p jobspec --release --example bench [ITERATIONS]`.

use std::time::{Duration, Instant};

/// Mean time of one call of `f` over `iterations`, after a warm-up.
fn time(iterations: u32, mut f: impl FnMut() -> u64) -> Duration {
    let mut sink = 0u64;
    for _ in 0..10 {
        sink = sink.wrapping_add(f());
    }
    let start = Instant::now();
    for _ in 0..iterations {
        sink = sink.wrapping_add(f());
    }
    std::hint::black_box(sink);
    start.elapsed() / iterations.max(1)
}

fn row(id: &str, toml_text: &str, iterations: u32, note: &str) {
    let plan = time(iterations, || {
        jobspec::bench::validate_and_estimate(toml_text)
    });
    let reference = time(iterations, || {
        toml::from_str::<toml::Table>(toml_text).map_or(0, |t| t.len() as u64)
    });
    println!(
        "{id:<28} {:>8.1} µs per validate + full estimate = {:>5.1}× a plain TOML parse ({:.1} µs){note}; budget 1 ms: {:.3}×",
        plan.as_secs_f64() * 1e6,
        plan.as_secs_f64() / reference.as_secs_f64().max(1e-12),
        reference.as_secs_f64() * 1e6,
        plan.as_secs_f64() / 1e-3,
    );
}

fn main() {
    let iterations: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    for t in jobspec::templates() {
        row(t.id, t.toml, iterations, "");
    }
    row(
        "7b-full-4090",
        include_str!("../specs/7b-full-4090.toml"),
        iterations,
        " (does not fit: includes the fix search)",
    );
}
