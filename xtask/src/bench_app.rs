//! App benchmarks: cold and warm page load to the first generated token in headless Chromium,
//! and the gzip sizes of what the page and the inference worker download.
//!
//! Load → first token is the time from navigation start until the model is ready, plus the
//! page's own time to first token after Generate; the click itself is left out because a
//! WebDriver round trip would be measured instead of the app.
//!
//! The Try page's tokens/s is the figure users judge: the number the page itself shows after a
//! first visit's own run (256 tokens of stories260K, its default sampling), read from the page,
//! next to the native model-tiny binary (and llama2.c's `run.c` when `LLAMA2C_RUN` names it) on
//! the same model, tokens and sampling in the same run. The gap between the two is what the
//! worker, its messages and the page's updates cost.

use crate::cmd::{self, cargo, dist_dir, shared_dir, target_dir};
use onramp_tests::stack::{Stack, StackOptions};
use onramp_tests::webdriver::Browser;
use serde_json::json;
use std::time::Duration;

/// Goals from the issue: cold load to first token, and gzip sizes.
const GOAL_COLD_MS: f64 = 500.0;
const GOAL_APP_GZIP: u64 = 400 * 1000;
const GOAL_WORKER_GZIP: u64 = 1000 * 1000;

/// Runs the app benchmarks against the built `dist/` and returns the lines to print.
pub fn run() -> Result<Vec<String>, String> {
    let mut lines = sizes()?;
    lines.extend(load_to_first_token()?);
    lines.extend(page_tokens_per_s()?);
    Ok(lines)
}

/// Runs of each figure; the median is printed.
const RUNS: usize = 5;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(0.0)
}

/// The tokens/s the Try page shows: after a first visit's own run (a fresh browser profile, so
/// the model downloads), after a second Generate on that page, and after the run of a later
/// visit (the model from the cache), each over [`RUNS`] browsers.
struct Shown {
    first_visit: Vec<f64>,
    second_generate: Vec<f64>,
    revisit: Vec<f64>,
}

fn shown_on_the_page() -> Result<Shown, String> {
    let stack = Stack::start(StackOptions {
        with_runner: false,
        ..StackOptions::for_test("bench-app-tps")
    })?;
    let url = format!("{}/", stack.url);
    let mut shown = Shown {
        first_visit: Vec::new(),
        second_generate: Vec::new(),
        revisit: Vec::new(),
    };
    for _ in 0..RUNS {
        let browser = Browser::start(Some("en"))?;
        browser.goto(&url)?;
        shown.first_visit.push(own_run(&browser)?);
        // The same again on the same page, the code now warm: Generate once more.
        browser.execute(
            "document.querySelector('[data-testid=try-tokens]').removeAttribute('data-done');
             document.querySelector('[data-testid=try-generate]').click(); return true;",
            json!([]),
        )?;
        shown.second_generate.push(page_figure(&browser)?);
        browser.goto(&url)?;
        shown.revisit.push(own_run(&browser)?);
    }
    Ok(shown)
}

/// The figure after the run the Try page starts on its own.
fn own_run(browser: &Browser) -> Result<f64, String> {
    browser.wait_for(
        "[data-testid=try][data-autostart=started]",
        Duration::from_secs(60),
    )?;
    page_figure(browser)
}

/// The tokens/s the page shows once its generation finished.
fn page_figure(browser: &Browser) -> Result<f64, String> {
    let wait = Duration::from_secs(60);
    browser.wait_for("[data-testid=try-tokens][data-done=finished]", wait)?;
    let text = browser.wait_for_text("[data-testid=try-tps]", wait, |t| {
        t.trim().parse::<f64>().is_ok()
    })?;
    number(Some(text), "the Try page's tokens/s")
}

/// `bin`'s own "achieved tok/s" for stories260K with the Try page's defaults (256 tokens,
/// temperature 1.0, top-p 0.9, seed 42), the median of [`RUNS`].
fn native_tokens_per_s(bin: &std::path::Path) -> Result<f64, String> {
    let models = shared_dir().join("models");
    let mut runs = Vec::new();
    for _ in 0..RUNS {
        let out = std::process::Command::new(bin)
            .arg(models.join("stories260K.bin"))
            .arg("-z")
            .arg(models.join("tok512.bin"))
            .args(["-t", "1.0", "-p", "0.9", "-s", "42", "-n", "256"])
            .output()
            .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        let err = String::from_utf8_lossy(&out.stderr);
        let tps = err
            .lines()
            .find_map(|l| l.strip_prefix("achieved tok/s: "))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| format!("{} printed no tok/s: {err}", bin.display()))?;
        runs.push(tps);
    }
    Ok(median(runs))
}

