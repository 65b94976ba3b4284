//! A model that onramp-train trained opens in the browser's playground: from the job page's
//! "open in playground", the Try page loads the job's merged model (a Hugging Face folder among
//! its artifacts) into model-tiny in the tab, and its greedy text equals Transformers' `generate`
//! on the same folder and prompt. Run by `app_trainer`'s journey, on its LoRA job that merges its
//! adapter (`output.merge_adapter`).
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use crate::app_support::{WAIT, click, set_value, text_content};
use onramp_tests::stack::Stack;
use onramp_tests::webdriver::Browser;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Transformers' greedy text for `prompt` over `steps` positions (llama2.c's `-n`: the prompt's
/// included), decoded as the tokenizer decodes, special tokens left out.
const REFERENCE: &str = r#"
import json, sys, torch
from transformers import AutoTokenizer, LlamaForCausalLM
folder, prompt, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
tok = AutoTokenizer.from_pretrained(folder)
model = LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
ids = tok(prompt, return_tensors="pt").input_ids
with torch.no_grad():
    out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                         max_new_tokens=steps + 1 - ids.shape[1], pad_token_id=0)
print(json.dumps(tok.decode(out[0], skip_special_tokens=True)))
"#;

/// The one `merged/` folder with a `config.json` under `dir` (the runner's job folders).
fn merged_folder(dir: &Path, depth: usize) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if !path.is_dir() || path.is_symlink() {
            continue;
        }
        if path.file_name().is_some_and(|n| n == "merged") && path.join("config.json").is_file() {
            return Some(path);
        }
        if depth > 0
            && let Some(found) = merged_folder(&path, depth - 1)
        {
            return Some(found);
        }
    }
    None
}

/// From the job page (artifacts listed): open the trained model in the playground, generate
/// greedily, and compare with Transformers on the folder the runner's job wrote.
pub fn trained_model_in_the_playground(stack: &Stack, browser: &Browser, job_id: &str) {
    let opened = std::time::Instant::now();
    click(browser, "[data-testid=artifacts-playground]");
    browser
        .wait_for_text(
            "[data-testid=try][data-state=ready] [data-testid=try-loaded]",
            WAIT * 3,
            |t| t.contains(&job_id[..8]),
        )
        .unwrap_or_else(|e| panic!("{e}: {}", text_content(browser, "[data-testid=try]")));
    let ready = opened.elapsed();
    let (prompt, steps) = ("First Citizen:", 40);
    set_value(browser, "[data-testid=try-prompt]", prompt);
    set_value(browser, "[data-testid=try-temperature]", "0");
    set_value(browser, "[data-testid=try-max-tokens]", &steps.to_string());
    click(browser, "[data-testid=try-generate]:not([disabled])");
    browser
        .wait_for("[data-testid=try-tokens][data-done=finished]", WAIT)
        .expect("the trained model generates in the tab");
    let shown = text_content(browser, "[data-testid=try-output]");
    // What a user waits, printed for the note (a figure, not a bound).
    println!(
        "playground: the job's merged model ready {} ms after its link was opened; first token {} \
         after Generate",
        ready.as_millis(),
        text_content(browser, "[data-testid=try-ttft]")
    );

    let folder = merged_folder(&stack.state_dir.join("runner"), 6)
        .unwrap_or_else(|| panic!("no merged/ folder under {}", stack.state_dir.display()));
    let python = std::env::var("ONRAMP_PYTHON").expect("ONRAMP_PYTHON (cargo xtask test sets it)");
    let out = Command::new(python)
        .args(["-c", REFERENCE])
        .arg(&folder)
        .arg(prompt)
        .arg(steps.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8_lossy(&out.stdout);
    let expected: String = serde_json::from_str(line.trim().lines().last().unwrap()).unwrap();
    assert!(
        expected.len() > prompt.len(),
        "Transformers wrote nothing: {expected:?}"
    );
    assert_eq!(
        shown, expected,
        "the tab's greedy text against Transformers' generate"
    );
}
