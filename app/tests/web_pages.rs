//! Component tests of the account and job pages' pieces in headless Chromium: the loss curve
//! draws both series with labelled axes from metric points, and says so when there are none.
#![cfg(target_arch = "wasm32")]
// wasm-bindgen-test functions are not `#[test]`s to clippy, so its in-test unwrap allowance
// does not reach them; a panic is how these tests fail.
#![allow(clippy::unwrap_used)]

use app::api_wire::MetricPoint;
use app::pages::loss_chart::LossChart;
use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn mount(points: Vec<MetricPoint>) -> web_sys::Element {
    let document = web_sys::window().unwrap().document().unwrap();
    let root = document.create_element("div").unwrap();
    document.body().unwrap().append_child(&root).unwrap();
    // Each test mounts its own copy; leaking the handle keeps it alive for the test's duration.
    std::mem::forget(leptos::mount::mount_to(
        root.clone().unchecked_into(),
        move || view! { <LossChart points=Signal::stored(points.clone())/> },
    ));
    root
}

fn point(step: u64, loss: f64, val_loss: Option<f64>) -> MetricPoint {
    MetricPoint {
        step,
        loss,
        val_loss,
        lr: None,
        tokens_per_s: None,
        elapsed_s: step as f64,
        grad_norm: None,
        epoch: None,
        peak_mem_bytes: None,
    }
}

#[wasm_bindgen_test]
fn the_loss_curve_draws_both_series_with_labelled_axes() {
    let points: Vec<MetricPoint> = (1..=20)
        .map(|s| {
            point(
                s,
                5.0 - s as f64 * 0.1,
                (s % 5 == 0).then_some(5.2 - s as f64 * 0.1),
            )
        })
        .collect();
    let root = mount(points);
    let svg = root
        .query_selector("[data-testid=loss-chart]")
        .unwrap()
        .unwrap();
    assert_eq!(
        svg.get_attribute("data-train-points").as_deref(),
        Some("20")
    );
    assert_eq!(svg.get_attribute("data-val-points").as_deref(), Some("4"));
    let d = |sel: &str| {
        root.query_selector(sel)
            .unwrap()
            .unwrap()
            .get_attribute("d")
            .unwrap()
    };
    assert_eq!(d("[data-testid=loss-train]").matches('L').count(), 19);
    assert_eq!(d("[data-testid=loss-val]").matches('L').count(), 3);
    // The axis titles and the tick labels are the SVG's text.
    let text = svg.text_content().unwrap();
    assert!(text.contains("step") && text.contains("loss"), "{text}");
    assert!(text.contains("20"), "the step axis reaches 20: {text}");
}

#[wasm_bindgen_test]
fn no_points_is_said_in_words() {
    let root = mount(Vec::new());
    assert!(
        root.query_selector("[data-testid=loss-chart]")
            .unwrap()
            .is_none()
    );
    assert!(
        root.query_selector("[data-testid=loss-chart-empty]")
            .unwrap()
            .is_some()
    );
}
