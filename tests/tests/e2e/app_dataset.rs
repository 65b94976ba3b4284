//! The Plan page's dataset check in headless Chromium: a file chosen on the page is checked in
//! a Web Worker (its bad lines named with their numbers), its counts go into `[data]` with one
//! click, and the plan's steps then follow the file as the trainer batches it; its tokens are
//! counted with the spec's model's own tokenizer once the operator has stored it on the edge
//! (the CLI's count of the same file with the same files), an estimate said so before; a file of
//! a gigabyte is read a slice at a time with its progress shown, the page running meanwhile.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use crate::app_support::{WAIT, click, set_value, spec_text, start, submit_auth, verify_elsewhere};
use std::io::Write;
use std::time::Duration;

/// The first usable line of each kind the test writes, and the two bad ones.
fn alpaca_file(dir: &std::path::Path, good: usize) -> std::path::PathBuf {
    let path = dir.join("mine.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    for n in 1..=good + 2 {
        match n {
            3 => writeln!(f, "{{\"instruction\": \"no output\"}}").unwrap(),
            10 => writeln!(
                f,
                "{{\"instruction\": \"x\", \"output\": \"y\", \"colour\": 1}}"
            )
            .unwrap(),
            _ => writeln!(
                f,
                "{{\"instruction\": \"Add {n} and 1.\", \"input\": \"\", \"output\": \"{}\"}}",
                n + 1
            )
            .unwrap(),
        }
    }
    path
}