fn page_tokens_per_s() -> Result<Vec<String>, String> {
    let shown = shown_on_the_page()?;
    let page = median(shown.first_visit);
    cmd::run(
        "cargo build --release -p model-tiny",
        cargo().args(["build", "--quiet", "--release", "-p", "model-tiny"]),
    )?;
    let ours = native_tokens_per_s(&target_dir().join("release/model-tiny"))?;
    let mut lines = Vec::new();
    for (figure, what) in [
        (page, "a first visit, the model downloaded"),
        (median(shown.second_generate), "its second Generate"),
        (median(shown.revisit), "a later visit, the model cached"),
    ] {
        lines.push(format!(
            "Try page shows {figure:>8.0} tok/s on {what:<38} (stories260K, 256 tokens, median of {RUNS})   \
             native model-tiny {ours:>8.0} tok/s   ratio {:.2}x",
            figure / ours
        ));
    }
    if let Some(run_c) = std::env::var_os("LLAMA2C_RUN") {
        let theirs = native_tokens_per_s(std::path::Path::new(&run_c))?;
        lines.push(format!(
            "Try page shows {page:>8.0} tok/s   llama2.c run.c {theirs:>8.0} tok/s   ratio {:.2}x",
            page / theirs
        ));
    }
    Ok(lines)
}

/// Size after gzip -9 (deflate plus the 18-byte gzip header and trailer).
fn gzip_len(bytes: &[u8]) -> u64 {
    miniz_oxide::deflate::compress_to_vec(bytes, 9).len() as u64 + 18
}

fn gzip_total(files: &[&str]) -> Result<(u64, u64), String> {
    let (mut raw, mut gz) = (0, 0);
    for f in files {
        let path = dist_dir().join(f);
        let bytes = std::fs::read(&path).map_err(|e| {
            format!(
                "cannot read {} (run `cargo xtask build`): {e}",
                path.display()
            )
        })?;
        raw += bytes.len() as u64;
        gz += gzip_len(&bytes);
    }
    Ok((raw, gz))
}

fn sizes() -> Result<Vec<String>, String> {
    let mut lines = Vec::new();
    for (what, files, goal) in [
        ("app", &["pkg/app_bg.wasm", "pkg/app.js"][..], GOAL_APP_GZIP),
        (
            "worker",
            &["pkg/worker_bg.wasm", "pkg/worker.js", "worker.js"][..],
            GOAL_WORKER_GZIP,
        ),
    ] {
        let (raw, gz) = gzip_total(files)?;
        lines.push(format!(
            "app size {what:<7} wasm+js {:>7.1} KB, gzip {:>6.1} KB (goal <= {} KB: {})",
            raw as f64 / 1000.0,
            gz as f64 / 1000.0,
            goal / 1000,
            if gz <= goal { "met" } else { "MISSED" }
        ));
    }
    Ok(lines)
}

/// Navigates to `/`, waits for the model, generates 200 greedy tokens and reads the page's
/// timings: (model ready since navigation start, time to first token), in ms.
fn one_load(browser: &Browser, url: &str, want_cached: bool) -> Result<(f64, f64), String> {
    let wait = Duration::from_secs(60);
    browser.goto(url)?;
    let loaded = browser.wait_for(
        "[data-testid=try][data-state=ready] [data-testid=try-loaded]",
        wait,
    )?;
    let cached = browser.attribute(&loaded, "data-from-cache")?;
    if cached.as_deref() != Some(if want_cached { "true" } else { "false" }) {
        return Err(format!(
            "expected from-cache {want_cached}, the page says {cached:?}"
        ));
    }
    let ready_ms = number(
        browser.attribute(&loaded, "data-ms")?,
        "data-ms of try-loaded",
    )?;
    browser.execute(
        "for (const [id, v] of [['try-temperature','0'],['try-max-tokens','200']]) {
           const el = document.getElementById(id); el.value = v;
           el.dispatchEvent(new Event('change', { bubbles: true })); }
         document.querySelector('[data-testid=try-generate]').click();",
        json!([]),
    )?;
    let ttft = browser.wait_for_text("[data-testid=try-ttft]", wait, |t| t.ends_with(" ms"))?;
    let ttft_ms = number(
        Some(ttft.trim_end_matches(" ms").to_string()),
        "time to first token",
    )?;
    browser.wait_for("[data-testid=try-tokens][data-done]", wait)?;
    Ok((ready_ms, ttft_ms))
}

fn number(v: Option<String>, what: &str) -> Result<f64, String> {
    v.as_deref()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| format!("{what}: not a number: {v:?}"))
}

fn load_to_first_token() -> Result<Vec<String>, String> {
    let stack = Stack::start(StackOptions {
        with_runner: false,
        ..StackOptions::for_test("bench-app")
    })?;
    let browser = Browser::start(Some("en"))?;
    let url = format!("{}/", stack.url);
    let (cold_ready, cold_ttft) = one_load(&browser, &url, false)?;
    let (warm_ready, warm_ttft) = one_load(&browser, &url, true)?;
    let cold = cold_ready + cold_ttft;
    let warm = warm_ready + warm_ttft;
    Ok(vec![
        format!(
            "app cold load -> first token {cold:>6.0} ms (model ready {cold_ready:.0} ms + first token {cold_ttft:.0} ms; goal <= {GOAL_COLD_MS:.0} ms: {})",
            if cold <= GOAL_COLD_MS {
                "met"
            } else {
                "MISSED"
            }
        ),
        format!(
            "app warm load -> first token {warm:>6.0} ms (model ready {warm_ready:.0} ms + first token {warm_ttft:.0} ms)"
        ),
    ])
}
