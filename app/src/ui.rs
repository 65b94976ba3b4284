//! The components of the app.

use crate::health::Health;
use crate::i18n::Key;
use crate::router::{Link, Router};
use crate::state::{I18n, Shared, use_i18n};
use crate::worker_client::ModelWorker;
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

/// The whole app: header with navigation and the language switch, the routed page, and the
/// stack's health in the footer.
#[component]
pub fn App() -> impl IntoView {
    let i = I18n::install();
    Shared::install();
    ModelWorker::install();
    crate::share_ui::restore_from_location();
    crate::session::Session::install();
    let router = Router::install();
    crate::router::follow_route_with_title_and_focus(router, i);
    view! {
        <a class="skip" href="#main">{move || i.t(Key::AppName)}</a>
        <header class="top">
            <span class="brand">{move || i.t(Key::AppName)}</span>
            <nav aria-label=move || i.t(Key::NavMain)>
                <Link href="/" testid="nav-try">{move || i.t(Key::NavTry)}</Link>
                <Link href="/plan" testid="nav-plan">{move || i.t(Key::NavPlan)}</Link>
                <Link href="/jobs" testid="nav-jobs">{move || i.t(Key::NavJobs)}</Link>
                <Link href="/account" testid="nav-account">{move || i.t(Key::NavAccount)}</Link>
            </nav>
            <crate::session::SessionNav/>
            <button
                type="button"
                class="lang"
                data-testid="lang-switch"
                // The visible text is the accessible name (it names the other language, in that
                // language, so `lang` tells a screen reader how to say it); the title explains.
                lang=move || if i.lang.get() == crate::i18n::Lang::En { "zh-CN" } else { "en" }
                title=move || i.t(Key::Language)
                on:click=move |_| i.toggle()
            >
                {move || i.t(Key::SwitchLanguage)}
            </button>
        </header>
        <crate::share_ui::ShareBanner/>
        <main id="main" tabindex="-1">
            {move || crate::pages::page(router.route())}
        </main>
        <footer class="bottom">
            <HealthPanel/>
        </footer>
    }
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
                    Err(e) => view! { <p data-testid="health-error" class="error">{e}</p> }.into_any(),
                })}
            </Suspense>
        </section>
    }
}
