//! The dataset checker in the browser: the Plan page's Web Worker (datacheck compiled to wasm)
//! counts the file `trainer/bench/bench_data.py` made, with the tokenizer it trained, which the
//! operator stores on the edge as a catalogue model's; timed from the file's choice to the
//! page's summary, and set next to the native checker and Python's `tokenizers` alone on the
//! same file in the same run. The counts must be the native checker's.

use onramp_tests::api::Client;
use onramp_tests::stack::{Stack, StackOptions};
use onramp_tests::webdriver::Browser;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// Runs of the browser figure; the median is printed.
const RUNS: usize = 3;

/// The catalogue model whose tokenizer the bench's stands in for (its spec is a starter's).
const MODEL: &str = "qwen2.5-7b";

/// What the Python side measured (`bench_data.py --keep`): the file, its counts, the native
/// checker's seconds and the `tokenizers` reference's.
pub struct Measured {
    pub mb: f64,
    pub examples: u64,
    pub tokens: u64,
    pub native_s: f64,
    pub tokenizers_s: f64,
}

impl Measured {
    pub fn from_json(v: &Value) -> Result<Measured, String> {
        let f = |k: &str| {
            v[k].as_f64()
                .ok_or(format!("bench_data.py gave no {k}: {v}"))
        };
        Ok(Measured {
            mb: f("mb")?,
            examples: v["examples"].as_u64().ok_or("no examples")?,
            tokens: v["tokens"].as_u64().ok_or("no tokens")?,
            native_s: f("native_s")?,
            tokenizers_s: f("tokenizers_s")?,
        })
    }
}

/// The browser's figures, as lines to print. `dir` holds `chat.jsonl` and `tok/`.
pub fn run(dir: &Path, m: &Measured) -> Result<Vec<String>, String> {
    let stack = Stack::start(StackOptions {
        with_runner: false,
        ..StackOptions::for_test("bench-data")
    })?;
    let admin = Client::with_bearer(&stack.url, &stack.admin_token);
    // What Transformers saved of the tokenizer, as an operator stores a model's folder.
    for name in api::datasets::TOKENIZER_FILES {
        let Ok(bytes) = std::fs::read(dir.join("tok").join(name)) else {
            continue;
        };
        let r = admin.request(
            "PUT",
            &format!("/api/admin/models/{MODEL}/tokenizer/{name}"),
            Some(bytes),
            &[("content-type", "application/octet-stream")],
        );
        if r.status != 200 {
            return Err(format!("storing {name}: {}", r.shown()));
        }
    }
    let spec =
        std::fs::read_to_string(crate::cmd::repo_root().join("jobspec/specs/7b-lora-4090.toml"))
            .map_err(|e| format!("the starter spec: {e}"))?;
    let mut seconds = Vec::new();
    for _ in 0..RUNS {
        seconds.push(one_check(&stack, &spec, &dir.join("chat.jsonl"), m)?);
    }
    seconds.sort_by(f64::total_cmp);
    let s = seconds[RUNS / 2];
    Ok(vec![
        format!(
            "datacheck in Chromium's worker (wasm, the Plan page; tokenizer fetched from the edge): \
             {s:.2} s = {:.1} MB/s, {:.2} M tokens/s (median of {RUNS}); counts equal the native checker's",
            m.mb / s,
            m.tokens as f64 / s / 1e6
        ),
        format!(
            "  = browser {:.2}x the tokenizers reference (goal >= 0.5x); {:.2}x the native checker",
            m.tokenizers_s / s,
            m.native_s / s
        ),
    ])
}

/// One check on a fresh Plan page: seconds from choosing the file to the exact summary.
fn one_check(stack: &Stack, spec: &str, file: &Path, m: &Measured) -> Result<f64, String> {
    let browser = Browser::start(Some("en"))?;
    browser.goto(&format!("{}/plan", stack.url))?;
    browser.wait_for("[data-testid=plan-toml]", Duration::from_secs(60))?;
    browser.execute(
        "const el = document.querySelector('[data-testid=plan-toml]');
         el.value = arguments[0];
         el.dispatchEvent(new Event('input', { bubbles: true }));
         return true;",
        json!([spec]),
    )?;
    browser.wait_for("[data-testid=plan-fits]", Duration::from_secs(60))?;
    let input = browser.wait_for("[data-testid=dataset-file]", Duration::from_secs(60))?;
    let started = Instant::now();
    browser.type_text(&input, &file.to_string_lossy())?;
    let summary = browser.wait_for(
        "[data-testid=dataset-summary][data-exact=true]",
        Duration::from_secs(600),
    )?;
    let s = started.elapsed().as_secs_f64();
    let got = (
        browser.attribute(&summary, "data-examples")?,
        browser.attribute(&summary, "data-tokens")?,
    );
    let want = (Some(m.examples.to_string()), Some(m.tokens.to_string()));
    if got != want {
        return Err(format!(
            "the browser counted {got:?} (examples, tokens), the native checker {want:?}"
        ));
    }
    Ok(s)
}
