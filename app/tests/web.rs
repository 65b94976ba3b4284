//! Component tests in headless Chromium: the app mounts, and the health panel shows a clear error
//! when no edge answers (the test server has no `/api/health`).
#![cfg(target_arch = "wasm32")]

use leptos::prelude::*;
use wasm_bindgen::JsCast;
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
