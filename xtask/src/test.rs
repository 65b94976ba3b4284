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

    let webdriver_json = write_webdriver_json()?;
    let wasm_test = |what: &str, args: &[&str]| {
        cmd::run(
            what,
            cargo()
                .args(["test", "--target", "wasm32-unknown-unknown"])
                .args(args)
                .env(
                    "PATH",
                    path_with(std::slice::from_ref(&tools.wasm_bindgen_bin)),
                )
                .env("CHROMEDRIVER", &tools.chromedriver)
                .env("WASM_BINDGEN_TEST_WEBDRIVER_JSON", &webdriver_json)
                .env("WASM_BINDGEN_TEST_TIMEOUT", "300"),
        )
    };
    let packages: Vec<&str> = wasm_test_packages()
        .into_iter()
        .flat_map(|p| ["-p", p])
        .collect();
    wasm_test("wasm tests in headless Chromium", &packages)?;
    // jobspec's native tests read files and use proptest; its browser test is its own target.
    wasm_test(
        "jobspec in headless Chromium",
        &["-p", "jobspec", "--test", "wasm"],
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

/// The capabilities wasm-bindgen-test-runner asks chromedriver for: Debian's Chromium with our
/// flags (the runner adds headless and no-sandbox itself; chromedriver gives a fresh profile).
pub fn write_webdriver_json() -> Result<std::path::PathBuf, String> {
    let dir = repo_root().join("target");
    let path = dir.join("webdriver.json");
    let caps = serde_json::json!({"goog:chromeOptions": {
        "binary": "/usr/bin/chromium",
        "args": onramp_tests::webdriver::CHROMIUM_FLAGS,
    }});
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    std::fs::write(&path, caps.to_string())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// The crates that have wasm tests.
fn wasm_test_packages() -> Vec<&'static str> {
    vec!["app", "model-tiny"]
}
