//! The components of the app.

use crate::health::Health;
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

/// The whole app.
#[component]
pub fn App() -> impl IntoView {
    view! {
        <header class="top">
            <h1>"Onramp"</h1>
        </header>
        <main>
            <HealthPanel/>
        </main>
    }
}

/// Shows the edge's health: version, bindings and backends.
#[component]
pub fn HealthPanel() -> impl IntoView {
    let health = LocalResource::new(fetch_health);
    view! {
        <section class="health" data-testid="health">
            <h2>"Stack"</h2>
            <Suspense fallback=|| view! { <p data-testid="health-loading">"Checking the edge…"</p> }>
                {move || health.get().map(|result| match result {
                    Ok(h) => {
                        let state = if h.ok { "ok" } else { "failed" };
                        view! {
                            <ul data-testid="health-result" data-state=state>
                                {h.lines().into_iter().map(|l| view! { <li>{l}</li> }).collect_view()}
                            </ul>
                        }.into_any()
                    }
                    Err(e) => view! { <p data-testid="health-error" class="error">{e}</p> }.into_any(),
                })}
            </Suspense>
        </section>
    }
}
