//! A `lora` job submitted from the app's Submit button, as a user does it: sign up and verify
//! the email, paste the spec into the Plan page, choose the local runner, press Submit. The
//! runner trains it with onramp-train on the CPU; the job page shows its progress, ends
//! `succeeded`, and its loss curve (and the curve's table) holds every step the trainer reported.
//!
//! Needs the built stack, `../shared` and the trainer's environment (`ONRAMP_PYTHON`, which
//! `cargo xtask test` sets): ignored in a plain `cargo test`.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use crate::app_support::{
    WAIT, click, set_value, spec_text, submit_auth, text_content, verify_elsewhere,
};
use onramp_tests::api::unique_email;
use onramp_tests::stack::{Stack, StackExtras, StackOptions};
use onramp_tests::webdriver::Browser;
use serde_json::json;
use std::time::Duration;

#[test]
#[ignore = "needs the built stack, ../shared and the trainer's environment: run through `cargo xtask test`"]
fn a_lora_job_from_the_submit_button_trains_and_draws_its_loss_curve() {
    let stack = Stack::start_with(
        StackOptions::for_test("app-trainer"),
        StackExtras {
            vars: vec![("SIGNUP_GRANT_FEN".into(), "10000".into())],
            extra_backends: Vec::new(),
        },
    )
    .expect("stack starts");
    let browser = Browser::start(Some("en")).expect("chromium starts");

    sign_up_with_credit(&stack, &browser);
    // A second run beside the first, at another learning rate, for the comparison at the end.
    let other = submit_lora(&browser, "app-lora-b", "5e-3", false);
    // This one merges its adapter, so that the playground can open what it trained.
    let job_id = submit_lora(&browser, "app-lora", "1e-2", true);

    // It trains: progress as step of the spec's 12, then succeeded.
    browser
        .wait_for("[data-testid=job-progress][data-total=\"12\"]", WAIT * 10)
        .expect("progress of 12 steps on the job page");
    let ended = onramp_tests::wait::until("the lora job to end", Duration::from_secs(900), || {
        let state = browser
            .execute(
                "const p = document.querySelector('[data-testid=page-job]');
                     return p ? p.getAttribute('data-state') : null;",
                json!([]),
            )
            .map_err(|e| e.to_string())?;
        match state.as_str() {
            Some("succeeded" | "failed" | "cancelled") => Ok(Some(state)),
            _ => Err(format!("state so far: {state}")),
        }
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", text_content(&browser, "[data-testid=page-job]")));
    assert_eq!(
        ended,
        json!("succeeded"),
        "job {job_id}: {}",
        text_content(&browser, "[data-testid=page-job]")
    );

    // The loss curve holds the trainer's points: one table row per reported step, the last one
    // step 12, and the loss fell.
    let rows = onramp_tests::wait::until("the loss table", WAIT, || {
        let rows = browser
            .execute(
                "return [...document.querySelectorAll('[data-testid=loss-table] tbody tr')]
                   .map(r => [...r.children].map(c => c.textContent));",
                json!([]),
            )
            .map_err(|e| e.to_string())?;
        let last_is_12 = rows
            .as_array()
            .and_then(|r| r.last())
            .is_some_and(|r| r[0] == "12");
        Ok(last_is_12.then_some(rows))
    })
    .unwrap();
    let losses: Vec<f64> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r[1].as_str().and_then(|l| l.parse().ok()))
        .collect();
    assert!(losses.len() >= 6, "{rows}");
    assert!(
        losses.last().unwrap() < losses.first().unwrap(),
        "the loss falls: {losses:?}"
    );
    assert!(
        browser.find("[data-testid=loss-train]").unwrap().is_some(),
        "the curve is drawn"
    );
    eval_curve_drawn(&browser);
    artifacts_listed(&browser);
    results_shown(&browser);
    crate::app_playground::trained_model_in_the_playground(&stack, &browser, &job_id);
    crate::app_compare::compared(&stack, &browser, &job_id, &other);
}

/// The job page shows what the run achieved: base against trained, the eval loss lower after
/// training, and the eval set's prompts answered by both models.
/// The run's evaluations (the spec's `[eval]` defaults: five a run and the last step) are the
/// job page chart's eval curve.
fn eval_curve_drawn(browser: &Browser) {
    let val = onramp_tests::wait::until("the eval curve", WAIT, || {
        let val = browser
            .execute(
                "const c = document.querySelector('[data-testid=loss-chart]');
                 const p = document.querySelector('[data-testid=loss-val]');
                 return [Number(c.dataset.valPoints), p.getAttribute('d')];",
                json!([]),
            )
            .map_err(|e| e.to_string())?;
        Ok((val[0].as_u64() >= Some(2)).then_some(val))
    })
    .unwrap();
    assert!(
        val[1]
            .as_str()
            .is_some_and(|d| d.starts_with('M') && d.contains('L')),
        "the eval curve is drawn: {val}"
    );
}

fn results_shown(browser: &Browser) {
    let rows = onramp_tests::wait::until("the run's results", WAIT, || {
        let rows = browser
            .execute(
                "return [...document.querySelectorAll('[data-testid=run-results] tbody tr')]
                   .map(r => [r.dataset.metric, ...[...r.children].map(c => c.textContent)]);",
                json!([]),
            )
            .map_err(|e| e.to_string())?;
        Ok(rows
            .as_array()
            .is_some_and(|r| !r.is_empty())
            .then_some(rows))
    })
    .unwrap();
    let loss = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[0] == "loss")
        .unwrap_or_else(|| panic!("{rows}"));
    let (base, trained): (f64, f64) = (
        loss[2].as_str().unwrap().parse().unwrap(),
        loss[3].as_str().unwrap().parse().unwrap(),
    );
    assert!(trained < base, "{rows}");
    let better = browser
        .execute(
            "return document.querySelector('[data-metric=loss] [data-testid=result-change]').dataset.better;",
            json!([]),
        )
        .unwrap();
    assert_eq!(better, "better", "{rows}");
    let samples = browser
        .execute(
            "return document.querySelectorAll('[data-testid=run-sample]').length;",
            json!([]),
        )
        .unwrap();
    assert_eq!(samples, 3, "the eval set's first three prompts");
}

