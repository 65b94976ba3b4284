//! Times `jobspec::bench::validate_and_estimate` on every template:
//! `cargo run -p jobspec --release --example bench [ITERATIONS]`.

use std::time::Instant;

fn main() {
    let iterations: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let mut sink = 0u64;
    for t in jobspec::templates() {
        // Warm up, then time.
        for _ in 0..10 {
            sink = sink.wrapping_add(jobspec::bench::validate_and_estimate(t.toml));
        }
        let start = Instant::now();
        for _ in 0..iterations {
            sink = sink.wrapping_add(jobspec::bench::validate_and_estimate(t.toml));
        }
        let per = start.elapsed() / iterations.max(1);
        println!(
            "{:<28} {:>8.1} µs per validate + full estimate",
            t.id,
            per.as_secs_f64() * 1e6
        );
    }
    let full = include_str!("../specs/7b-full-4090.toml");
    let start = Instant::now();
    for _ in 0..iterations {
        sink = sink.wrapping_add(jobspec::bench::validate_and_estimate(full));
    }
    let per = start.elapsed() / iterations.max(1);
    println!(
        "{:<28} {:>8.1} µs (does not fit: includes the fix search)",
        "7b-full-4090",
        per.as_secs_f64() * 1e6
    );
    std::hint::black_box(sink);
}
