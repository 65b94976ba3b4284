//! Component tests in headless Chromium: the app mounts, the health panel shows a clear error
//! when no edge answers (the test server has no `/api/health`), the language switch, a share
//! link from the future, and the Plan page's diagnostics.
#![cfg(target_arch = "wasm32")]
// wasm-bindgen-test functions are not `#[test]`s to clippy, so its in-test unwrap allowance
// does not reach them; a panic is how these tests fail.
#![allow(clippy::unwrap_used)]

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

async fn until(mut check: impl FnMut() -> bool) -> bool {
    for _ in 0..200 {
        if check() {
            return true;
        }
        gloo_timers::future::TimeoutFuture::new(25).await;
    }
    false
}

#[wasm_bindgen_test]
async fn health_panel_reports_a_missing_edge() {
    let document = web_sys::window().unwrap().document().unwrap();
    let root = document.create_element("div").unwrap();
    document.body().unwrap().append_child(&root).unwrap();
    let _handle = leptos::mount::mount_to(root.clone().unchecked_into(), app::App);
    let q = |sel: &str| root.query_selector(sel).unwrap();
    assert!(q("[data-testid=health]").is_some());
    assert!(
        until(|| q("[data-testid=health-error]").is_some()).await,
        "no error shown: {}",
        root.inner_html()
    );
    let text = q("[data-testid=health-error]")
        .unwrap()
        .text_content()
        .unwrap();
    assert!(text.contains("HTTP 404"), "{text}");
}

fn mount_app() -> web_sys::Element {
    let document = web_sys::window().unwrap().document().unwrap();
    let root = document.create_element("div").unwrap();
    document.body().unwrap().append_child(&root).unwrap();
    // Each test mounts its own copy; leaking the handle keeps it alive for the test's duration.
    std::mem::forget(leptos::mount::mount_to(
        root.clone().unchecked_into(),
        app::App,
    ));
    root
}

fn click(root: &web_sys::Element, sel: &str) {
    root.query_selector(sel)
        .unwrap()
        .unwrap_or_else(|| panic!("{sel} not found"))
        .unchecked_into::<web_sys::HtmlElement>()
        .click();
}

fn text(root: &web_sys::Element, sel: &str) -> String {
    root.query_selector(sel)
        .unwrap()
        .and_then(|e| e.text_content())
        .unwrap_or_default()
}

#[wasm_bindgen_test]
async fn the_language_switch_translates_and_is_remembered() {
    let root = mount_app();
    let before = text(&root, "[data-testid=nav-try]");
    assert!(before == "Try" || before == "试用", "{before}");
    click(&root, "[data-testid=lang-switch]");
    let want = if before == "Try" { "试用" } else { "Try" };
    assert!(
        until(|| text(&root, "[data-testid=nav-try]") == want).await,
        "{}",
        root.inner_html()
    );
    let stored = web_sys::window()
        .unwrap()
        .local_storage()
        .unwrap()
        .unwrap()
        .get_item("onramp.lang")
        .unwrap();
    assert_eq!(
        stored.as_deref(),
        Some(if want == "Try" { "en" } else { "zh-CN" })
    );
    let lang = web_sys::window()
        .unwrap()
        .document()
        .unwrap()
        .document_element()
        .unwrap()
        .get_attribute("lang");
    assert_eq!(lang, stored);
}

#[wasm_bindgen_test]
async fn a_link_from_a_newer_onramp_loads_nothing_and_says_so() {
    let w = web_sys::window().unwrap();
    let history = w.history().unwrap();
    history
        .replace_state_with_url(&JsValue::NULL, "", Some("#9.AAAA"))
        .unwrap();
    let root = mount_app();
    history
        .replace_state_with_url(&JsValue::NULL, "", Some(&w.location().pathname().unwrap()))
        .unwrap();
    assert!(
        until(|| root
            .query_selector("[data-testid=share-error]")
            .unwrap()
            .is_some())
        .await,
        "{}",
        root.inner_html()
    );
    let banner = root
        .query_selector("[data-testid=share-error]")
        .unwrap()
        .unwrap();
    assert_eq!(
        banner.get_attribute("data-kind").as_deref(),
        Some("UnknownVersion(\"9\")")
    );
}

