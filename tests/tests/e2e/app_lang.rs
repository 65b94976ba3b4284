//! The language: picked from the browser's, switchable, and remembered across visits.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use crate::app_support::{WAIT, click, start};

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn chinese_browsers_get_chinese_and_the_switch_is_remembered() {
    let (stack, browser) = start("app-lang", Some("zh-CN"));
    browser.goto(&format!("{}/plan", stack.url)).unwrap();
    browser
        .wait_for_text("[data-testid=nav-try]", WAIT, |t| t == "试用")
        .expect("a zh-CN browser gets Chinese");
    browser
        .wait_for_text("[data-testid=plan] h1", WAIT, |t| t == "规划训练作业")
        .unwrap();
    click(&browser, "[data-testid=lang-switch]");
    browser
        .wait_for_text("[data-testid=plan] h1", WAIT, |t| {
            t == "Plan a training job"
        })
        .expect("the switch translates the page");
    browser.goto(&format!("{}/", stack.url)).unwrap();
    browser
        .wait_for_text("[data-testid=nav-try]", WAIT, |t| t == "Try")
        .expect("the choice is remembered");
}
