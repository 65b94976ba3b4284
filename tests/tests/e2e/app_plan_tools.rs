//! The Plan page's tools end to end: a real DeepSpeed `ds_config.json` pasted into the import
//! box updates the spec (and a broken one is refused with a message naming the problem and its
//! line, leaving the spec as it was), and each copy button puts exactly the generated launch file
//! on the clipboard — compared with what jobspec generates natively from the page's spec.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use crate::app_support::{WAIT, click, set_value, spec_text, start, text_content};
use onramp_tests::webdriver::Browser;
use serde_json::json;

/// A ZeRO-3 config in the shape DeepSpeed's and Hugging Face's examples use, with its own AdamW
/// numbers and a key the job's ds_config writes otherwise (`steps_per_print`) left in, as users
/// paste them.
const ZERO3_OFFLOAD: &str = r#"{
  "bf16": { "enabled": true },
  "optimizer": {
    "type": "AdamW",
    "params": { "lr": 3e-5, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.0 }
  },
  "scheduler": {
    "type": "WarmupLR",
    "params": { "warmup_min_lr": 0, "warmup_max_lr": 3e-5, "warmup_num_steps": 100 }
  },
  "zero_optimization": {
    "stage": 3,
    "offload_optimizer": { "device": "cpu", "pin_memory": true },
    "offload_param": { "device": "cpu", "pin_memory": true },
    "overlap_comm": true,
    "contiguous_gradients": true,
    "stage3_gather_16bit_weights_on_model_save": true
  },
  "gradient_accumulation_steps": 16,
  "gradient_clipping": 1.0,
  "train_micro_batch_size_per_gpu": 1,
  "steps_per_print": 2000,
  "wall_clock_breakdown": false
}"#;