/// The job page lists what the trainer pushed, and its links download the files.
fn artifacts_listed(browser: &Browser) {
    let links = onramp_tests::wait::until("the job's artifacts", WAIT, || {
        let links = browser
            .execute(
                "return [...document.querySelectorAll('[data-testid=artifact-link]')]
                   .map(a => [a.textContent, a.getAttribute('href')]);",
                json!([]),
            )
            .map_err(|e| e.to_string())?;
        let has = links.as_array().is_some_and(|l| {
            l.iter()
                .any(|p| p[0] == "adapter/adapter_model.safetensors")
        });
        Ok(has.then_some(links))
    })
    .unwrap();
    let href = links
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p[0] == "adapter/adapter_model.safetensors")
        .map(|p| p[1].clone())
        .unwrap();
    let got = browser
        .execute(
            "return fetch(arguments[0]).then(r => r.arrayBuffer().then(b => [r.status, b.byteLength]));",
            json!([href]),
        )
        .unwrap();
    assert_eq!(got[0], 200, "{got} for {href}");
    assert!(got[1].as_u64().unwrap() > 1000, "{got}");
    loads_with_peft(browser, links.as_array().unwrap());
}

/// The adapter and the merged model, downloaded through the job page's links: the adapter loads
/// with PEFT on the base it was trained from and generates what the merged model generates (its
/// logits those of the merged model, and not the base's).
fn loads_with_peft(browser: &Browser, links: &[serde_json::Value]) {
    let dir = onramp_tests::stack::unique_temp_dir("peft-check");
    for (name, href) in links
        .iter()
        .filter_map(|p| Some((p[0].as_str()?, p[1].as_str()?)))
    {
        if !(name.starts_with("adapter/") || name.starts_with("merged/")) {
            continue;
        }
        let b64 = browser
            .execute(
                "return fetch(arguments[0]).then(r => r.blob()).then(b => new Promise(ok => {
                   const f = new FileReader();
                   f.onload = () => ok(f.result.split(',')[1] || '');
                   f.readAsDataURL(b);
                 }));",
                json!([href]),
            )
            .unwrap();
        let bytes = base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            b64.as_str().unwrap(),
        )
        .unwrap();
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
    }
    let python = std::env::var("ONRAMP_PYTHON").expect("ONRAMP_PYTHON (cargo xtask test sets it)");
    let root = onramp_tests::paths::repo_root();
    let out = std::process::Command::new(python)
        .arg(root.join("tests/scripts/peft_check.py"))
        .args([dir.join("adapter"), dir.join("merged")])
        .env("PYTHONPATH", root.join("trainer/src"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "peft_check.py: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let got: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert!(got["vs_merged"].as_f64().unwrap() < 1e-4, "{got}");
    assert!(got["vs_base"].as_f64().unwrap() > 1e-3, "{got}");
    assert_eq!(got["peft"], got["merged"], "{got}");
    assert_eq!(got["peft"].as_array().map(Vec::len), Some(12), "{got}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Signs up in the app and verifies the email elsewhere: the trial credit arrives.
pub(crate) fn sign_up_with_credit(stack: &Stack, browser: &Browser) {
    browser.goto(&format!("{}/account", stack.url)).unwrap();
    click(browser, "[data-testid=auth-switch]");
    let email = unique_email("app-lora");
    submit_auth(browser, &email, "correct horse battery");
    browser
        .wait_for("[data-testid=verify-note]", WAIT)
        .expect("signed up");
    verify_elsewhere(stack, &email);
    click(browser, "[data-testid=nav-plan]");
    click(browser, "[data-testid=nav-account]");
    browser
        .wait_for("[data-testid=balance][data-fen=\"10000\"]", WAIT)
        .expect("the trial credit");
}

/// Puts the LoRA spec named `name` at learning rate `lr` (its adapter merged when `merge`) into the Plan page's editor, chooses
/// the runner and presses Submit; the job's id from its page.
fn submit_lora(browser: &Browser, name: &str, lr: &str, merge: bool) -> String {
    click(browser, "[data-testid=nav-plan]");
    let mut spec =
        onramp_tests::specs::lora_cpu(name, "auto").replace("lr = 1e-2", &format!("lr = {lr}"));
    if merge {
        spec.push_str("\n[output]\nmerge_adapter = true\n");
    }
    set_value(browser, "[data-testid=plan-toml]", &spec);
    let named = format!("name = \"{name}\"");
    onramp_tests::wait::until("the spec in the editor", WAIT, || {
        Ok(spec_text(browser).contains(&named).then_some(()))
    })
    .unwrap();
    set_value(browser, "[data-testid=submit-backend]", "runner");
    onramp_tests::wait::until("the runner in the spec", WAIT, || {
        Ok(spec_text(browser)
            .contains("backend = \"runner\"")
            .then_some(()))
    })
    .unwrap();
    click(browser, "[data-testid=submit-job]:not([disabled])");
    let page = browser.wait_for("[data-testid=page-job]", WAIT).unwrap();
    browser.attribute(&page, "data-id").unwrap().unwrap()
}