#[test]
#[ignore = "needs the built stack and Chromium: cargo xtask test"]
fn a_dataset_chosen_on_the_plan_page_is_checked_and_plans_the_epochs() {
    let (stack, browser) = start("app_dataset", Some("en"));
    browser.goto(&format!("{}/plan", stack.url)).unwrap();
    browser.wait_for("[data-testid=plan-fits]", WAIT).unwrap();
    let dir = tempfile_dir("onramp-dataset");
    let path = alpaca_file(&dir, 300);
    let input = browser
        .wait_for("[data-testid=dataset-file]", WAIT)
        .unwrap();
    browser.type_text(&input, path.to_str().unwrap()).unwrap();
    let summary = browser
        .wait_for("[data-testid=dataset-summary][data-format=alpaca]", WAIT)
        .unwrap();
    assert_eq!(
        browser
            .attribute(&summary, "data-examples")
            .unwrap()
            .as_deref(),
        Some("300")
    );
    let lines: Vec<(String, String)> = [3, 10]
        .iter()
        .map(|n| {
            let li = browser
                .wait_for(
                    &format!("[data-testid=dataset-bad] li[data-line='{n}']"),
                    WAIT,
                )
                .unwrap();
            (
                browser
                    .attribute(&li, "data-code")
                    .unwrap()
                    .unwrap_or_default(),
                browser.text(&li).unwrap(),
            )
        })
        .collect();
    assert_eq!(lines[0].0, "missing_key", "{lines:?}");
    assert_eq!(lines[1].0, "unknown_key", "{lines:?}");
    assert!(lines[1].1.contains("`colour`"), "{lines:?}");
    let tokens: u64 = browser
        .attribute(&summary, "data-tokens")
        .unwrap()
        .unwrap()
        .parse()
        .unwrap();
    click(&browser, "[data-testid=dataset-use]");
    browser
        .wait_for_text("[data-testid=dataset-used]", WAIT, |t| {
            t.contains("Set in [data]")
        })
        .unwrap();
    let spec = spec_text(&browser);
    assert!(spec.contains("examples = 300"), "{spec}");
    assert!(spec.contains(&format!("tokens = {tokens}")), "{spec}");
    // The template trains 2 epochs of 2 × 8 sequences a step: 300 examples, 15 held out.
    let plan = jobspec::plan_toml(&spec);
    let steps = plan.valid.as_ref().map(|v| v.steps());
    assert_eq!(steps, Some((2 * 285_u64).div_ceil(16)), "{spec}");
    dropped_and_checked_again(&browser, &spec);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file dropped on the check's area is checked as one chosen; a shorter `seq_len` in the
/// spec checks it again, and more of its examples are cut.
fn dropped_and_checked_again(browser: &onramp_tests::webdriver::Browser, spec: &str) {
    let dropped = browser
        .execute(
            "const lines = [];
             for (let n = 0; n < 40; n++) {
               lines.push(JSON.stringify({prompt: 'Count to ' + n + '.', completion: ' one'.repeat(n + 1)}));
             }
             const dt = new DataTransfer();
             dt.items.add(new File([lines.join('\\n') + '\\n'], 'dropped.jsonl'));
             const zone = document.querySelector('[data-testid=dataset-drop]');
             for (const type of ['dragenter', 'dragover', 'drop']) {
               zone.dispatchEvent(new DragEvent(type, {dataTransfer: dt, bubbles: true, cancelable: true}));
             }
             return true;",
            serde_json::json!([]),
        )
        .unwrap();
    assert_eq!(dropped, serde_json::json!(true));
    let summary = "[data-testid=dataset-summary][data-format=prompt_completion]";
    let s = browser.wait_for(summary, WAIT).unwrap();
    let attr = |name: &str| browser.attribute(&s, name).unwrap().unwrap_or_default();
    assert_eq!(attr("data-examples"), "40");
    let (seq_len, cut) = (attr("data-seq-len"), attr("data-truncated"));
    assert_eq!(cut, "0", "the template's seq_len holds every example");
    let shorter = spec.replace(&format!("seq_len = {seq_len}"), "seq_len = 16");
    assert_ne!(shorter, spec, "seq_len = {seq_len} in {spec}");
    set_value(browser, "[data-testid=plan-toml]", &shorter);
    let again = browser
        .wait_for(&format!("{summary}[data-seq-len='16']"), WAIT)
        .unwrap();
    let cut: u64 = browser
        .attribute(&again, "data-truncated")
        .unwrap()
        .unwrap()
        .parse()
        .unwrap();
    assert!(cut > 0, "{cut} examples cut at seq_len 16");
}

#[test]
#[ignore = "needs the built stack and Chromium: cargo xtask test"]
fn a_gigabyte_file_is_read_in_slices_with_progress_while_the_page_keeps_running() {
    let (stack, browser) = start("app_dataset_large", Some("zh"));
    browser.goto(&format!("{}/plan", stack.url)).unwrap();
    browser.wait_for("[data-testid=plan-fits]", WAIT).unwrap();
    let dir = tempfile_dir("onramp-dataset-large");
    let path = dir.join("book.txt");
    // 1 GiB of 64-byte lines (16 estimated tokens each), no two neighbours alike.
    let lines = (1_u64 << 30) / 64;
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        for n in 0..lines {
            writeln!(f, "{:>12} {}", n, "w".repeat(50)).unwrap();
        }
    }
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 1 << 30);
    // A timer on the page's own thread: it keeps firing only if the check leaves that thread free.
    browser
        .execute(
            "window.onrampTicks = 0; setInterval(() => window.onrampTicks++, 10); return 0;",
            serde_json::json!([]),
        )
        .unwrap();
    let input = browser
        .wait_for("[data-testid=dataset-file]", WAIT)
        .unwrap();
    let started = std::time::Instant::now();
    browser.type_text(&input, path.to_str().unwrap()).unwrap();
    let (shown, ticked) = watch_progress(&browser, 1 << 30);
    let seconds = started.elapsed().as_secs_f64();
    assert!(shown.len() >= 8, "progress shown only at {shown:?}");
    assert!(
        ticked,
        "the page's timer never fired between two progress readings: {shown:?}"
    );
    let summary = browser
        .wait_for("[data-testid=dataset-summary][data-format=text]", WAIT)
        .unwrap();
    // The template's seq_len is 2048.
    let sequences = lines * 16 / 2048;
    assert_eq!(
        browser.attribute(&summary, "data-examples").unwrap(),
        Some(sequences.to_string())
    );
    let text = browser.text(&summary).unwrap();
    assert!(text.contains("每轮样本"), "{text}");
    println!(
        "1 GiB checked in the browser's worker in {seconds:.1} s ({:.0} MB/s), the progress bar seen at {} points, the page's timer running throughout",
        (1u64 << 30) as f64 / 1e6 / seconds,
        shown.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Reads the page's progress bar until the check is done: the distinct values it showed before
/// the end, and whether the page's timer fired between two readings of an unfinished check.
fn watch_progress(browser: &onramp_tests::webdriver::Browser, size: u64) -> (Vec<u64>, bool) {
    let script = "const p = document.querySelector('[data-testid=dataset-progress] progress');
        const done = document.querySelector('[data-testid=dataset-summary]') !== null;
        return [p ? Number(p.value) : -1, p ? Number(p.max) : -1, window.onrampTicks, done];";
    let deadline = std::time::Instant::now() + Duration::from_secs(600);
    let (mut shown, mut ticked, mut last_ticks) = (Vec::<u64>::new(), false, None::<u64>);
    loop {
        let v = browser.execute(script, serde_json::json!([])).unwrap();
        let (value, max) = (v[0].as_f64().unwrap(), v[1].as_f64().unwrap());
        let ticks = v[2].as_u64().unwrap();
        if v[3].as_bool().unwrap() {
            return (shown, ticked);
        }
        if value > 0.0 && value < max {
            assert_eq!(max as u64, size, "the bar's end is the file's size");
            if shown.last() != Some(&(value as u64)) {
                shown.push(value as u64);
            }
            ticked |= last_ticks.is_some_and(|t| ticks > t);
            last_ticks = Some(ticks);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no summary: {shown:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
#[ignore = "needs the built stack and Chromium: cargo xtask test"]
fn a_checked_dataset_uploads_in_parts_and_the_spec_names_it() {
    let (stack, browser) = start("app_dataset_upload", Some("en"));
    browser.goto(&format!("{}/account", stack.url)).unwrap();
    click(&browser, "[data-testid=auth-switch]");
    let email = onramp_tests::api::unique_email("app-dataset");
    submit_auth(&browser, &email, "correct horse battery");
    browser.wait_for("[data-testid=verify-note]", WAIT).unwrap();
    verify_elsewhere(&stack, &email);
    click(&browser, "[data-testid=nav-plan]");
    browser.wait_for("[data-testid=plan-fits]", WAIT).unwrap();
    let dir = tempfile_dir("onramp-dataset-upload");
    // About 9 MiB: two parts of 8 MiB.
    let path = alpaca_file(&dir, 140_000);
    let input = browser
        .wait_for("[data-testid=dataset-file]", WAIT)
        .unwrap();
    browser.type_text(&input, path.to_str().unwrap()).unwrap();
    browser
        .wait_for("[data-testid=dataset-summary][data-format=alpaca]", WAIT)
        .unwrap();
    click(&browser, "[data-testid=dataset-upload]");
    let done = browser
        .wait_for("[data-testid=dataset-uploaded]", Duration::from_secs(120))
        .unwrap();
    let id = browser.attribute(&done, "data-id").unwrap().unwrap();
    assert!(id.starts_with("ds_"), "{id}");
    let spec = spec_text(&browser);
    assert!(spec.contains(&format!("dataset = \"{id}\"")), "{spec}");
    assert!(spec.contains("examples = 140000"), "{spec}");
    let listed = browser
        .execute(
            "return fetch('/api/datasets').then(r => r.json());",
            serde_json::json!([]),
        )
        .unwrap();
    let d = &listed["datasets"][0];
    assert_eq!(
        (d["id"].as_str(), d["complete"].as_bool()),
        (Some(id.as_str()), Some(true)),
        "{listed}"
    );
    assert_eq!(
        d["size"].as_u64(),
        Some(std::fs::metadata(&path).unwrap().len()),
        "{listed}"
    );
    assert_eq!(d["parts"], 2, "{listed}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The words of the test's chat file, which its tokenizer knows (one token each).
const WORDS: &[&str] = &[
    "the", "king", "shall", "speak", "of", "love", "and", "war", "good", "night", "我们", "训练",
    "模型", "café", "?", ".", "!",
];

/// A chat JSONL of `n` conversations from [`WORDS`] (a few words it does not know, too).
fn chat_file(dir: &std::path::Path, n: usize) -> std::path::PathBuf {
    let path = dir.join("chat.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    let words = |seed: usize, count: usize| -> String {
        (0..count)
            .map(|k| match (seed * 7 + k * 13) % 23 {
                i if i < WORDS.len() => WORDS[i],
                _ => "zebra",
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    for i in 0..n {
        let msgs = serde_json::json!([
            {"role": "user", "content": words(i, 3 + i % 11)},
            {"role": "assistant", "content": words(i + 1, 5 + i % 29)},
        ]);
        writeln!(f, "{}", serde_json::json!({"messages": msgs})).unwrap();
    }
    path
}

/// A Hugging Face tokenizer folder made here: a word-level `tokenizer.json` over [`WORDS`] with
/// ChatML's special tokens, and a `tokenizer_config.json` with the trainer's ChatML template.
fn tokenizer_folder(dir: &std::path::Path) -> std::path::PathBuf {
    let folder = dir.join("tokenizer");
    std::fs::create_dir_all(&folder).unwrap();
    let specials = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"];
    let mut vocab = serde_json::Map::new();
    for (id, w) in specials.iter().chain(WORDS).enumerate() {
        vocab.insert((*w).to_string(), id.into());
    }
    for w in [
        "user",
        "assistant",
        "system",
        "<|",
        "|>",
        "im_start",
        "im_end",
    ] {
        let id = vocab.len();
        vocab.entry(w.to_string()).or_insert(id.into());
    }
    let added: Vec<_> = specials
        .iter()
        .enumerate()
        .map(|(id, t)| {
            serde_json::json!({"id": id, "content": t, "single_word": false, "lstrip": false,
                "rstrip": false, "normalized": false, "special": true})
        })
        .collect();
    let tokenizer = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": added,
        "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null,
        "decoder": null, "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}
    });
    let templates: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            onramp_tests::paths::repo_root().join("trainer/src/onramp_train/chat_templates.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let config = serde_json::json!({
        "chat_template": templates["families"]["chatml"], "eos_token": "<|im_end|>",
        "unk_token": "<unk>", "tokenizer_class": "PreTrainedTokenizerFast"
    });
    std::fs::write(folder.join("tokenizer.json"), tokenizer.to_string()).unwrap();
    std::fs::write(folder.join("tokenizer_config.json"), config.to_string()).unwrap();
    folder
}

/// What `onramp datasets check` counts in `file` with the tokenizer in `folder`.
fn cli_counts(file: &std::path::Path, folder: &std::path::Path, model: &str) -> (u64, u64) {
    let out = std::process::Command::new(onramp_tests::paths::cli_bin())
        .args([
            "datasets",
            "check",
            "--json",
            "--seq-len",
            "2048",
            "--model",
            model,
        ])
        .arg("--tokenizer")
        .arg(folder)
        .arg(file)
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(r["exact"], true, "{r}");
    (
        r["examples"].as_u64().unwrap(),
        r["tokens"].as_u64().unwrap(),
    )
}

/// The operator stores the tokenizer in `folder` as `model`'s; anyone may read it back, by
/// another case of the id too, and a file not stored is a 404.
pub(crate) fn store_tokenizer(
    stack: &onramp_tests::stack::Stack,
    folder: &std::path::Path,
    model: &str,
) {
    let admin = onramp_tests::api::Client::with_bearer(&stack.url, &stack.admin_token);
    for name in ["tokenizer.json", "tokenizer_config.json"] {
        let bytes = std::fs::read(folder.join(name)).unwrap();
        let a = admin.request(
            "PUT",
            &format!("/api/admin/models/{model}/tokenizer/{name}"),
            Some(bytes.clone()),
            &[("content-type", "application/octet-stream")],
        );
        assert_eq!(a.status, 200, "{name}: {}", a.shown());
        assert_eq!(a.json["size"], bytes.len(), "{}", a.shown());
    }
    let anyone = onramp_tests::api::Client::new(&stack.url);
    let served = anyone.get(&format!(
        "/api/models/{}/tokenizer/tokenizer.json",
        model.to_ascii_uppercase()
    ));
    assert_eq!(served.status, 200);
    assert_eq!(
        served.bytes,
        std::fs::read(folder.join("tokenizer.json")).unwrap()
    );
    let missing = anyone.get(&format!(
        "/api/models/{model}/tokenizer/chat_template.jinja"
    ));
    assert_eq!((missing.status, missing.code()), (404, "not_found"));
}

#[test]
#[ignore = "needs the built stack and Chromium: cargo xtask test"]
fn the_page_counts_with_the_models_own_tokenizer_where_the_edge_serves_it() {
    let (stack, browser) = start("app_dataset_tokenizer", Some("en"));
    let dir = tempfile_dir("onramp-dataset-tokenizer");
    let folder = tokenizer_folder(&dir);
    let path = chat_file(&dir, 400);
    let template = std::fs::read_to_string(
        onramp_tests::paths::repo_root().join("jobspec/specs/7b-lora-4090.toml"),
    )
    .unwrap();
    assert!(template.contains("model = \"qwen2.5-7b\""));
    browser.goto(&format!("{}/plan", stack.url)).unwrap();
    set_value(&browser, "[data-testid=plan-toml]", &template);
    browser.wait_for("[data-testid=plan-fits]", WAIT).unwrap();
    let input = browser
        .wait_for("[data-testid=dataset-file]", WAIT)
        .unwrap();
    browser.type_text(&input, path.to_str().unwrap()).unwrap();
    // No tokenizer of qwen2.5-7b on this edge: an estimate, said so.
    let summary = browser
        .wait_for("[data-testid=dataset-summary][data-format=chat]", WAIT)
        .unwrap();
    assert_eq!(
        browser
            .attribute(&summary, "data-exact")
            .unwrap()
            .as_deref(),
        Some("false")
    );
    let why = browser.attribute(&summary, "data-counted-with").unwrap();
    assert!(
        why.as_deref().unwrap_or("").contains("not stored"),
        "{why:?}"
    );
    let shown = browser.text(&summary).unwrap();
    assert!(shown.contains("an estimate"), "{shown}");

    // The operator stores llama-3-8b's tokenizer; the user switches to that model and the file is
    // checked again with it: the page's counts are the CLI's with the same files.
    store_tokenizer(&stack, &folder, "llama-3-8b");
    set_value(
        &browser,
        "[data-testid=plan-toml]",
        &template.replace("model = \"qwen2.5-7b\"", "model = \"llama-3-8b\""),
    );
    let summary = browser
        .wait_for(
            "[data-testid=dataset-summary][data-format=chat][data-exact=true]",
            WAIT,
        )
        .unwrap();
    let (examples, tokens) = cli_counts(&path, &folder, "llama-3-8b");
    let attr = |name: &str| -> u64 {
        browser
            .attribute(&summary, name)
            .unwrap()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(
        (attr("data-examples"), attr("data-tokens")),
        (examples, tokens)
    );
    assert_eq!(examples, 400);
    let shown = browser.text(&summary).unwrap();
    assert!(shown.contains("the model's own tokenizer"), "{shown}");
    let _ = std::fs::remove_dir_all(&dir);
}
