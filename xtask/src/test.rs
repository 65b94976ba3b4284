//! `cargo xtask test`: set up, build, and run every test: host unit tests of every crate, wasm
//! tests in headless Chromium, and the stack tests (the edge under `wrangler dev`, the runner and
//! the browser journeys).

use crate::cmd::{self, cargo, path_with, repo_root};
use std::time::Instant;

pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(a) = args.first() {
        return Err(format!("`cargo xtask test` takes no arguments (got {a:?})"));
    }
    let started = Instant::now();
    let tools = crate::setup::run()?;
    crate::build::all(&tools)?;

    cmd::run(
        "host tests (cargo test --workspace)",
        cargo().args(["test", "--workspace"]),
    )?;

    let webdriver_json = repo_root().join("target/webdriver.json");
    let caps = serde_json::json!({"goog:chromeOptions": {
        "binary": "/usr/bin/chromium",
        "args": onramp_tests::webdriver::CHROMIUM_FLAGS,
    }});
    std::fs::create_dir_all(repo_root().join("target")).map_err(|e| e.to_string())?;
    std::fs::write(&webdriver_json, caps.to_string()).map_err(|e| e.to_string())?;
    cmd::run(
        "wasm tests in headless Chromium",
        cargo()
            .args(["test", "--target", "wasm32-unknown-unknown"])
            .args(wasm_test_packages().iter().flat_map(|p| ["-p", p]))
            .env("PATH", path_with(&[tools.wasm_bindgen_bin.clone()]))
            .env("CHROMEDRIVER", &tools.chromedriver)
            .env("WASM_BINDGEN_TEST_WEBDRIVER_JSON", &webdriver_json)
            .env("WASM_BINDGEN_TEST_TIMEOUT", "300"),
    )?;

    // The stack tests start real processes; two at a time keeps a 2-core machine responsive.
    cmd::run(
        "stack tests (wrangler dev, runner, headless Chromium)",
        cargo()
            .args([
                "test",
                "-p",
                "onramp-tests",
                "--",
                "--ignored",
                "--test-threads=2",
            ])
            .env("CHROMEDRIVER", &tools.chromedriver),
    )?;
    eprintln!(
        "xtask: every test passed in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The crates that have wasm tests.
fn wasm_test_packages() -> Vec<&'static str> {
    vec!["app"]
}
