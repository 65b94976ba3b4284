//! The components of the app.

use crate::i18n::Key;
use crate::router::{Link, Router};
use crate::state::{I18n, Shared};
use crate::worker_client::ModelWorker;
use leptos::prelude::*;

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
            <crate::pages::status::HealthPanel/>
        </footer>
    }
}
