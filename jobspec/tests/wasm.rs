//! jobspec in the browser (headless Chromium via wasm-bindgen-test-runner): the starter templates
//! validate and estimate exactly as natively, and one validate + full estimate is timed, printed as
//! `jobspec wasm bench: ... µs` for `cargo xtask bench plan`.
#![cfg(target_arch = "wasm32")]

use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn templates_plan_in_the_browser() {
    for t in jobspec::templates() {
        let plan = jobspec::plan_toml(t.toml);
        assert!(plan.is_submittable(), "{} is not submittable in wasm", t.id);
    }
    // A broken spec gets its diagnostic at the same place as natively.
    let plan = jobspec::plan_toml("name = \"x\"\ntask = \"pretrian\"\n");
    assert!(plan.has_errors());
    assert!(plan.diagnostics.iter().any(|d| d.span.is_some()));
}

#[wasm_bindgen_test]
fn bench_validate_and_estimate() {
    let spec = jobspec::bench::BENCH_SPEC;
    let mut sink = 0u64;
    for _ in 0..20 {
        sink = sink.wrapping_add(jobspec::bench::validate_and_estimate(spec));
    }
    let iterations = 400;
    let start = js_sys::Date::now();
    for _ in 0..iterations {
        sink = sink.wrapping_add(jobspec::bench::validate_and_estimate(spec));
    }
    let per_us = (js_sys::Date::now() - start) * 1000.0 / f64::from(iterations);
    console_log!(
        "jobspec wasm bench: {per_us:.1} µs per validate + full estimate (deepseek-7b-128k-mxc500, mean of {iterations})"
    );
    assert!(sink > 0);
}