#[wasm_bindgen_test]
async fn the_plan_page_points_at_the_broken_line_and_clears_when_fixed() {
    let document = web_sys::window().unwrap().document().unwrap();
    let root = document.create_element("div").unwrap();
    document.body().unwrap().append_child(&root).unwrap();
    std::mem::forget(leptos::mount::mount_to(
        root.clone().unchecked_into(),
        app::pages::plan::PlanPage,
    ));
    let area: web_sys::HtmlTextAreaElement = root
        .query_selector("[data-testid=plan-toml]")
        .unwrap()
        .unwrap()
        .unchecked_into();
    // The first template is the starting spec; its text arrives with the first render.
    assert!(
        until(|| area.value().contains("micro_batch = 2")).await,
        "{:?}",
        area.value()
    );
    let good = area.value();
    let set = |v: &str| {
        area.set_value(v);
        area.dispatch_event(&web_sys::Event::new("input").unwrap())
            .unwrap();
    };
    set(&good.replace("micro_batch = 2", "micro_batch = \"two\""));
    let line = good
        .lines()
        .position(|l| l.starts_with("micro_batch"))
        .unwrap()
        + 1;
    let sel = format!("[data-testid=diag][data-severity=error][data-line=\"{line}\"]");
    assert!(
        until(|| root.query_selector(&sel).unwrap().is_some()).await,
        "no error at line {line}: {}",
        text(&root, "[data-testid=plan-diagnostics]")
    );
    set(&good);
    assert!(
        until(|| root
            .query_selector("[data-testid=diag][data-severity=error]")
            .unwrap()
            .is_none())
        .await,
        "{}",
        text(&root, "[data-testid=plan-diagnostics]")
    );
}

/// The loss chart's geometry in the browser's wasm, over random series and ones from the ends of
/// the float range (a job once reported a loss of 0 and then 2.5e-323, which panicked the app
/// on every page showing it): always drawn inside its frame, never a panic.
#[wasm_bindgen_test]
fn the_loss_chart_survives_any_finite_series() {
    use app::api_wire::MetricPoint;
    use app::plot::{Frame, loss_chart};
    let point = |step: u64, loss: f64, val_loss: Option<f64>| MetricPoint {
        step,
        loss,
        val_loss,
        lr: None,
        tokens_per_s: None,
        elapsed_s: 0.0,
        grad_norm: None,
        epoch: None,
        peak_mem_bytes: None,
    };
    // xorshift64*: the same series on every run, no dependency.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let extremes = [
        0.0,
        2.5e-323,
        f64::MIN_POSITIVE,
        1e-310,
        f64::MAX,
        -f64::MAX,
        1e300,
        -1.0,
        3.0,
    ];
    let f = Frame::STANDARD;
    for round in 0..400 {
        let len = (next() % 12) as usize;
        let series: Vec<MetricPoint> = (0..len)
            .map(|i| {
                let mut pick = || match next() % 3 {
                    0 => extremes[(next() % extremes.len() as u64) as usize],
                    1 => f64::from_bits(next()),
                    _ => (next() % 10_000) as f64 / 1000.0,
                };
                let loss = pick();
                let val = pick();
                let step = if round % 5 == 0 { next() } else { i as u64 };
                point(step, loss, val.is_finite().then_some(val))
            })
            .collect();
        let Some(c) = loss_chart(&series, f) else {
            continue;
        };
        for path in [&c.train, &c.val] {
            for xy in path.split(['M', 'L']).filter(|s| !s.trim().is_empty()) {
                let mut it = xy.split_whitespace().map(|n| n.parse::<f64>().unwrap());
                let (x, y) = (it.next().unwrap(), it.next().unwrap());
                assert!(
                    (f.left..=f.right).contains(&x) && (f.top..=f.bottom).contains(&y),
                    "round {round}: ({x}, {y}) outside the frame for {series:?}"
                );
            }
        }
        assert!(
            c.x_ticks.len() <= 50 && c.y_ticks.len() <= 50,
            "round {round}"
        );
    }
}
