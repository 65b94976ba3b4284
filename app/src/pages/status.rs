//! The Status page, also the app's footer: whether the edge answers, with its version.

use crate::health::Health;
use crate::i18n::Key;
use crate::state::use_i18n;
use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// Fetches `GET /api/health` from the edge that served the page.
pub async fn fetch_health() -> Result<Health, String> {
    let window = web_sys::window().ok_or("no window")?;
    let resp = JsFuture::from(window.fetch_with_str("/api/health"))
        .await
        .map_err(|e| format!("request failed: {e:?}"))?;
    let resp: web_sys::Response = resp.dyn_into().map_err(|_| "not a Response")?;
    let text = JsFuture::from(resp.text().map_err(|e| format!("{e:?}"))?)
        .await
        .map_err(|e| format!("reading body failed: {e:?}"))?
        .as_string()
        .unwrap_or_default();
    serde_json::from_str(&text)
        .map_err(|e| format!("HTTP {}: unexpected answer: {e}", resp.status()))
}

/// Shows whether the edge answers, with its version (nothing about its insides).
#[component]
pub fn HealthPanel() -> impl IntoView {
    let i = use_i18n();
    let health = LocalResource::new(fetch_health);
    view! {
        <section class="health" data-testid="health">
            <h2>{move || i.t(Key::StackTitle)}</h2>
            <Suspense fallback=move || view! { <p data-testid="health-loading">{move || i.t(Key::CheckingEdge)}</p> }>
                {move || health.get().map(|result| match result {
                    Ok(h) => {
                        let state = if h.ok { "ok" } else { "failed" };
                        view! {
                            <p data-testid="health-result" data-state=state>
                                {move || crate::health::summary(&h, i.lang.get())}
                            </p>
                        }.into_any()
                    }
                    Err(e) => view! {
                        <p data-testid="health-error" class="error">
                            {move || format!("{}: {e}", i.t(Key::ServiceTrouble))}
                        </p>
                    }.into_any(),
                })}
            </Suspense>
        </section>
    }
}