/// The value of the TOML line `key = value` (first match), as written.
fn toml_value(spec: &str, key: &str) -> Option<String> {
    spec.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// The config's AdamW numbers and clipping, as the spec has them after the import.
fn assert_adamw_numbers(after: &str) {
    for (key, want) in [
        ("adam_beta1", 0.9),
        ("adam_beta2", 0.999),
        ("adam_epsilon", 1e-8),
        ("weight_decay", 0.0),
        ("max_grad_norm", 1.0),
    ] {
        let got: f64 = toml_value(after, key)
            .unwrap_or_else(|| panic!("{key} after the import:\n{after}"))
            .parse()
            .unwrap();
        assert!((got - want).abs() < 1e-15, "{key} = {got} after the import");
    }
}

fn open_plan(name: &str) -> (onramp_tests::stack::Stack, Browser) {
    let (stack, browser) = start(name, Some("en"));
    browser.goto(&format!("{}/plan", stack.url)).unwrap();
    browser
        .wait_for("[data-testid=plan-fits][data-fits=true]", WAIT)
        .unwrap();
    (stack, browser)
}

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn a_pasted_ds_config_updates_the_spec() {
    let (_stack, browser) = open_plan("app-plan-ds-import");
    let before = spec_text(&browser);
    // The starter spec differs from the config in every setting the import carries, so each
    // assertion below can only pass through the import.
    assert_ne!(toml_value(&before, "zero_stage").as_deref(), Some("3"));
    assert_ne!(toml_value(&before, "grad_accum").as_deref(), Some("16"));

    set_value(&browser, "[data-testid=ds-json]", ZERO3_OFFLOAD);
    click(&browser, "[data-testid=ds-import]");
    browser
        .wait_for_text("[data-testid=ds-status]", WAIT, |t| {
            t.contains("Imported into the spec")
        })
        .expect("the page says the config was imported");
    let after = spec_text(&browser);
    for (key, want) in [
        ("zero_stage", "3"),
        ("offload_optimizer", "\"cpu\""),
        ("offload_params", "\"cpu\""),
        ("micro_batch", "1"),
        ("grad_accum", "16"),
        ("precision", "\"bf16\""),
    ] {
        assert_eq!(
            toml_value(&after, key).as_deref(),
            Some(want),
            "{key} after the import:\n{after}"
        );
    }
    let lr: f64 = toml_value(&after, "lr").unwrap().parse().unwrap();
    assert!((lr - 3e-5).abs() < 1e-12, "lr after the import: {lr}");
    // The rest of the spec (name, model, card) is kept.
    assert_eq!(toml_value(&after, "name"), toml_value(&before, "name"));
    assert_eq!(toml_value(&after, "card"), toml_value(&before, "card"));
    // The form view and the generated ds_config follow the new spec.
    onramp_tests::wait::until("the form to show ZeRO-3", WAIT, || {
        let v = browser.execute(
            "return document.querySelector('[data-testid=form-zero]').value;",
            json!([]),
        )?;
        Ok((v == json!("3")).then_some(()))
    })
    .unwrap();
    onramp_tests::wait::until("the generated ds_config to say stage 3", WAIT, || {
        let text = text_content(&browser, "[data-testid=\"artifact-ds_config.json\"] pre");
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        Ok((v["zero_optimization"]["stage"] == json!(3)).then_some(()))
    })
    .unwrap();
    // Its schedule and its AdamW numbers came too; what the job's ds_config writes otherwise
    // (how often DeepSpeed prints) is named with its line.
    assert_eq!(
        toml_value(&after, "schedule").as_deref(),
        Some("\"constant\"")
    );
    assert_eq!(toml_value(&after, "warmup").as_deref(), Some("100"));
    assert_adamw_numbers(&after);
    let noted = browser
        .wait_for(
            "[data-testid=ds-diagnostics] li[data-code=not-carried]",
            WAIT,
        )
        .map(|_| text_content(&browser, "[data-testid=ds-diagnostics]"))
        .unwrap();
    assert!(
        noted.contains("line 22: not-carried")
            && noted.contains("steps_per_print")
            && !noted.contains("betas"),
        "{noted}"
    );
}

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn a_broken_ds_config_is_refused_with_its_line_and_changes_nothing() {
    let (_stack, browser) = open_plan("app-plan-ds-broken");
    let before = spec_text(&browser);
    // A trailing comma on line 3, as hand-edited JSON often has.
    set_value(
        &browser,
        "[data-testid=ds-json]",
        "{\n  \"zero_optimization\": { \"stage\": 3 },\n  \"train_micro_batch_size_per_gpu\": 1,\n}",
    );
    click(&browser, "[data-testid=ds-import]");
    let item = browser
        .wait_for("[data-testid=ds-diagnostics] li[data-code=syntax]", WAIT)
        .expect("a syntax error is listed");
    let message = browser.text(&item).unwrap();
    assert!(
        message.contains("JSON syntax error") && message.contains("line 4"),
        "the message says what and where: {message:?}"
    );
    assert_eq!(
        spec_text(&browser),
        before,
        "a refused import changes nothing"
    );
    assert!(
        !text_content(&browser, "[data-testid=ds-status]").contains("Imported"),
        "nothing claims to be imported"
    );

    // A well-formed config that breaks DeepSpeed's own rules is refused too, naming the rule.
    set_value(
        &browser,
        "[data-testid=ds-json]",
        r#"{"zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}}}"#,
    );
    click(&browser, "[data-testid=ds-import]");
    let item = browser
        .wait_for("[data-testid=ds-diagnostics] li[data-code=conflict]", WAIT)
        .expect("the rule is listed");
    assert!(
        browser
            .text(&item)
            .unwrap()
            .contains("offload_param needs ZeRO stage 3")
    );
    assert_eq!(
        spec_text(&browser),
        before,
        "a refused import changes nothing"
    );
}

/// Clicks a copy button and returns what the clipboard then holds, once the page says it copied.
fn copy_and_read(browser: &Browser, name: &str) -> String {
    // A marker first, so that a button that copies nothing cannot pass on an earlier copy.
    let marker = format!("clipboard before copy-{name}");
    browser
        .execute(
            "return navigator.clipboard.writeText(arguments[0]).then(() => true);",
            json!([marker]),
        )
        .unwrap();
    let button = format!("[data-testid=\"copy-{name}\"]");
    click(browser, &button);
    browser
        .wait_for_text(&button, WAIT, |t| t == "Copied")
        .expect("the button says it copied");
    let text = browser
        .execute("return navigator.clipboard.readText();", json!([]))
        .unwrap();
    let text = text.as_str().unwrap().to_string();
    assert_ne!(text, marker, "copy-{name} put nothing on the clipboard");
    text
}

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn the_copy_buttons_put_the_generated_files_on_the_clipboard() {
    let (_stack, browser) = open_plan("app-plan-copy");
    // The 8×A100 ZeRO-3 template, so that every launch file (ds_config included) is generated.
    click(&browser, "[data-testid=template-7b-sft-zero3-8xa100]");
    browser
        .wait_for("[data-testid=\"copy-ds_config.json\"]", WAIT)
        .unwrap();
    browser.set_permission("clipboard-read", "granted").unwrap();
    browser
        .set_permission("clipboard-write", "granted")
        .unwrap();

    let spec = spec_text(&browser);
    let want = jobspec::plan_toml(&spec)
        .artifacts
        .expect("the template generates launch files");
    assert!(!want.ds_config.is_empty() && !want.sbatch.is_empty());
    for (name, expected) in [
        ("ds_config.json", &want.ds_config),
        ("deepspeed", &want.deepspeed),
        ("torchrun", &want.torchrun),
        ("sbatch", &want.sbatch),
    ] {
        let got = copy_and_read(&browser, name);
        assert_eq!(&got, expected, "clipboard after copy-{name}");
    }
}
