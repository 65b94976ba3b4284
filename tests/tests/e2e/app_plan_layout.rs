//! The Plan page at a laptop's width and its explanations: at 1280 pixels the TOML editor gets
//! the width (no template line is cut) with a summary of the figures in sight, and each figure
//! opens its formula and assumptions — the text `onramp plan --explain` prints — in English and
//! Chinese.
#![allow(clippy::unwrap_used)] // Helpers outside #[test] fns may panic: that is the test failing.

use crate::app_support::{WAIT, click, spec_text, start, text_content};
use onramp_tests::webdriver::Browser;
use serde_json::json;

/// Loads a template into the editor and waits until the editor shows it, its schema line
/// pointing at this edge's schema.
fn load_template(browser: &Browser, url: &str, t: &jobspec::templates::Template) {
    click(browser, &format!("[data-testid=template-{}]", t.id));
    let want = t.toml_for(url);
    assert!(want.starts_with(&format!("#:schema {url}/schema/jobspec.schema.json\n")));
    onramp_tests::wait::until("the template in the editor", WAIT, || {
        Ok((spec_text(browser) == want).then_some(()))
    })
    .unwrap();
}

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn at_1280_pixels_the_editor_has_the_width_and_no_template_line_is_cut() {
    let (stack, browser) = start("app-plan-layout", Some("en"));
    browser.set_window_size(1280, 800).unwrap();
    browser.goto(&format!("{}/plan", stack.url)).unwrap();
    browser.wait_for("[data-testid=plan-toml]", WAIT).unwrap();
    for t in jobspec::templates() {
        load_template(&browser, &stack.url, t);
        let m = browser
            .execute(
                "const t = document.querySelector('[data-testid=plan-toml]');
                 const e = document.querySelector('[data-testid=plan-estimates]');
                 const s = document.querySelector('[data-testid=plan-summary]');
                 return [innerWidth, t.clientWidth, t.scrollWidth, e.getBoundingClientRect().width,
                         innerHeight, s.getBoundingClientRect().bottom];",
                json!([]),
            )
            .unwrap();
        let [window, client, scroll, figures, height, summary] =
            [0, 1, 2, 3, 4, 5].map(|k| m[k].as_f64().expect("a number"));
        assert!(
            (1200.0..=1280.0).contains(&window),
            "the page is {window} px wide"
        );
        assert!(
            client >= 600.0,
            "{}: the editor is {client} px wide at 1280",
            t.id
        );
        assert!(
            scroll <= client,
            "{}: the longest line needs {scroll} px, the editor shows {client}",
            t.id
        );
        assert!(figures >= 400.0, "{}: the figures get {figures} px", t.id);
        // The full figures are below the editor; their summary stays in sight above it.
        assert!(
            summary <= height,
            "{}: the summary ends at {summary} px of {height}",
            t.id
        );
        let line = text_content(&browser, "[data-testid=plan-summary]");
        assert!(
            line.starts_with("Fits") && line.contains('¥') && line.contains("GiB"),
            "{}: {line:?}",
            t.id
        );
    }
}

#[test]
#[ignore = "needs the built stack: run through `cargo xtask test`"]
fn each_figure_opens_its_formula_and_assumptions_in_both_languages() {
    let (stack, browser) = start("app-plan-explain", Some("en"));
    browser.goto(&format!("{}/plan", stack.url)).unwrap();
    let t = jobspec::templates::template("7b-sft-zero3-8xa100").unwrap();
    load_template(&browser, &stack.url, t);
    let explain = jobspec::plan_toml(t.toml).estimate.unwrap().explain;
    for x in &explain {
        let sel = format!("#explain-{} [data-testid=explain-formula]", x.figure);
        onramp_tests::wait::until("the formula", WAIT, || {
            Ok((text_content(&browser, &sel) == x.formula.en).then_some(()))
        })
        .unwrap_or_else(|e| panic!("{e}: {:?}", text_content(&browser, &sel)));
        assert_eq!(
            text_content(
                &browser,
                &format!("#explain-{} [data-testid=explain-assumptions]", x.figure)
            ),
            x.assumptions.get(jobspec::Lang::En)
        );
    }
    // The figure's own button opens its explanation and takes the focus there.
    for (figure, summary) in [("time", "Time"), ("activations", "Activations")] {
        assert!(
            browser
                .find(&format!("#explain-{figure}[open]"))
                .unwrap()
                .is_none()
        );
        click(&browser, &format!("[data-testid=explain-link-{figure}]"));
        browser
            .wait_for(&format!("#explain-{figure}[open]"), WAIT)
            .expect("the explanation opens");
        let focused = browser
            .execute(
                "return document.activeElement.closest('details')?.id + ':' + document.activeElement.textContent;",
                json!([]),
            )
            .unwrap();
        assert_eq!(focused, json!(format!("explain-{figure}:{summary}")));
    }
    let time = explain.iter().find(|x| x.figure == "time").unwrap();
    assert!(time.formula.en.contains("FLOPs"), "{}", time.formula.en);

    // In Chinese: the formula, the assumptions and the names translated; what was open stays
    // open.
    click(&browser, "[data-testid=lang-switch]");
    browser
        .wait_for_text("#explain-time[open] summary", WAIT, |s| s == "时间")
        .expect("the explanation is translated and stays open");
    assert_eq!(
        text_content(&browser, "#explain-time [data-testid=explain-assumptions]"),
        time.assumptions.get(jobspec::Lang::Zh)
    );
    assert_eq!(
        text_content(&browser, "#explain-time [data-testid=explain-formula]"),
        time.formula.zh
    );
    assert!(time.formula.zh.contains("秒"), "{}", time.formula.zh);
}
