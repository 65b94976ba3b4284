//! THE onboarding journey in one headless Chromium, against the whole stack (wrangler dev and the
//! local runner): the first token on `/` (stories260K), a plan on `/plan` from the tiny-train
//! template, sign-up, redeeming a promotion code, submitting the job to the local runner, and its
//! page reaching running and then succeeded with a loss curve drawn — then the trained checkpoint
//! opened in the playground and the run saved as a shareable experiment. Prints how many seconds
//! each step took.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use crate::app_support::{
    WAIT, click, set_value, spec_text, submit_auth, text_content, verify_elsewhere,
};
use onramp_tests::api::{Client, unique_email};
use onramp_tests::stack::{Stack, StackOptions, random_hex};
use onramp_tests::webdriver::Browser;
use serde_json::json;
use std::time::{Duration, Instant};

/// How long the tiny-train job may take on a busy 2-core machine.
const JOB_WAIT: Duration = Duration::from_secs(300);

/// Prints one step's time and starts the next.
fn step(name: &str, started: &mut Instant) {
    println!(
        "onboarding: {name} {:.1} s",
        started.elapsed().as_secs_f64()
    );
    *started = Instant::now();
}

fn attribute(browser: &Browser, css: &str, name: &str) -> Option<String> {
    let el = browser.find(css).ok().flatten()?;
    browser.attribute(&el, name).ok().flatten()
}

/// The job page's state, or the page's text when the job ends otherwise than expected.
fn wait_job_state(browser: &Browser, stack: &Stack, wanted: &[&str], timeout: Duration) -> String {
    onramp_tests::wait::until("the job's state", timeout, || {
        let state = attribute(browser, "[data-testid=page-job]", "data-state").unwrap_or_default();
        if wanted.contains(&state.as_str()) {
            return Ok(Some(state));
        }
        if ["failed", "cancelled", "timed_out", "lost"].contains(&state.as_str()) {
            panic!(
                "the job ended {state}: {}\n--- runner log ---\n{}",
                text_content(browser, "[data-testid=page-job]"),
                stack
                    .runner
                    .as_ref()
                    .map(|r| r.log_tail(3000))
                    .unwrap_or_default()
            );
        }
        Err(format!("state so far {state:?}"))
    })
    .unwrap()
}

/// Step 7: the job saved as an experiment, whose link shows the same curve and no email to a
/// stranger, and which its owner alone takes back and publishes again; ends on the job's page.
fn save_and_share(browser: &Browser, stack: &Stack, email: &str, job_id: &str) {
    click(browser, "[data-testid=job-save]:not([disabled])");
    let saved = browser.wait_for("[data-testid=job-saved]", WAIT).unwrap();
    let exp_id = browser.attribute(&saved, "data-id").unwrap().unwrap();
    let anonymous = Browser::start(Some("zh-CN")).expect("a second browser");
    anonymous
        .goto(&format!("{}/e/{exp_id}", stack.url))
        .unwrap();
    anonymous
        .wait_for(
            "[data-testid=experiment-result][data-state=succeeded]",
            WAIT,
        )
        .expect("the shared page shows the result");
    anonymous
        .wait_for("[data-testid=loss-chart][data-train-points=\"30\"]", WAIT)
        .expect("the shared page draws the loss curve");
    let shared = text_content(&anonymous, "[data-testid=page-experiment]");
    assert!(
        anonymous
            .find("[data-testid=experiment-owner]")
            .unwrap()
            .is_none(),
        "only its owner sees the controls"
    );
    assert!(!shared.contains(email) && !shared.contains('@'), "{shared}");
    assert!(
        shared.contains("已成功"),
        "the page speaks Chinese: {shared}"
    );
    anonymous
        .goto(&format!("{}/e/ffffffff", stack.url))
        .unwrap();
    anonymous
        .wait_for("[data-testid=experiment-unknown]", WAIT)
        .expect("an unknown id says so");
    // Its owner alone may take the link back, and publish it again.
    let exp_url = format!("{}/e/{exp_id}", stack.url);
    browser.goto(&exp_url).unwrap();
    click(
        browser,
        "[data-testid=experiment-owner][data-published=true] [data-testid=experiment-publish]",
    );
    browser
        .wait_for("[data-testid=experiment-owner][data-published=false]", WAIT)
        .expect("the link is taken back");
    anonymous.goto(&exp_url).unwrap();
    anonymous
        .wait_for("[data-testid=experiment-unknown]", WAIT)
        .expect("a link taken back shows nothing");
    click(browser, "[data-testid=experiment-publish]:not([disabled])");
    browser
        .wait_for("[data-testid=experiment-owner][data-published=true]", WAIT)
        .expect("published again");
    browser
        .goto(&format!("{}/jobs/{job_id}", stack.url))
        .unwrap();
    browser
        .wait_for("[data-testid=job-playground]", WAIT)
        .unwrap();
}

