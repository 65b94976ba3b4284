//! The Plan page end to end: a broken edit is pointed at its line with the right code and fixing
//! it clears the problem; a spec short of data.tokens still shows its memory; a suggestion
//! button turns a spec that does not fit into one that does.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use crate::app_support::{WAIT, click, set_value, spec_text, start, text_content};

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn a_broken_value_is_shown_at_its_line_and_fixing_it_clears_it() {
    let (stack, browser) = start("app-plan-diag", Some("en"));
    browser.goto(&format!("{}/plan", stack.url)).unwrap();
    browser
        .wait_for("[data-testid=plan-no-problems], [data-testid=diag]", WAIT)
        .unwrap();
    let good = spec_text(&browser);
    let line = good
        .lines()
        .position(|l| l.starts_with("micro_batch = 2"))
        .expect("the first template sets micro_batch")
        + 1;
    set_value(
        &browser,
        "[data-testid=plan-toml]",
        &good.replace("micro_batch = 2", "micro_batch = \"two\""),
    );
    let sel = format!("[data-testid=diag][data-severity=error][data-line=\"{line}\"]");
    let diag = browser
        .wait_for(&sel, WAIT)
        .expect("the error is shown at its line");
    assert_eq!(
        browser.attribute(&diag, "data-code").unwrap().as_deref(),
        Some("wrong-type")
    );
    assert_eq!(
        browser.attribute(&diag, "data-column").unwrap().as_deref(),
        Some("15"),
        "the value starts at column 15"
    );
    // The gutter marks the line too.
    browser
        .wait_for(
            &format!("[data-testid=plan-gutter] .bad[data-line=\"{line}\"]"),
            WAIT,
        )
        .unwrap();

    set_value(&browser, "[data-testid=plan-toml]", &good);
    onramp_tests::wait::until("the error to clear", WAIT, || {
        Ok(browser
            .find("[data-testid=diag][data-severity=error]")?
            .is_none()
            .then_some(()))
    })
    .unwrap();
    assert!(text_content(&browser, "[data-testid=plan-fits]").contains("Fits"));

    // Training by epochs without data.tokens: that error, and the memory verdict all the same.
    let no_tokens: String = good
        .lines()
        .filter(|l| !l.starts_with("tokens ="))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(
        no_tokens, good,
        "the first template trains by epochs over data.tokens"
    );
    set_value(&browser, "[data-testid=plan-toml]", &no_tokens);
    browser
        .wait_for("[data-testid=diag][data-code=missing-key]", WAIT)
        .unwrap();
    browser
        .wait_for("[data-testid=plan-needs-tokens]", WAIT)
        .expect("time and cost wait for the tokens");
    assert!(text_content(&browser, "[data-testid=plan-fits]").contains("Fits"));
}

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn a_suggestion_makes_a_spec_that_does_not_fit_fit() {
    let (stack, browser) = start("app-plan-fit", Some("en"));
    browser.goto(&format!("{}/plan", stack.url)).unwrap();
    browser
        .wait_for("[data-testid=plan-fits][data-fits=true]", WAIT)
        .unwrap();
    // Through the form view: a micro-batch far too large for one RTX 4090.
    set_value(&browser, "[data-testid=form-micro-batch]", "64");
    browser
        .wait_for("[data-testid=plan-fits][data-fits=false]", WAIT)
        .expect("micro_batch 64 does not fit");
    assert!(
        spec_text(&browser).contains("micro_batch = 64"),
        "the form edits the TOML"
    );
    let diag = browser
        .wait_for("[data-testid=diag][data-code=does-not-fit]", WAIT)
        .unwrap();
    assert!(browser.text(&diag).unwrap().contains("does not fit"));
    click(&browser, "[data-testid=suggestion-apply][data-fits=true]");
    browser
        .wait_for("[data-testid=plan-fits][data-fits=true]", WAIT)
        .expect("the suggestion makes it fit");
    assert!(
        browser
            .find("[data-testid=diag][data-code=does-not-fit]")
            .unwrap()
            .is_none()
    );
}