#[test]
#[ignore = "needs the built stack and ../shared: run through `cargo xtask test`"]
fn first_token_plan_sign_up_redeem_submit_and_watch_the_loss_curve() {
    let stack = Stack::start(StackOptions::for_test("app-onboarding")).expect("stack starts");
    let browser = Browser::start(Some("en")).expect("chromium starts");
    let total = Instant::now();
    let mut t = Instant::now();

    // 1. The first token on `/`.
    browser.goto(&format!("{}/", stack.url)).unwrap();
    browser
        .wait_for("[data-testid=try][data-state=ready]", WAIT)
        .expect("the model loads");
    click(&browser, "[data-testid=try-generate]:not([disabled])");
    browser
        .wait_for_text("[data-testid=try-ttft]", WAIT, |t| t.ends_with(" ms"))
        .expect("a first token");
    step("first token", &mut t);

    // 2. A plan from the tiny-train template, made short so the job is quick on 2 cores.
    click(&browser, "[data-testid=nav-plan]");
    click(&browser, "[data-testid=template-tiny-train-stories260k]");
    onramp_tests::wait::until("the template in the editor", WAIT, || {
        Ok(spec_text(&browser)
            .contains("task = \"tiny-train\"")
            .then_some(()))
    })
    .unwrap();
    let short = spec_text(&browser)
        .replace("steps = 200", "steps = 30")
        .replace("seq_len = 256", "seq_len = 64")
        .replace("micro_batch = 8", "micro_batch = 4");
    set_value(&browser, "[data-testid=plan-toml]", &short);
    browser
        .wait_for("[data-testid=plan-fits][data-fits=true]", WAIT)
        .unwrap();
    let hold: i64 = browser
        .wait_for("[data-testid=submit-hold]", WAIT)
        .and_then(|el| browser.attribute(&el, "data-fen"))
        .unwrap()
        .and_then(|f| f.parse().ok())
        .expect("the hold is shown before submitting");
    step("plan", &mut t);

    // 3. Sign up.
    click(&browser, "[data-testid=nav-account]");
    click(&browser, "[data-testid=auth-switch]");
    let email = unique_email("onboarding");
    submit_auth(&browser, &email, "correct horse battery");
    browser
        .wait_for_text("[data-testid=session-email]", WAIT, |t| t.contains(&email))
        .expect("signed in");
    // The link of the verification mail, opened on another device: the trial credit.
    verify_elsewhere(&stack, &email);
    step("sign up", &mut t);

    // 4. Redeem a promotion code made with the admin token.
    let code = format!("ONBOARD-{}", random_hex(3)).to_uppercase();
    let amount = hold.max(1000) * 2;
    let made = Client::with_bearer(&stack.url, &stack.admin_token).post(
        "/api/admin/promo-codes",
        &json!({"code": code, "amount_fen": amount, "max_redemptions": 1}),
    );
    assert_eq!(made.status, 201, "{:?}", made.json);
    set_value(&browser, "[data-testid=redeem-code]", &code);
    click(&browser, "[data-testid=redeem-submit]");
    browser
        .wait_for(
            &format!("[data-testid=balance][data-fen=\"{}\"]", 1000 + amount),
            WAIT,
        )
        .expect("the balance includes the code");
    step("redeem", &mut t);

    // 5. Submit to the local runner.
    click(&browser, "[data-testid=nav-plan]");
    browser
        .wait_for(
            "[data-testid=submit-backend] option[data-name=local]:checked",
            WAIT,
        )
        .expect("the local runner is offered and chosen");
    click(&browser, "[data-testid=submit-job]:not([disabled])");
    let page = browser
        .wait_for("[data-testid=page-job]", WAIT)
        .unwrap_or_else(|e| {
            panic!(
                "{e}: {}",
                text_content(&browser, "[data-testid=submit-panel]")
            )
        });
    let job_id = browser.attribute(&page, "data-id").unwrap().unwrap();
    assert!(
        browser
            .current_url()
            .unwrap()
            .ends_with(&format!("/jobs/{job_id}"))
    );
    browser
        .wait_for(
            &format!("[data-testid=job-hold][data-fen=\"{hold}\"]"),
            WAIT,
        )
        .expect("the job page shows the hold that was announced");
    step("submit", &mut t);

    // 6. The job runs and its loss curve is drawn live.
    let state = wait_job_state(&browser, &stack, &["running", "succeeded"], JOB_WAIT);
    step(&format!("job {state}"), &mut t);
    let points = onramp_tests::wait::until("a loss curve", JOB_WAIT, || {
        let n = attribute(&browser, "[data-testid=loss-chart]", "data-train-points")
            .and_then(|n| n.parse::<u32>().ok())
            .unwrap_or(0);
        Ok((n > 0).then_some(n))
    })
    .unwrap();
    let d = attribute(&browser, "[data-testid=loss-train]", "d").unwrap_or_default();
    assert!(d.starts_with('M'), "the train loss is a path: {d:?}");
    step(&format!("loss curve ({points} points)"), &mut t);
    wait_job_state(&browser, &stack, &["succeeded"], JOB_WAIT);
    browser
        .wait_for("[data-testid=loss-chart][data-train-points=\"30\"]", WAIT)
        .expect("every step's loss is drawn once the job ends");
    browser
        .wait_for_text("[data-testid=job-logs]", WAIT, |t| t.contains("step"))
        .expect("the log is shown");
    let charged = text_content(&browser, "[data-testid=job-charged]");
    assert!(charged.starts_with('¥'), "{charged:?}");
    step("job succeeded", &mut t);

    // 7. Saved as an experiment: a share link whose page shows the same curve and no email.
    save_and_share(&browser, &stack, &email, &job_id);
    step("saved and shared", &mut t);

    // 8. The trained checkpoint in the playground.
    click(&browser, "[data-testid=job-playground]");
    browser
        .wait_for_text("[data-testid=try-loaded]", WAIT, |t| {
            t.contains(&job_id[..8])
        })
        .expect("the playground loads the job's checkpoint");
    click(&browser, "[data-testid=try-generate]:not([disabled])");
    browser
        .wait_for("[data-testid=try-tokens][data-done=finished]", WAIT)
        .expect("the trained model generates");
    step("checkpoint in the playground", &mut t);

    // 9. The same link opened by a full page load: the page starts the default model's worker
    // before its own wasm runs, and the checkpoint asked for by the link must still win.
    browser
        .goto(&format!("{}/?model={job_id}", stack.url))
        .unwrap();
    browser
        .wait_for_text("[data-testid=try-loaded]", WAIT, |t| {
            t.contains(&job_id[..8])
        })
        .expect("a fresh load of /?model= loads the job's checkpoint");
    click(&browser, "[data-testid=try-generate]:not([disabled])");
    browser
        .wait_for("[data-testid=try-tokens][data-done=finished]", WAIT)
        .expect("the trained model generates after a fresh load");
    step("checkpoint from a fresh load of its link", &mut t);
    println!("onboarding: total {:.1} s", total.elapsed().as_secs_f64());
}
